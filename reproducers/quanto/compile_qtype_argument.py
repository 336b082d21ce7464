"""torch.compile(fullgraph=True) of an optimum-quanto model quantized but not frozen raises: each call quantizes the
float weight through an autograd.Function that takes the qtype object as an argument, which dynamo cannot put into
a graph ("Failed to convert args/kwargs to proxy ... Missing as_proxy() implementation").

The correct behaviour: the model compiles into one graph and computes what it computes eagerly (a frozen model,
whose weight is already quantized, does).
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/tensor/weights/qbytes.py
"""
import torch
from optimum.quanto import qint8, quantize
from torch._dynamo.utils import counters

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qint8)
x = torch.randn(2, 8)
counters.clear()
torch.compile(model, backend="aot_eager")(x)  # without fullgraph=True a break splits the graph, with it it raises
breaks = {reason.splitlines()[0].strip() for reason in list(counters["graph_break"])}
assert not breaks, f"torch.compile graph breaks in the quantized model: {' | '.join(sorted(breaks))}"
# expect: Failed to convert args/kwargs to proxy
