"""A forward in eval mode changes a binary-weight QuantLinear/QuantConv2d's weight Parameter: it is clamped in place.

SignedBinaryWeightPerTensorConst clamps the weight to [-scale, scale] in place on every forward
(InplaceTensorClampSte, brevitas/function/ops_ste.py; added on purpose, brevitas issue 282: BinaryConnect's clipping of
the latent weights during training), and it does so in eval mode too, so inference on a model whose weights were
loaded from elsewhere rewrites them. The correct behaviour: a forward in eval mode leaves the parameters as they are.
https://github.com/Xilinx/brevitas/issues/282
"""
# expect: AssertionError: a forward in eval mode changed the weight
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
    with torch.no_grad():
        layer.weight.mul_(3.0)  # weights past the scale of 1, as a float checkpoint holds them
    before = layer.weight.detach().clone()
    layer.eval()
    layer(x)
    assert torch.equal(layer.weight.detach(), before), (
        f"a forward in eval mode changed the weight of {type(layer).__name__}: "
        f"max |w| {before.abs().max().item():.3g} -> {layer.weight.abs().max().item():.3g}")
print("eval forwards leave the binary weights as they are")
