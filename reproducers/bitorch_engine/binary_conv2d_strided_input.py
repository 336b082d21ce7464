"""BinaryConv2dCPP computes on other values when its input is a strided view (a slice of a larger tensor).

binary_conv.cpp reads each sample through input[n].data_ptr<float>() (im2binary_col, or the packing of the 1x1
path) as if the tensor were contiguous, and neither layer.py nor the C++ code calls .contiguous(). A view whose
elements lie two apart (x2[..., ::2] here) is read as the interleaved values around it. The correct behaviour: the
output for a view equals the output for the same values made contiguous.
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qconv/binary/cpp/binary_conv.cpp
"""
# expect: AssertionError: a strided input gives another output
import torch
from bitorch_engine.layers.qconv.binary.cpp import BinaryConv2dCPP

torch.manual_seed(0)
# 1 word of 32 input channels, 4 output channels, 3x3 kernel: weight (4, 32, 9)
layer = BinaryConv2dCPP(1, 4, 3, stride=1, padding=1, dilation=1)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32, 9))
x2 = torch.randn(2, 32, 4, 8)
view = x2[..., ::2]  # (2, 32, 4, 4): the same values as view.contiguous(), two apart in memory
with torch.no_grad():
    strided, contiguous = layer(view), layer(view.contiguous())
assert torch.equal(strided, contiguous), "a strided input gives another output"
print("BinaryConv2dCPP computes the same on a strided input")
