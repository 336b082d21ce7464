"""torch.func.vmap over a spikingjelly surrogate function (ATan) raises: its autograd.Function has no vmap rule.

spikingjelly.activation_based.surrogate's spiking functions (sigmoid, atan, piecewise_quadratic) are
torch.autograd.Functions with setup_context but neither generate_vmap_rule = True nor a vmap staticmethod, so
torch.func.vmap refuses them. The correct behaviour: vmap(fn)(x) equals fn applied to each sample (a Heaviside step
in the forward). https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/surrogate.py
"""
import torch
from spikingjelly.activation_based import surrogate

torch.manual_seed(0)
fn = surrogate.ATan(alpha=2.0)
x = torch.randn(3, 5)
y = torch.func.vmap(fn)(x)
assert torch.equal(y, fn(x)), "vmap changed the output"
# expect: but it does not have vmap support
