"""torch.func.jvp through an HQQLinear raises NotImplementedError: its autograd.Function has no jvp.

HQQLinear's forward (the PyTorch backend, its default) is HQQMatmulNoCacheMul.apply (hqq/core/quantize.py), an
autograd.Function that defines backward only, so forward-mode AD cannot pass through it. The correct behaviour: the
tangent of the output is tangent @ dequantize().T.
"""
import torch
from hqq.core.quantize import BaseQuantizeConfig, HQQLinear

torch.manual_seed(0)
layer = HQQLinear(torch.nn.Linear(128, 4), quant_config=BaseQuantizeConfig(nbits=4, group_size=64),
                  compute_dtype=torch.float32, device="cpu")
x, tangent = torch.randn(2, 128), torch.randn(2, 128)
_, out_tangent = torch.func.jvp(layer, (x,), (tangent,))  # raises NotImplementedError
assert torch.allclose(out_tangent, tangent @ layer.dequantize().T)
# expect: NotImplementedError: You must implement the jvp function for custom autograd.Function
