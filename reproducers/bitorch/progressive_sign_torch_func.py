"""torch.func (vmap, grad, jvp) fails on bitorch's default progressive_sign activation: its Function lacks setup_context.

QActivation("progressive_sign") as constructed by default runs ProgressiveSignFunctionTrain
(bitorch/quantizations/progressive_sign.py), a torch.autograd.Function written in the old style, forward(ctx, ...),
with no separate setup_context staticmethod, which torch.func transforms require
(https://pytorch.org/docs/stable/notes/extending.func.html). The correct behaviour: vmap equals a loop over the batch,
torch.func.grad and jvp equal autograd's reverse mode.
https://github.com/hpi-xnor/bitorch/blob/main/bitorch/quantizations/progressive_sign.py
"""
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
import torch
from bitorch.layers import QActivation

torch.manual_seed(0)
x = torch.randn(3, 4)
act = QActivation("progressive_sign")

y = torch.func.vmap(act)(x)  # raises here
assert torch.equal(y, torch.stack([act(xi) for xi in x])), "vmap differs from the loop"
xr = x.clone().requires_grad_()
act(xr).sum().backward()
assert torch.equal(torch.func.grad(lambda t: act(t).sum())(x), xr.grad), "torch.func.grad differs from backward"
u = torch.randn_like(x)
_, ju = torch.func.jvp(act, (x,), (u,))
assert torch.allclose(ju.sum(), (xr.grad * u).sum()), "jvp disagrees with reverse mode"
print("torch.func transforms run through progressive_sign")
