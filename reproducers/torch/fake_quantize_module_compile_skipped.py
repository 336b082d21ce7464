"""torch.compile graph-breaks on torch.ao.quantization.FakeQuantize: dynamo's trace rules mark FakeQuantize.forward
as skipped ("Attempted to inline function marked as skipped"), so fullgraph=True compilation fails.

torch._dynamo skips torch.ao.quantization's files, so every compiled model holding a FakeQuantize (a QAT-prepared
model) breaks its graph there. The correct behaviour: the module compiles into one graph (its observer's buffer
updates are ordinary tensor ops). https://github.com/pytorch/pytorch/blob/main/torch/_dynamo/trace_rules.py
"""
import torch
import torch._dynamo
from torch._dynamo.utils import counters
from torch.ao.quantization import FakeQuantize

x = torch.tensor([0.3, -1.2, 2.6, 4.0])
counters.clear()
torch.compile(FakeQuantize(), backend="aot_eager")(x)
breaks = {reason.splitlines()[0].strip() for reason in list(counters["graph_break"])}
assert not breaks, f"torch.compile graph breaks in FakeQuantize: {' | '.join(sorted(breaks))}"
# expect: Attempted to inline function marked as skipped
