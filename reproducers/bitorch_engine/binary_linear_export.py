"""torch.export cannot export BinaryLinearCPP: its forward hands fake tensors to the C++ kernel, which reads data_ptr.

torch.export traces with fake tensors (shapes and dtypes, no data). BinaryLinearForward.forward (layer.py) calls the
pybind11 extension binary_linear_cpp.forward directly, whose C++ code reads the input's data_ptr(): "The tensor has
a non-zero number of elements, but its data is not allocated yet". The kernel is not registered as a custom op (with
a fake/meta implementation giving the output's shape), which export needs. The correct behaviour: the exported
program runs like the eager layer. (The RuntimeError's message runs over three lines, the last one a hint
about Caffe2's lazy allocation, which is what the expect line matches.)
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qlinear/binary/cpp/layer.py
"""
# expect: Caffe2 uses a lazy allocation
import torch
from bitorch_engine.layers.qlinear.binary.cpp import BinaryLinearCPP

torch.manual_seed(0)
layer = BinaryLinearCPP(1, 4)  # 1 word of 32 input features, 4 output features: weight (4, 32)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32))
x = torch.randn(3, 32)
program = torch.export.export(layer, (x,))
x2 = torch.randn(3, 32)
assert torch.equal(program.module()(x2), layer(x2)), "the exported program differs from the eager layer"
print("BinaryLinearCPP exports")
