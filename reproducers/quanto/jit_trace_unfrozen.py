"""torch.jit.trace of an optimum-quanto model quantized but not frozen raises ValueError: "The dtype of a weights
Tensor cannot be changed", from the weight quantized on the fly during tracing.

The correct behaviour: the model traces and the trace computes what it computes eagerly (a frozen one does).
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/tensor/weights/qbytes.py
"""
import torch
from optimum.quanto import qint8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qint8)
x = torch.randn(2, 8)
traced = torch.jit.trace(model, (x,))  # raises ValueError
assert torch.allclose(traced(x), model(x))
# expect: ValueError: The dtype of a weights Tensor cannot be changed
