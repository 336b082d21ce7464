"""torch.jit.script of an HQQLinear raises UnsupportedNodeError: its dequantize() builds a Python set.

HQQLinear.dequantize collects the meta keys to drop in `del_keys = set()` (hqq/core/quantize.py), which TorchScript
cannot compile. The correct behaviour: the scripted layer computes what the layer computes.
"""
import torch
from hqq.core.quantize import BaseQuantizeConfig, HQQLinear

torch.manual_seed(0)
layer = HQQLinear(torch.nn.Linear(128, 4), quant_config=BaseQuantizeConfig(nbits=4, group_size=64),
                  compute_dtype=torch.float32, device="cpu")
x = torch.randn(2, 128)
scripted = torch.jit.script(layer)  # raises UnsupportedNodeError
assert torch.equal(scripted(x), layer(x))
# expect: UnsupportedNodeError: Set aren't supported
