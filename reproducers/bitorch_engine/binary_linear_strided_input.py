"""BinaryLinearCPP computes on other values when its input is a strided view (a slice of a larger tensor).

binary_linear.cpp packs the input's signs with _get_binary_row(input.data_ptr<float>(), ..., m*k): it reads m*k
floats from the start of the input's memory as if the tensor were contiguous, and neither layer.py nor the C++ code
calls .contiguous(). A view whose elements lie two apart (x2[:, ::2] here) is read as the interleaved values
around it. The correct behaviour: the output for a view equals the output for the same values made contiguous.
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qlinear/binary/cpp/binary_linear.cpp
"""
# expect: AssertionError: a strided input gives another output
import torch
from bitorch_engine.layers.qlinear.binary.cpp import BinaryLinearCPP

torch.manual_seed(0)
layer = BinaryLinearCPP(1, 4)  # 1 word of 32 input features, 4 output features: weight (4, 32)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32))
x2 = torch.randn(2, 64)
view = x2[:, ::2]  # the same values as view.contiguous(), two apart in memory
with torch.no_grad():
    strided, contiguous = layer(view), layer(view.contiguous())
assert torch.equal(strided, contiguous), "a strided input gives another output"
print("BinaryLinearCPP computes the same on a strided input")
