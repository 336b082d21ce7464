"""torch.jit.trace of a binary-weight QuantLinear/QuantConv2d raises: the weight's clamp runs in place, with out=.

While tracing, brevitas' tensor_clamp_ste_ (brevitas/function/ops_ste.py) returns the plain in-place
tensor_clamp_ instead of InplaceTensorClampSteFn, so SignedBinaryWeightPerTensorConst runs
torch.min(..., out=weight) on the layer's weight Parameter, which requires grad; autograd refuses ("minimum():
functions with out=... arguments don't support automatic differentiation"). The correct behaviour: the layer
traces, and the traced module computes what the layer computes.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/function/ops_ste.py
"""
# expect: functions with out=... arguments don't support automatic differentiation
import torch
from brevitas.nn import QuantConv2d, QuantLinear
from brevitas.quant import SignedBinaryWeightPerTensorConst

torch.manual_seed(0)
cases = [
    (QuantLinear(6, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0),
     torch.randn(4, 6)),
    (QuantConv2d(2, 3, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0),
     torch.randn(2, 2, 5, 5)),
]
for layer, x in cases:
    traced = torch.jit.trace(layer, (x,), check_trace=False)  # raises
    x2 = torch.randn_like(x)
    assert torch.equal(traced(x2), layer(x2)), f"{type(layer).__name__}: the traced layer computes otherwise"
print("binary-weight layers trace")
