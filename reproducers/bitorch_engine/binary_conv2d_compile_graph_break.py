"""torch.compile breaks the graph in BinaryConv2dCPP: dynamo cannot trace the pybind11 kernel the forward calls.

BinaryConv2dForward.forward (layer.py) calls the pybind11 extension binary_conv_cpp.forward directly; it is not a
registered custom op (torch.library) nor marked allow_in_graph, so dynamo stops there ("Dynamo does not know how to
trace the builtin ..."): torch.compile(fullgraph=True) raises, with any backend (inductor, aot_eager), and without
fullgraph the graph is broken at the kernel. The correct behaviour: the layer compiles into one graph.
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qconv/binary/cpp/layer.py
"""
# expect: Dynamo does not know how to trace the builtin `bitorch_engine.extensions.binary_conv_cpp
import torch
import torch._dynamo
from bitorch_engine.layers.qconv.binary.cpp import BinaryConv2dCPP
from torch._dynamo.utils import counters

torch.manual_seed(0)
# 1 word of 32 input channels, 4 output channels, 3x3 kernel: weight (4, 32, 9)
layer = BinaryConv2dCPP(1, 4, 3, stride=1, padding=1, dilation=1)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32, 9))
x = torch.randn(2, 32, 4, 4)
counters.clear()
torch.compile(layer, backend="eager")(x)  # dynamo's graph capture; the backend plays no part in a break
breaks = list(counters["graph_break"]) + list(counters["unimplemented"])
# each break's explanation on one line (torch.compile(fullgraph=True) raises with it)
why = [next((ln.strip() for ln in b.splitlines() if "Explanation" in ln), b.splitlines()[0])[:200] for b in breaks]
assert not breaks, f"{len(breaks)} graph break(s): {why}"
print("BinaryConv2dCPP compiles into one graph")
