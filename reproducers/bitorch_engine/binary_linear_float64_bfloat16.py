"""BinaryLinearCPP cannot run in float64 or bfloat16: its C++ forward reads the input through data_ptr<float>().

binary_linear_cpp.forward (binary_linear.cpp) reads input and weight as float and allocates a float32 output, so a
layer moved to float64 (or bfloat16) with an input of that dtype raises "expected scalar type Float but found
Double" (BFloat16). The correct behaviour: the layer computes in the dtype it was moved to (or casts), giving the
float32 result, which is exact here (sums of +-1) in either dtype.
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qlinear/binary/cpp/binary_linear.cpp
"""
# expect: RuntimeError: expected scalar type Float but found
import copy

import torch
from bitorch_engine.layers.qlinear.binary.cpp import BinaryLinearCPP

torch.manual_seed(0)
layer = BinaryLinearCPP(1, 4)  # 1 word of 32 input features, 4 output features: weight (4, 32)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32))
x = torch.randn(3, 32)
with torch.no_grad():
    reference = layer(x)  # float32: works
    for dtype in (torch.float64, torch.bfloat16):
        y = copy.deepcopy(layer).to(dtype)(x.to(dtype))
        assert y.dtype == dtype and torch.equal(y.float(), reference), f"{dtype} output differs from float32"
print("BinaryLinearCPP runs in float64 and bfloat16")
