"""pickle cannot round-trip brevitas' quant layers as constructed by default.

A default QuantIdentity, QuantReLU, QuantLinear or QuantConv2d holds brevitas.inject.NoneActQuant for its unused
quantizers (the input quantizer of every one of them), a class pickle stores by name and cannot look up
("attribute lookup NoneActQuant on brevitas.inject failed"). The correct behaviour: pickle.loads(pickle.dumps(layer))
computes what the layer computes, as for torch.nn layers.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/inject/__init__.py
"""
# expect: attribute lookup NoneActQuant on brevitas.inject failed
import pickle

import torch
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear, QuantReLU

torch.manual_seed(0)
x, image = torch.randn(2, 4), torch.randn(2, 1, 6, 6)
layers = [(QuantIdentity(), x), (QuantReLU(), x), (QuantLinear(4, 3), x), (QuantConv2d(1, 2, 3), image)]
for layer, x in layers:
    copy = pickle.loads(pickle.dumps(layer))  # raises PicklingError
    assert torch.equal(copy(x), layer(x)), f"{type(layer).__name__}: the unpickled copy computes otherwise"
print("the default quant layers survive a pickle round trip")
