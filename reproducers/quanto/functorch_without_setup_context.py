"""torch.func.vmap (and grad, jvp, per-sample gradients) of an optimum-quanto quantized model raises: its
autograd.Functions (the weight quantizers, QuantizedLinearFunction) define forward(ctx, ...) without setup_context.

torch.func transforms need autograd.Functions written with a separate setup_context staticmethod. The correct
behaviour: vmap over the batch computes what the model computes on the whole batch.
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/tensor/function.py
"""
import torch
from optimum.quanto import qint8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qint8)
x = torch.randn(2, 8)
batched = torch.func.vmap(model)(x)  # raises RuntimeError
assert torch.allclose(batched, model(x))
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
