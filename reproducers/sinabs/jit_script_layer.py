"""torch.jit.script cannot compile a sinabs IAF (or LIF) layer.

TorchScript compiles a module's properties along with its forward, and stops at the first: sinabs' `_param_dict`
property (sinabs/layers/iaf.py, lif.py) is annotated `-> dict`, a type TorchScript does not know. Past the
properties, the forward calls the spike function, a torch.autograd.Function class held in an attribute, which
TorchScript does not support either. The correct behaviour: torch.jit.script(layer) returns a ScriptModule that
computes what the layer computes (or sinabs documents that its layers are not scriptable).
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/lif.py
"""
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF

torch.manual_seed(0)
layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
            surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5))
scripted = torch.jit.script(layer)
x = torch.rand(2, 4, 3)  # (batch, time, neurons)
assert torch.equal(scripted(x), layer(x)), "the scripted layer computes something else"
# expect: param_dict.pop("tau_mem")
