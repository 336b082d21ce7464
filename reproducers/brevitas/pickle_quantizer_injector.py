"""pickle cannot round-trip brevitas quant layers: they keep their quantizer injectors, classes pickle cannot find.

Every quant layer holds dependency-injection classes (brevitas.inject.NoneActQuant for its unused input/output
quantizers, and classes derived on the fly by keyword overrides such as max_val=...), which pickle stores by
qualified name and cannot look up ("attribute lookup NoneActQuant on brevitas.inject failed"). The correct
behaviour: pickle.loads(pickle.dumps(layer)) gives a layer that computes what the original computes, as it does for
torch.nn layers. https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/inject/__init__.py
"""
# expect: attribute lookup NoneActQuant on brevitas.inject failed
import pickle

import torch
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear, QuantReLU
from brevitas.quant import (Int8ActPerTensorFloat, SignedBinaryActPerTensorConst, SignedBinaryWeightPerTensorConst,
                            SignedTernaryActPerTensorConst)

torch.manual_seed(0)
x, image = torch.randn(4, 6), torch.randn(2, 2, 5, 5)
cases = [  # (layer, input), built as a user configures them
    (QuantIdentity(act_quant=SignedBinaryActPerTensorConst), x),
    (QuantIdentity(act_quant=SignedTernaryActPerTensorConst, max_val=0.5, min_val=-0.5), x),
    (QuantIdentity(act_quant=Int8ActPerTensorFloat, bit_width=3, scaling_impl_type="const", max_val=2.0,
                   min_val=-2.0), x),
    (QuantReLU(bit_width=3, scaling_impl_type="const", max_val=3.5), x),
    (QuantLinear(6, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0), x),
    (QuantConv2d(2, 3, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0), image),
]
for layer, inp in cases:
    copy = pickle.loads(pickle.dumps(layer))  # raises PicklingError
    assert torch.equal(copy(inp), layer(inp)), f"{type(layer).__name__}: the unpickled copy computes otherwise"
print("every quant layer survives a pickle round trip")
