"""torch.compile graph-breaks on torch.ao.nn.qat.Linear: dynamo's trace rules mark the weight fake quantizer's
FusedMovingAvgObsFakeQuantize.forward as skipped ("Attempted to inline function marked as skipped"), so
fullgraph=True compilation fails.

torch._dynamo skips torch.ao.quantization's files, so every compiled QAT layer breaks its graph at its weight fake
quantizer. The correct behaviour: the layer compiles into one graph (the fused observer is one aten op).
https://github.com/pytorch/pytorch/blob/v2.13.0/torch/_dynamo/trace_rules.py
"""
import torch
from torch._dynamo.utils import counters
from torch.ao.nn.qat import Linear as QATLinear
from torch.ao.quantization import get_default_qat_qconfig

linear = torch.nn.Linear(4, 3)
linear.qconfig = get_default_qat_qconfig("x86")
layer = QATLinear.from_float(linear)
counters.clear()
torch.compile(layer, backend="aot_eager")(torch.randn(2, 4))
breaks = {reason.splitlines()[0].strip() for reason in list(counters["graph_break"])}
assert not breaks, f"torch.compile graph breaks in the QAT layer: {' | '.join(sorted(breaks))}"
# expect: Attempted to inline function marked as skipped
