"""optimum-quanto's qfloat8 weights turn an all-zero weight row into NaN outputs for every input.

AbsmaxOptimizer computes scale = max|row| / 448 with no lower bound: a zero row gets scale 0, quantize_symmetric
divides 0 by 0 (NaN; a float8 qtype is not rounded or clamped to a finite code), and the dequantized row is
NaN * 0 = NaN. The correct behaviour: a zero row quantizes to zero codes and its output channel is the bias (as
qint8's integer cast gives).
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/tensor/optimizers/absmax_optimizer.py
"""
import torch
from optimum.quanto import freeze, qfloat8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
with torch.no_grad():
    model[0].weight[1] = 0.0  # one pruned output channel
quantize(model, weights=qfloat8)
freeze(model)
y = model(torch.randn(2, 8))
assert torch.isfinite(y).all(), f"the zero row's output channel is {y[:, 1].tolist()}"
# expect: AssertionError: the zero row's output channel is [nan, nan]
