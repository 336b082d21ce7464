"""torch.func.vmap (and grad, jvp, per-sample gradients) of a frozen optimum-quanto model raises: the linear of a
quantized weight runs through an autograd.Function (WeightQBytesLinearFunction, QuantizedLinearFunction) that
defines forward(ctx, ...) without setup_context.

The correct behaviour: vmap over the batch computes what the model computes on the whole batch.
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/tensor/function.py
"""
import torch
from optimum.quanto import freeze, qint8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qint8)
freeze(model)
x = torch.randn(2, 8)
batched = torch.func.vmap(model)(x)  # raises RuntimeError
assert torch.allclose(batched, model(x))
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
