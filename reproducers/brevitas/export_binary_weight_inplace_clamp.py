"""A torch.export'ed binary-weight QuantLinear/QuantConv2d raises when called: the weight's clamp runs with out=.

SignedBinaryWeightPerTensorConst clamps the weight in place (InplaceTensorClampSteFn, brevitas/function/ops_ste.py;
tensor_clamp_ is torch.min(..., out=x)). torch.export records that in-place op in the graph
(aten.min.out(weight, ..., out=weight)), and calling the exported module then runs it on the weight Parameter,
which requires grad: autograd refuses ("minimum(): functions with out=... arguments don't support automatic
differentiation"), as under torch.jit.trace. The correct behaviour: the exported module computes what the layer
computes. https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/function/ops_ste.py
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
    exported = torch.export.export(layer, (x,)).module()
    x2 = torch.randn_like(x)
    y = exported(x2)  # raises
    assert torch.equal(y, layer(x2)), f"{type(layer).__name__}: the exported layer computes otherwise"
print("exported binary-weight layers run")
