"""SteHeaviside's input gradient in a float64 model is computed in float32: its float32 output rounds the cotangent.

SteHeavisideFunction.forward returns float32 whatever the input's dtype (steheaviside_output_dtype.py), so the
gradient flowing back into it is rounded to float32 before its straight-through backward passes it on: two
cotangents that differ only past float32's precision give the same float64 input gradient. The correct behaviour:
a float64 input's gradient is the float64 cotangent, masked (|x| <= 1), as with QActivation(Sign()).
https://github.com/hpi-xnor/bitorch/blob/v0.4.1/bitorch/quantizations/ste_heaviside.py
"""
# expect: AssertionError: SteHeaviside's float64 input gradient is float32-rounded
import torch
from bitorch.layers import QActivation
from bitorch.quantizations import SteHeaviside

torch.manual_seed(0)
x = (torch.rand(8, dtype=torch.float64) - 0.5)  # inside the straight-through window
cotangent = torch.full((8,), 1 / 3, dtype=torch.float64)  # 1/3 is not a float32 number
layer = QActivation(SteHeaviside(), gradient_cancellation_threshold=0.0)
grads = []
for cot in (cotangent, cotangent.float().double()):  # the second differs from the first by ~1e-8
    xi = x.clone().requires_grad_()
    (layer(xi).double() * cot).sum().backward()
    grads.append(xi.grad)
print("input gradient:", grads[0][0].item(), "expected:", cotangent[0].item())
assert not torch.equal(grads[0], grads[1]), "SteHeaviside's float64 input gradient is float32-rounded"
