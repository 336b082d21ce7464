""".double() / .half() / .to(dtype) of a frozen optimum-quanto model raises ValueError: "The dtype of a weights
Tensor cannot be changed".

A frozen weight (WeightQBytesTensor, WeightQBitsTensor) refuses any dtype conversion in its __torch_dispatch__, so
nn.Module.double() and half(), which convert every floating-point parameter, raise. The correct behaviour: the
model converts (its scales and output follow the new dtype), or quanto documents the refusal.
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/tensor/weights/qbytes.py
"""
import torch
from optimum.quanto import freeze, qint8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qint8)
freeze(model)
model.double()  # raises ValueError
assert model(torch.randn(2, 8, dtype=torch.float64)).dtype == torch.float64
# expect: ValueError: The dtype of a weights Tensor cannot be changed
