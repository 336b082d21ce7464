"""snntorch's sigmoid surrogate returns a NaN gradient for a membrane far below the threshold.

Sigmoid.backward computes slope * exp(-slope x) / (exp(-slope x) + 1)^2: for x < -88/slope in float32 (x < -709/slope
in float64) exp(-slope x) overflows to inf and the quotient is inf / inf = NaN. The derivative it stands for,
slope * sigmoid(slope x) * sigmoid(-slope x), is finite (tiny) for every finite x; one NaN in a batch poisons every
weight gradient behind it. With the default slope 25, x = -4 (a membrane 4 below the threshold) is enough.
Correct: a finite gradient, about 0 there.
https://github.com/jeshraghian/snntorch/blob/master/snntorch/surrogate.py (class Sigmoid, backward)
"""
# expect: AssertionError: NaN gradient
import snntorch.surrogate
import torch

spike = snntorch.surrogate.sigmoid(slope=25)
x = torch.tensor([-4.0, -1.0, 0.5], requires_grad=True)
(grad,) = torch.autograd.grad(spike(x).sum(), x)
assert torch.isfinite(grad).all(), f"NaN gradient: {grad.tolist()} at x = {x.tolist()}"
