"""torch.compile (torch 2.11, CUDA) graph-breaks in a sinabs IAF (or LIF) layer's forward with "Data-dependent
branching", so fullgraph=True compilation fails.

functional.lif_forward_single branches on `if spike_fn:`, the truth value of the spike function, a
torch.autograd.Function class (MultiSpike) passed down from the layer. torch 2.11's dynamo cannot evaluate that
branch ("attempted to jump with LazyVariableTracker(realized: AutogradFunctionVariable())") and reports it as gb0170
"Data-dependent branching", before the python_type() break that torch 2.13 reports further on (see
compile_graph_break_python_type.py). Seen on CUDA with torch 2.11 (the H200 run). The correct behaviour: the forward
compiles into one graph (no graph break).
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/functional/lif.py
"""
# requires: cuda
import torch
import torch._dynamo
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF
from torch._dynamo.utils import counters

torch.manual_seed(0)
layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
            surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5)).cuda()
x = torch.rand(2, 4, 3, device="cuda")  # (batch, time, neurons)
counters.clear()
torch.compile(layer, backend="aot_eager")(x)
breaks = {reason.splitlines()[0].strip() for reason in list(counters["graph_break"]) + list(counters["unimplemented"])}
assert not breaks, f"torch.compile graph breaks in the layer: {' | '.join(sorted(breaks))}"
# expect: Data-dependent branching
