"""torch.func.jvp through a spikingjelly surrogate function (ATan) raises: its autograd.Function defines no jvp.

spikingjelly.activation_based.surrogate's spiking functions (sigmoid, atan, piecewise_quadratic) are
torch.autograd.Functions with a backward (the surrogate gradient) but no jvp staticmethod, so forward-mode AD
raises. The correct behaviour: the tangent equals the surrogate derivative times the input tangent, agreeing with
reverse mode. https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/surrogate.py
"""
import torch
from spikingjelly.activation_based import surrogate

torch.manual_seed(0)
fn = surrogate.ATan(alpha=2.0)
x = torch.randn(3, 5)
torch.func.jvp(fn, (x,), (torch.randn_like(x),))
# expect: jvp
