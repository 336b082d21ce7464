"""backward through snntorch.surrogate.heaviside() fails once its spikes are modified in place downstream.

Heaviside.forward saves its own output for backward (`ctx.save_for_backward(out)`, surrogate.py L244), so an
in-place op on the spikes (the ReLU(inplace=True) or `mul_`/`add_` of a next layer) makes backward raise. The other
spike functions (atan, fast_sigmoid, ...) save their input and are unaffected (torch's own relu and sigmoid save
their output too, and fail the same way). The correct behaviour: backward through the network works, as it does
with the other surrogates (Heaviside's gradient `grad * out` only needs the mask `input_ > 0`, which can be kept
instead of the returned tensor).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/surrogate.py#L244
"""
import torch
from snntorch import surrogate

torch.manual_seed(0)
x = torch.randn(3, 4, requires_grad=True)
for name, spike in (("atan", surrogate.atan()), ("heaviside", surrogate.heaviside())):
    y = spike(x)
    y.mul_(2.0).add_(1.0)  # the next layer, in place
    y.sum().backward()  # fine for atan; heaviside raises
    print(name, "backward ok")
# expect: which is output 0 of Heaviside, is at version 2; expected version 0 instead
