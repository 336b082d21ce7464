"""torch.jit.script cannot compile snntorch's parameterised spike functions (surrogate.atan(alpha), ...).

snntorch exposes its spike functions only through factories whose closures capture the Python number they were
given (`surrogate.atan(alpha)` returns `inner(x) = ATan.apply(x, alpha)`), and TorchScript cannot use a closed-over
Python float as a value; fast_sigmoid, sigmoid and triangular fail the same way, spike_rate_escape on its
autograd.Function's apply. (heaviside() and straight_through_estimator(), which capture nothing, do script.)
The correct behaviour: torch.jit.script of the spike function (or of a module holding it) returns a scripted
function computing the same spikes. https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/surrogate.py#L210
"""
import torch
from snntorch import surrogate

torch.manual_seed(0)
spike = surrogate.atan(alpha=2.0)  # snntorch's default spike function
scripted = torch.jit.script(spike)
x = torch.randn(2, 3)
assert torch.equal(scripted(x), spike(x))
# expect: ~~~~~ <--- HERE
