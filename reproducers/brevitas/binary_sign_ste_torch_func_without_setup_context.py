"""torch.func (vmap, grad, jvp, per-sample grad) fails on brevitas' binary quantizers: no setup_context.

brevitas' straight-through autograd.Functions (brevitas/ops/autograd_ste_ops.py: BinarySignSteFn, and
InplaceTensorClampSteFn of the binary weight quantizer) are written in the old style, forward(ctx, ...) without a
setup_context staticmethod, which torch.func requires ("In order to use an autograd.Function with functorch
transforms ... it must override the setup_context staticmethod"). The correct behaviour: each torch.func transform
gives what the eager module gives (vmap equals a loop over samples, grad and per-sample grad equal backward, jvp
agrees with reverse mode). https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/ops/autograd_ste_ops.py
"""
# expect: it must override the setup_context staticmethod
import torch
from torch.func import functional_call, grad, jvp, vmap
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear
from brevitas.quant import SignedBinaryActPerTensorConst, SignedBinaryWeightPerTensorConst

torch.manual_seed(0)
cases = [  # (module, batched input)
    (QuantIdentity(act_quant=SignedBinaryActPerTensorConst), torch.randn(4, 6)),
    (QuantLinear(6, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0),
     torch.randn(4, 6)),
    (QuantConv2d(2, 3, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0),
     torch.randn(4, 2, 5, 5)),
]


def backward(module, x, cot):
    """What eager autograd says: d<cot, module(x)>/dx and /dparams."""
    x = x.clone().requires_grad_(True)
    module.zero_grad()
    (module(x) * cot).sum().backward()
    return x.grad, {n: p.grad.clone() for n, p in module.named_parameters()}


for module, x in cases:
    name = type(module).__name__
    y = module(x)
    cot = torch.randn_like(y)
    # vmap over the batch equals a loop over samples
    yv = vmap(lambda xi: module(xi.unsqueeze(0)).squeeze(0))(x)  # raises
    assert torch.equal(yv, y), f"{name}: vmap differs from the eager module"
    # grad equals backward
    gx = grad(lambda xx: (module(xx) * cot).sum())(x)
    assert torch.allclose(gx, backward(module, x, cot)[0]), f"{name}: torch.func.grad differs from backward"
    # jvp agrees with reverse mode: <cot, J u> == <J^T cot, u>
    u = torch.randn_like(x)
    _, ju = jvp(module, (x,), (u,))
    assert torch.allclose((cot * ju).sum(), (backward(module, x, cot)[0] * u).sum(), atol=1e-5), \
        f"{name}: jvp disagrees with reverse mode"
    # per-sample parameter gradients equal one backward per sample
    params = {n: p.detach() for n, p in module.named_parameters()}
    if params:
        def loss(p, xi, ci):
            return (functional_call(module, p, (xi.unsqueeze(0),)).squeeze(0) * ci).sum()

        per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, cot)
        for i in range(x.shape[0]):
            expected = backward(module, x[i:i + 1], cot[i:i + 1])[1]
            for n in params:
                assert torch.allclose(per_sample[n][i], expected[n], atol=1e-5), \
                    f"{name}: per-sample gradient of {n} differs from backward"
print("torch.func transforms work through the binary quantizers")
