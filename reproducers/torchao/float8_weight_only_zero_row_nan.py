"""A zero weight row quantized by torchao's Float8WeightOnlyConfig makes that output channel NaN.

``_choose_scale_float8`` computes ``scale = amax / 448`` with no lower bound, so an all-zero row gets scale 0 and
``_quantize_affine_float8`` stores its codes as ``0 / 0 = NaN``. The correct behaviour: a zero row quantizes to zero
codes (a positive scale) and the layer computes ``x @ W.T + b`` with that row contributing 0.
https://github.com/pytorch/ao/issues/4713
"""
import torch
from torchao.quantization import Float8WeightOnlyConfig, quantize_

linear = torch.nn.Linear(4, 3)
with torch.no_grad():
    linear.weight[1] = 0.0  # e.g. a pruned or zero-initialised output channel
    expected = linear(torch.ones(2, 4))
quantize_(linear, Float8WeightOnlyConfig())
with torch.no_grad():
    got = linear(torch.ones(2, 4))
assert not got.isnan().any(), f"output channel 1 is NaN: {got.tolist()} (expected about {expected.tolist()})"
# expect: AssertionError: output channel 1 is NaN
