"""torch.func (vmap, grad, jvp, per-sample gradients) fails on QActivation/QLinear: autograd.Function lacks setup_context.

bitorch's GradientCancellation (applied by QActivation with a positive gradient_cancellation_threshold, and so
inside QLinear, QConv2d and the models) is a torch.autograd.Function written in the old style,
forward(ctx, input, threshold), with no separate setup_context staticmethod; torch.func transforms only accept
autograd.Functions that have one (https://pytorch.org/docs/stable/notes/extending.func.html). bitorch's quantization
Functions (SignFunction, ...) are written the same way. The correct behaviour: vmap equals a loop over the batch,
torch.func.grad and jvp equal autograd's reverse mode, per-sample gradients equal one backward per sample.
Reported with tracebacks in https://github.com/hpi-xnor/bitorch/pull/4
"""
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
import torch
from bitorch.layers import QActivation, QLinear
from bitorch.quantizations import Sign

torch.manual_seed(0)
x = torch.randn(3, 4)
act = QActivation(Sign(), gradient_cancellation_threshold=1.0)

# vmap over the batch == a loop over the samples
y = torch.func.vmap(act)(x)  # raises here
assert torch.equal(y, torch.stack([act(xi) for xi in x])), "vmap differs from the loop"

# torch.func.grad and jvp == reverse-mode autograd
xr = x.clone().requires_grad_()
act(xr).sum().backward()
assert torch.equal(torch.func.grad(lambda t: act(t).sum())(x), xr.grad), "torch.func.grad differs from backward"
u = torch.randn_like(x)
_, ju = torch.func.jvp(act, (x,), (u,))
assert torch.allclose((ju).sum(), (xr.grad * u).sum()), "jvp disagrees with reverse mode"

# per-sample parameter gradients of QLinear (vmap of grad of functional_call) == one backward per sample
layer = QLinear(4, 2, bias=True, input_quantization="sign", weight_quantization="sign",
                gradient_cancellation_threshold=1.0)
params = {n: p.detach() for n, p in layer.named_parameters()}


def loss(p, xi):
    return torch.func.functional_call(layer, p, (xi.unsqueeze(0),)).sum()


per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, x)
for i in range(len(x)):
    layer.weight.grad = None
    layer(x[i:i + 1]).sum().backward()
    assert torch.allclose(per_sample["weight"][i], layer.weight.grad), "per-sample gradient differs from the loop"
print("torch.func works through GradientCancellation")
