"""torch.func (vmap, grad, jvp) cannot run brevitas' quant layers as constructed by default.

The default quantizers (Int8ActPerTensorFloat, Uint8ActPerTensorFloat, Int8WeightPerTensorFloat) clamp their
scale with AbsBinarySignGradFn and round with RoundSteFn (brevitas/ops/autograd_ste_ops.py), autograd.Functions
written forward(ctx, ...) without the setup_context staticmethod that torch.func requires ("it must override the
setup_context staticmethod"). The correct behaviour: vmap equals a loop over samples, torch.func.grad equals
backward, jvp agrees with reverse mode.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/ops/autograd_ste_ops.py
"""
# expect: it must override the setup_context staticmethod
import torch
from torch.func import grad, jvp, vmap
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear, QuantReLU

torch.manual_seed(0)
x, image = torch.randn(2, 4), torch.randn(2, 1, 6, 6)
layers = [(QuantIdentity(), x), (QuantReLU(), x), (QuantLinear(4, 3), x), (QuantConv2d(1, 2, 3), image)]
for layer, x in layers:
    name = type(layer).__name__
    y = layer(x)
    cot = torch.randn_like(y)
    yv = vmap(lambda xi: layer(xi.unsqueeze(0)).squeeze(0))(x)  # raises
    assert torch.allclose(yv, y), f"{name}: vmap differs from the eager layer"
    xr = x.clone().requires_grad_(True)
    (layer(xr) * cot).sum().backward()
    gx = grad(lambda xx: (layer(xx) * cot).sum())(x)
    assert torch.allclose(gx, xr.grad), f"{name}: torch.func.grad differs from backward"
    u = torch.randn_like(x)
    _, ju = jvp(layer, (x,), (u,))
    assert torch.allclose((cot * ju).sum(), (xr.grad * u).sum(), atol=1e-5), f"{name}: jvp disagrees with backward"
print("torch.func transforms work through the default quant layers")
