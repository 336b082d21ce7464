"""torch.func.vmap cannot run BinaryLinearCPP, not even for inference: BinaryLinearForward has no setup_context.

BinaryLinearForward (layer.py) is a torch.autograd.Function written in the legacy style, forward(ctx, ...), with no
setup_context staticmethod (and no vmap rule); torch.func refuses such Functions whatever the grad mode, so vmap
over the batch raises before the kernel runs. The correct behaviour: vmap over the batch returns what a loop over
the samples returns (for a Function that calls a C++ kernel: a vmap staticmethod, or registering the kernel as a
custom op). https://pytorch.org/docs/stable/notes/extending.func.html
https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine/layers/qlinear/binary/cpp/layer.py
"""
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
import torch
from bitorch_engine.layers.qlinear.binary.cpp import BinaryLinearCPP

torch.manual_seed(0)
layer = BinaryLinearCPP(1, 4)  # 1 word of 32 input features, 4 output features: weight (4, 32)
with torch.no_grad():
    layer.weight.copy_(torch.randn(4, 32))
x = torch.randn(3, 32)
with torch.no_grad():  # inference only: no gradient is asked for
    loop = torch.cat([layer(x[i:i + 1]) for i in range(x.shape[0])])
    batched = torch.func.vmap(lambda xi: layer(xi.unsqueeze(0)).squeeze(0))(x)
assert torch.equal(batched, loop), "vmap differs from the loop over samples"
print("vmap runs BinaryLinearCPP")
