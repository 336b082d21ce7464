"""torch.jit.script cannot compile brevitas quant layers: the quant proxies' export_mode setter assigns itself.

Every quant proxy (brevitas/common.py, ExportMixin) has an export_mode property whose setter assigns
self.export_mode again; TorchScript compiles properties and refuses the recursion ("method
'__export_mode_setter' is called recursively. Recursive calls are not supported"), pointing at that line of
brevitas/common.py, which is the last line of the error. The correct behaviour: torch.jit.script(layer) returns a
module computing what the layer computes. https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/common.py
"""
# expect: elif value and not self.requires_export_handler and self.export_handler is None:
import torch
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear, QuantReLU
from brevitas.quant import (Int8ActPerTensorFloat, SignedBinaryActPerTensorConst, SignedBinaryWeightPerTensorConst,
                            SignedTernaryActPerTensorConst)

torch.manual_seed(0)
x, image = torch.randn(4, 6), torch.randn(2, 2, 5, 5)
cases = [
    (QuantIdentity(act_quant=SignedBinaryActPerTensorConst), x),
    (QuantIdentity(act_quant=SignedTernaryActPerTensorConst, max_val=0.5, min_val=-0.5), x),
    (QuantIdentity(act_quant=Int8ActPerTensorFloat, bit_width=3, scaling_impl_type="const", max_val=2.0,
                   min_val=-2.0), x),
    (QuantReLU(bit_width=3, scaling_impl_type="const", max_val=3.5), x),
    (QuantLinear(6, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0), x),
    (QuantConv2d(2, 3, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0), image),
]
for layer, inp in cases:
    scripted = torch.jit.script(layer)  # raises: '__export_mode_setter' is called recursively
    assert torch.equal(scripted(inp), layer(inp)), f"{type(layer).__name__}: the scripted layer computes otherwise"
print("every quant layer compiles with TorchScript")
