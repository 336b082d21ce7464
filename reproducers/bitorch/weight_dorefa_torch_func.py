"""torch.func (vmap, grad, jvp) fails on WeightDoReFa: WeightDoReFaFunction is an autograd.Function without setup_context.

bitorch's WeightDoReFaFunction is written in the old style, forward(ctx, input, maximum_bit_value), with no separate
setup_context staticmethod; torch.func transforms only accept autograd.Functions that have one
(https://pytorch.org/docs/stable/notes/extending.func.html). The correct behaviour: vmap equals a loop over the
batch, torch.func.grad and jvp equal autograd's reverse mode (WeightDoReFa's straight-through identity gradient).
Reported with tracebacks in https://github.com/hpi-xnor/bitorch/pull/4
"""
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
import torch
from bitorch.quantizations import WeightDoReFa

torch.manual_seed(0)
x = torch.randn(3, 4)
quantize = WeightDoReFa(bits=2)

# vmap over the batch == a loop over the samples (each sample is quantized with its own maximum)
y = torch.func.vmap(quantize)(x)  # raises here
assert torch.equal(y, torch.stack([quantize(xi) for xi in x])), "vmap differs from the loop"

# torch.func.grad and jvp == reverse-mode autograd
xr = x.clone().requires_grad_()
quantize(xr).sum().backward()
assert torch.equal(torch.func.grad(lambda t: quantize(t).sum())(x), xr.grad), "torch.func.grad differs from backward"
u = torch.randn_like(x)
_, ju = torch.func.jvp(quantize, (x,), (u,))
assert torch.allclose(ju.sum(), (xr.grad * u).sum()), "jvp disagrees with reverse mode"
print("torch.func works through WeightDoReFaFunction")
