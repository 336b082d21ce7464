"""SteHeaviside returns float32 for float64 and bfloat16 inputs: its output is built from float32 constants.

SteHeavisideFunction.forward computes torch.where(x > 0, torch.tensor(1.0), torch.tensor(-1.0)): two float32
0-dim tensors, so the result is float32 whatever the input's dtype (every other bitorch sign quantization keeps the
input's dtype). The correct behaviour: the output has the input's dtype, like QActivation(Sign()).
https://github.com/hpi-xnor/bitorch/blob/v0.4.1/bitorch/quantizations/ste_heaviside.py
"""
# expect: AssertionError: SteHeaviside turns torch.float64 into torch.float32
import torch
from bitorch.layers import QActivation
from bitorch.quantizations import Sign, SteHeaviside

torch.manual_seed(0)
for dtype in (torch.float64, torch.bfloat16):
    x = torch.randn(3, 4, dtype=dtype)
    print(dtype, "-> Sign:", QActivation(Sign(), gradient_cancellation_threshold=0.0)(x).dtype)
    y = QActivation(SteHeaviside(), gradient_cancellation_threshold=0.0)(x)
    print(dtype, "-> SteHeaviside:", y.dtype)
    assert y.dtype == dtype, f"SteHeaviside turns {dtype} into {y.dtype}"
print("SteHeaviside keeps the input dtype")
