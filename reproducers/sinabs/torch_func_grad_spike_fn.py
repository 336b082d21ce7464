"""torch.func.grad cannot differentiate a sinabs LIF layer: its spike functions (MultiSpike, SingleSpike) are
old-style autograd.Functions.

MultiSpike and SingleSpike (sinabs/activation/spike_generation.py) define `forward(ctx, ...)` with no setup_context
staticmethod; torch.func refuses such Functions. The correct behaviour: torch.func.grad of a loss through
torch.func.functional_call equals the gradient autograd's backward computes, which needs setup_context.
https://pytorch.org/docs/stable/notes/extending.func.html
https://github.com/synsense/sinabs/blob/develop/sinabs/activation/spike_generation.py
"""
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import LIF



def build():  # a fresh layer: its state is initialised by its first forward
    return LIF(tau_mem=3.0, norm_input=False, spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike,
               reset_fn=MembraneSubtract(), surrogate_grad_fn=SingleExponential(grad_width=0.5, grad_scale=1.0))


torch.manual_seed(0)
x = torch.rand(2, 4, 3) * 2  # (batch, time, neurons)
x_eager = x.clone().requires_grad_()
build()(x_eager).sum().backward()

layer = build()
params = {name: p.detach() for name, p in layer.named_parameters()}
g_x = torch.func.grad(lambda p, x: torch.func.functional_call(layer, p, (x,)).sum(), argnums=1)(params, x)
assert torch.allclose(g_x, x_eager.grad), "torch.func.grad differs from autograd"
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
