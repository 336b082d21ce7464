"""torch.func.vmap cannot run BinaryConv2dCPP, not even for inference: BinaryConv2dForward has no setup_context.

BinaryConv2dForward (layer.py) is a torch.autograd.Function written in the legacy style, forward(ctx, ...), with no
setup_context staticmethod (and no vmap rule); torch.func refuses such Functions whatever the grad mode, so vmap
over the batch raises before the kernel runs. The correct behaviour: vmap over the batch returns what a loop over
the samples returns (for a Function that calls a C++ kernel: a vmap staticmethod, or registering the kernel as a
custom op). https://pytorch.org/docs/stable/notes/extending.func.html
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qconv/binary/cpp/layer.py
"""
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
import torch
from bitorch_engine.layers.qconv.binary.cpp import BinaryConv2dCPP

torch.manual_seed(0)
# 1 word of 32 input channels, 4 output channels, 3x3 kernel: weight (4, 32, 9)
layer = BinaryConv2dCPP(1, 4, 3, stride=1, padding=1, dilation=1)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32, 9))
x = torch.randn(2, 32, 4, 4)
with torch.no_grad():  # inference only: no gradient is asked for
    loop = torch.cat([layer(x[i:i + 1]) for i in range(x.shape[0])])
    batched = torch.func.vmap(lambda xi: layer(xi.unsqueeze(0)).squeeze(0))(x)
assert torch.equal(batched, loop), "vmap differs from the loop over samples"
print("vmap runs BinaryConv2dCPP")
