"""torch.jit.script cannot compile brevitas' quant layers as constructed by default.

As for every quant layer, the quant proxies' export_mode property (brevitas/common.py, ExportMixin) has a setter that
assigns self.export_mode again; TorchScript refuses the recursion ("method '__export_mode_setter' is called
recursively"), pointing at that line of brevitas/common.py. The correct behaviour: torch.jit.script(layer) returns a
module computing what the layer computes. https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/common.py
"""
# expect: elif value and not self.requires_export_handler and self.export_handler is None:
import torch
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear, QuantReLU

torch.manual_seed(0)
x, image = torch.randn(2, 4), torch.randn(2, 1, 6, 6)
layers = [(QuantIdentity(), x), (QuantReLU(), x), (QuantLinear(4, 3), x), (QuantConv2d(1, 2, 3), image)]
for layer, x in layers:
    scripted = torch.jit.script(layer)  # raises: '__export_mode_setter' is called recursively
    assert torch.equal(scripted(x), layer(x)), f"{type(layer).__name__}: the scripted layer computes otherwise"
print("the default quant layers compile with TorchScript")
