"""torch.compile graph-breaks in a sinabs IAF (or LIF) layer's forward: "Unsupported python_type() call", so
fullgraph=True compilation fails.

functional.lif_forward_single reads `spike_fn.required_states` from the spike function, a torch.autograd.Function
class (MultiSpike) passed down from the layer, and iterates over it; dynamo cannot take python_type() of that
attribute ("GetAttrVariable(AutogradFunctionVariable(), required_states) does not implement python_type()") and
breaks the graph there (dynamo's own hint calls it "likely a Dynamo bug"). With fullgraph=True, torch.compile(layer)
raises torch._dynamo.exc.Unsupported at the same place, whatever the backend (aot_eager, inductor, dynamic=True).
The correct behaviour: the forward compiles into one graph (no graph break), as a per-step loop of tensor ops does.
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/functional/lif.py
"""
import torch
import torch._dynamo
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF
from torch._dynamo.utils import counters

torch.manual_seed(0)
layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
            surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5))
x = torch.rand(2, 4, 3)  # (batch, time, neurons)
counters.clear()
torch.compile(layer, backend="aot_eager")(x)
breaks = {line.strip() for reason in list(counters["graph_break"]) + list(counters["unimplemented"])
          for line in reason.splitlines()[:1] + [ln for ln in reason.splitlines() if "debug context" in ln]}
assert not breaks, f"torch.compile graph breaks in the layer: {' | '.join(sorted(breaks))}"
# expect: Unsupported python_type() call
