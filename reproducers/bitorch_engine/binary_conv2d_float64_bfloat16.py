"""BinaryConv2dCPP cannot run in float64 or bfloat16: its C++ forward reads the input through data_ptr<float>().

binary_conv_cpp.forward (binary_conv.cpp) reads activations and weight as float and allocates a float32 output, so
a layer moved to float64 (or bfloat16) with an input of that dtype raises "expected scalar type Float but found
Double" (BFloat16). The correct behaviour: the layer computes in the dtype it was moved to (or casts), giving the
float32 result, which is exact here (sums of +-1) in either dtype.
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qconv/binary/cpp/binary_conv.cpp
"""
# expect: RuntimeError: expected scalar type Float but found
import copy

import torch
from bitorch_engine.layers.qconv.binary.cpp import BinaryConv2dCPP

torch.manual_seed(0)
# 1 word of 32 input channels, 4 output channels, 3x3 kernel: weight (4, 32, 9)
layer = BinaryConv2dCPP(1, 4, 3, stride=1, padding=1, dilation=1)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32, 9))
x = torch.randn(2, 32, 4, 4)
with torch.no_grad():
    reference = layer(x)  # float32: works
    for dtype in (torch.float64, torch.bfloat16):
        y = copy.deepcopy(layer).to(dtype)(x.to(dtype))
        assert y.dtype == dtype and torch.equal(y.float(), reference), f"{dtype} output differs from float32"
print("BinaryConv2dCPP runs in float64 and bfloat16")
