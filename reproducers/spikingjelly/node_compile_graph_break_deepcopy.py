"""torch.compile graph-breaks in a spikingjelly neuron's reset(): MemoryModule.reset() calls copy.deepcopy on the
reset value, which dynamo of torch 2.11 does not trace (torch 2.13 does).

MemoryModule.reset() re-initialises a state that still holds its Python-float reset value (v_reset=0.0, a fresh
node) with `self._memories[key] = copy.deepcopy(rv)`; torch 2.11's dynamo breaks the graph there ("copy.deepcopy()"),
so torch.compile(fullgraph=True) of a module that resets its node and runs it fails. Seen on CUDA with torch 2.11.
The correct behaviour: reset() and forward compile into one graph (no graph break).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/base.py#L735
"""
# requires: cuda
import torch
import torch._dynamo
from spikingjelly.activation_based import neuron, surrogate
from torch._dynamo.utils import counters


class NodeOverTime(torch.nn.Module):
    """Runs the node over x of shape (T, B, N) from its reset state."""

    def __init__(self, node):
        super().__init__()
        self.node = node

    def forward(self, x):
        self.node.reset()
        return self.node(x)


torch.manual_seed(0)
node = neuron.IFNode(v_threshold=0.25, v_reset=0.0, surrogate_function=surrogate.Sigmoid(alpha=4.0),
                     detach_reset=False, step_mode="m")
module = NodeOverTime(node).cuda()
x = torch.rand(4, 2, 3, device="cuda")
counters.clear()
torch.compile(module, backend="eager")(x)
breaks = [reason.splitlines()[0] for reason in list(counters["graph_break"]) + list(counters["unimplemented"])]
assert not breaks, f"torch.compile graph breaks in the node: {breaks}"
# expect: copy.deepcopy()
