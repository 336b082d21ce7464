"""torch.jit.trace of an HQQLinear built from an nn.Linear raises RuntimeError: its bias requires grad as a constant.

HQQLinear keeps the bias as linear.bias.clone() (hqq/core/quantize.py, HQQLinear.initialize), a plain attribute that
requires grad (it hangs in the autograd graph of the original Linear's bias), not a Parameter: the tracer refuses to
record it as a constant. The correct behaviour: the traced layer computes what the layer computes.
"""
import torch
from hqq.core.quantize import BaseQuantizeConfig, HQQLinear

torch.manual_seed(0)
layer = HQQLinear(torch.nn.Linear(128, 4), quant_config=BaseQuantizeConfig(nbits=4, group_size=64),
                  compute_dtype=torch.float32, device="cpu")
x = torch.randn(2, 128)
traced = torch.jit.trace(layer, (x,))  # raises RuntimeError
assert torch.equal(traced(x), layer(x))
# expect: RuntimeError: Cannot insert a Tensor that requires grad as a constant
