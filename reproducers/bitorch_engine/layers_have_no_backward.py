"""bitorch-engine's CPU layers BinaryLinearCPP and BinaryConv2dCPP have no backward: a gradient through them raises.

Their autograd.Functions (BinaryLinearForward, BinaryConv2dForward) define forward only: the CPU kernels are for
inference (bitorch's RuntimeMode: "CPU: use layer implementations for inference on CPU"), while the spec they stand
for (a binary linear / conv layer with a straight-through gradient) has a gradient. The forward itself is fine.
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qlinear/binary/cpp/layer.py
"""
# expect: NotImplementedError: You must implement either the backward or vjp method
import torch
from bitorch_engine.layers.qconv.binary.cpp import BinaryConv2dCPP
from bitorch_engine.layers.qlinear.binary.cpp import BinaryLinearCPP

torch.manual_seed(0)
linear = BinaryLinearCPP(1, 4)  # 1 word of 32 input features, 4 outputs
conv = BinaryConv2dCPP(1, 4, 3, stride=1, padding=1, dilation=1)
with torch.no_grad():
    linear.weight.copy_(torch.randn(4, 32))
    conv.weight.copy_(torch.randn(4, 32, 9))
for layer, x in ((conv, torch.randn(2, 32, 4, 4)), (linear, torch.randn(3, 32))):
    x.requires_grad_(True)
    y = layer(x)
    print(f"{type(layer).__name__}: forward {tuple(y.shape)}, backward:")
    y.sum().backward()  # raises: no backward defined
