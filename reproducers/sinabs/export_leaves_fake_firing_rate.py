"""torch.export.export of a sinabs IAF (or LIF) layer leaves a FakeTensor in the layer's `firing_rate` attribute.

LIF.forward ends with `self.firing_rate = spikes.mean()`, a plain tensor attribute rather than a registered buffer;
export traces the forward with fake tensors, so the attribute keeps the FakeTensor of the trace and the layer is no
longer what it was (torch warns: "The tensor attribute self.firing_rate was assigned during export. Such attributes
must be registered as buffers using the `register_buffer` API"). The correct behaviour: exporting leaves the
module's attributes as they were (firing_rate a real tensor, or a buffer export can track).
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/lif.py
"""
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF

torch.manual_seed(0)
layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
            surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5))
x = torch.rand(2, 4, 3)  # (batch, time, neurons)
program = torch.export.export(layer, (x,))
kind = type(getattr(layer, "firing_rate", None)).__name__
assert kind in ("NoneType", "Tensor"), f"export left a {kind} in layer.firing_rate"
# expect: AssertionError: export left a FakeTensor in layer.firing_rate
