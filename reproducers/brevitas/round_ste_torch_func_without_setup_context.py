"""torch.func (vmap, grad, jvp) cannot run brevitas' integer/ternary quantizers: STE Functions lack setup_context.

brevitas' straight-through autograd.Functions (brevitas/ops/autograd_ste_ops.py: RoundSteFn, the rounding of the
integer quantizers behind QuantIdentity and QuantReLU, and AbsBinarySignGradFn, which the Int8ActPerTensorFloat and
QuantReLU scalings call before it) are written in the old style, forward(ctx, ...) without a setup_context
staticmethod, which torch.func requires ("In order to use an autograd.Function with functorch transforms ... it
must override the setup_context staticmethod"). The correct behaviour: vmap equals a loop over samples,
torch.func.grad equals backward, jvp agrees with reverse mode.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/ops/autograd_ste_ops.py
"""
# expect: it must override the setup_context staticmethod
import torch
from torch.func import grad, jvp, vmap
from brevitas.nn import QuantIdentity, QuantReLU
from brevitas.quant import Int8ActPerTensorFloat, SignedTernaryActPerTensorConst

torch.manual_seed(0)
modules = [  # constant scales: ternary {-1, 0, 1} * 0.5; 3-bit signed, scale 0.5; 3-bit unsigned, scale 0.5
    QuantIdentity(act_quant=SignedTernaryActPerTensorConst, max_val=0.5, min_val=-0.5),
    QuantIdentity(act_quant=Int8ActPerTensorFloat, bit_width=3, scaling_impl_type="const", max_val=2.0,
                  min_val=-2.0),
    QuantReLU(bit_width=3, scaling_impl_type="const", max_val=3.5),
]
x = torch.randn(4, 6)


def backward(module, x, cot):
    """What eager autograd says: d<cot, module(x)>/dx."""
    x = x.clone().requires_grad_(True)
    (module(x) * cot).sum().backward()
    return x.grad


for module in modules:
    name = type(module).__name__
    y = module(x)
    cot = torch.randn_like(y)
    # vmap over the batch equals a loop over samples
    yv = vmap(lambda xi: module(xi.unsqueeze(0)).squeeze(0))(x)  # raises
    assert torch.equal(yv, y), f"{name}: vmap differs from the eager module"
    # grad equals backward
    gx = grad(lambda xx: (module(xx) * cot).sum())(x)
    assert torch.allclose(gx, backward(module, x, cot)), f"{name}: torch.func.grad differs from backward"
    # jvp agrees with reverse mode: <cot, J u> == <J^T cot, u>
    u = torch.randn_like(x)
    _, ju = jvp(module, (x,), (u,))
    assert torch.allclose((cot * ju).sum(), (backward(module, x, cot) * u).sum(), atol=1e-5), \
        f"{name}: jvp disagrees with reverse mode"
print("torch.func transforms work through the rounding quantizers")
