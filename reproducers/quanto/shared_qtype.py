"""Two optimum-quanto models quantized separately hold the same mutable object as their weight_qtype: changing one
model's qtype changes how the other quantizes its weight.

quantize() stores the module-level qtype instance (qint8, a plain, mutable dataclass) on every QLinear, and the
weight quantization reads its qmax on each call. The correct behaviour: a model's settings belong to it (an
immutable qtype, as torch.dtype is, or a copy per module).
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/tensor/qtype.py
"""
import torch
from optimum.quanto import qint8, quantize

torch.manual_seed(0)
first, second = torch.nn.Sequential(torch.nn.Linear(8, 3)), torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(first, weights=qint8)
quantize(second, weights=qint8)
x = torch.randn(2, 8)
before = second(x)
first[0].weight_qtype.qmax = 7.0  # a change to the first model only
assert torch.equal(second(x), before), "the second model's output changed with the first model's qtype"
# expect: AssertionError: the second model's output changed with the first model's qtype
