"""torch.compile breaks the graph on SteHeaviside: SteHeavisideFunction.backward calls print() on every backward pass.

SteHeavisideFunction.backward prints "over threshold: <count>" on each call (a debugging leftover: it also spams
stdout during training). dynamo traces an autograd.Function's backward when it captures the forward and cannot
trace print, so torch.compile(..., fullgraph=True) raises and without fullgraph the graph is broken there. The
correct behaviour: the layer compiles into one graph (no graph break).
https://github.com/hpi-xnor/bitorch/blob/v0.4.1/bitorch/quantizations/ste_heaviside.py
"""
# expect: Dynamo does not know how to trace builtin operator `print`
import torch
import torch._dynamo
from bitorch.layers import QActivation
from bitorch.quantizations import SteHeaviside

torch.manual_seed(0)
layer = QActivation(SteHeaviside(), gradient_cancellation_threshold=0.0)
x = torch.randn(4, 5, requires_grad=True)
explanation = torch._dynamo.explain(layer)(x)  # dynamo's own account of the graph breaks
reasons = [" ".join(r.reason.split()) for r in explanation.break_reasons]  # each on one line
assert explanation.graph_break_count == 0, f"{explanation.graph_break_count} graph break(s): {reasons[0][:170]}"
print("SteHeaviside compiles into one graph")
