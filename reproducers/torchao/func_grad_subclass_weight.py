"""torch.func.grad through a layer quantized by torchao's quantize_ raises NotImplementedError: the quantized weight's
dispatch has no rule for the op functorch's grad transform sends it (aten.t for Int8Tensor and
IntxUnpackedToInt8Tensor, aten.addmm for Float8Tensor).

Eager autograd works (the linear is handled in ``__torch_function__``); under torch.func.grad the call reaches the
subclass's ``__torch_dispatch__`` as aten ops it does not implement. The correct behaviour: the gradient with respect
to the input equals eager autograd's. https://github.com/pytorch/ao/blob/v0.18.0/torchao/utils.py
"""
import torch
from torchao import quantization

x = torch.randn(2, 4)
for config in ("Int8WeightOnlyConfig", "IntxWeightOnlyConfig", "Float8WeightOnlyConfig"):
    linear = torch.nn.Linear(4, 3)
    quantization.quantize_(linear, getattr(quantization, config)())
    params = {name: p.detach() for name, p in linear.named_parameters()}
    loss = lambda p, x: torch.func.functional_call(linear, p, (x,)).sum()
    got = torch.func.grad(loss, argnums=1)(params, x)  # raises NotImplementedError
    eager = x.clone().requires_grad_()
    linear(eager).sum().backward()
    assert torch.allclose(got, eager.grad)
# expect: NotImplementedError: Int8Tensor dispatch: attempting to run unimplemented operator/function
