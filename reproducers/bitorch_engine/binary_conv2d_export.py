"""torch.export cannot export BinaryConv2dCPP: its forward hands fake tensors to the C++ kernel, which reads data_ptr.

torch.export traces with fake tensors (shapes and dtypes, no data). BinaryConv2dForward.forward (layer.py) calls the
pybind11 extension binary_conv_cpp.forward directly, whose C++ code reads the input's data_ptr(): "The tensor has a
non-zero number of elements, but its data is not allocated yet". The kernel is not registered as a custom op (with
a fake/meta implementation giving the output's shape), which export needs. The correct behaviour: the exported
program runs like the eager layer. (The RuntimeError's message runs over three lines, the last one a hint
about Caffe2's lazy allocation, which is what the expect line matches.)
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qconv/binary/cpp/layer.py
"""
# expect: Caffe2 uses a lazy allocation
import torch
from bitorch_engine.layers.qconv.binary.cpp import BinaryConv2dCPP

torch.manual_seed(0)
# 1 word of 32 input channels, 4 output channels, 3x3 kernel: weight (4, 32, 9)
layer = BinaryConv2dCPP(1, 4, 3, stride=1, padding=1, dilation=1)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32, 9))
x = torch.randn(2, 32, 4, 4)
program = torch.export.export(layer, (x,))
x2 = torch.randn(2, 32, 4, 4)
assert torch.equal(program.module()(x2), layer(x2)), "the exported program differs from the eager layer"
print("BinaryConv2dCPP exports")
