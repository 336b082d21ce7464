"""torch.jit.trace of a brevitas activation quantizer loses its straight-through gradient: the traced module's is 0.

While torch.jit traces, brevitas' *_ste functions (brevitas/function/ops_ste.py: round_ste, binary_sign_ste, ...)
return the plain op (torch.round, binary_sign) instead of the STE autograd.Function, a choice made for ONNX export.
The traced module then differentiates the plain op, whose gradient is zero almost everywhere, where the eager
module passes the straight-through gradient. The correct behaviour: the traced module's input gradient equals the
eager module's. https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/function/ops_ste.py
"""
# expect: the traced module's input gradient differs from the eager one
import torch
from brevitas.nn import QuantIdentity, QuantReLU
from brevitas.quant import Int8ActPerTensorFloat, SignedBinaryActPerTensorConst, SignedTernaryActPerTensorConst

torch.manual_seed(0)
modules = [
    QuantIdentity(act_quant=SignedBinaryActPerTensorConst),
    QuantIdentity(act_quant=SignedTernaryActPerTensorConst, max_val=0.5, min_val=-0.5),
    QuantIdentity(act_quant=Int8ActPerTensorFloat, bit_width=3, scaling_impl_type="const", max_val=2.0,
                  min_val=-2.0),
    QuantReLU(bit_width=3, scaling_impl_type="const", max_val=3.5),
]


def input_grad(module, x, cot):
    x = x.clone().requires_grad_(True)
    y = module(x)
    if not y.requires_grad:  # the output is not connected to the input at all: its gradient is 0
        return torch.zeros_like(x)
    (y * cot).sum().backward()
    return x.grad


x = torch.randn(4, 6)
cot = torch.randn(4, 6)
for module in modules:
    traced = torch.jit.trace(module, (torch.randn(4, 6),), check_trace=False)
    assert torch.equal(traced(x), module(x)), f"{type(module).__name__}: the traced forward differs"
    eager_grad, traced_grad = input_grad(module, x, cot), input_grad(traced, x, cot)
    assert torch.allclose(traced_grad, eager_grad), \
        f"{type(module).__name__}: the traced module's input gradient differs from the eager one " \
        f"(traced: {traced_grad.abs().sum():.3f} in total, eager: {eager_grad.abs().sum():.3f})"
print("traced quantizers keep their straight-through gradients")
