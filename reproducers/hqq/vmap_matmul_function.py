"""torch.func.vmap over an HQQLinear raises RuntimeError: its autograd.Function has no vmap rule.

HQQLinear's forward (the PyTorch backend, its default) is HQQMatmulNoCacheMul.apply (hqq/core/quantize.py), an
autograd.Function with setup_context but neither a vmap staticmethod nor generate_vmap_rule = True. The correct
behaviour: the batched layer computes what the layer computes on each sample.
"""
import torch
from hqq.core.quantize import BaseQuantizeConfig, HQQLinear

torch.manual_seed(0)
layer = HQQLinear(torch.nn.Linear(128, 4), quant_config=BaseQuantizeConfig(nbits=4, group_size=64),
                  compute_dtype=torch.float32, device="cpu")
x = torch.randn(2, 128)
batched = torch.func.vmap(layer)(x)  # raises RuntimeError
assert torch.allclose(batched, layer(x))
# expect: RuntimeError: You tried to vmap over HQQMatmulNoCacheMul, but it does not have vmap support
