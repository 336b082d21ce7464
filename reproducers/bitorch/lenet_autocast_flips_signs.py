"""bitorch's LeNet under torch.autocast gives other logits than in float32 (sign flips of binarized activations).

autocast runs convolutions and linear layers in bfloat16: a pre-activation near 0 can change sign after rounding,
the binarized activation flips between -1 and +1 and every later layer sees another input. A property of
binarized networks under reduced precision rather than a bitorch bug: the entry records that the transform does not
preserve the output.
"""
# expect: AssertionError: autocast(bfloat16) moved
# requires: cuda
import torch
from bitorch.models import LeNet

torch.manual_seed(0)
model = LeNet(input_shape=[1, 1, 28, 28], num_classes=10).eval().cuda()
x = torch.randn(2, 1, 28, 28, device="cuda")
with torch.no_grad():
    full = model(x)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        mixed = model(x).float()
moved = int(((full - mixed).abs() > 1e-2).sum())
assert moved == 0, f"autocast(bfloat16) moved {moved} of {full.numel()} logits by more than 1e-2"
