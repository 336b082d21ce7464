"""torch.func.jvp (forward-mode AD) cannot run a sinabs IAF layer: its spike functions (MultiSpike, SingleSpike) are
old-style autograd.Functions.

MultiSpike and SingleSpike (sinabs/activation/spike_generation.py) define `forward(ctx, ...)` with no setup_context
staticmethod (and no jvp); torch.func refuses such Functions. The correct behaviour: <v, J u> from torch.func.jvp
equals <J^T v, u> from backward, which needs setup_context and a jvp staticmethod.
https://pytorch.org/docs/stable/notes/extending.func.html
https://github.com/synsense/sinabs/blob/develop/sinabs/activation/spike_generation.py
"""
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF



def build():  # a fresh layer: its state is initialised by its first forward
    return IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
               surrogate_grad_fn=SingleExponential(grad_width=0.5, grad_scale=1.0))


torch.manual_seed(0)
x, u, v = torch.rand(2, 4, 3) * 2, torch.randn(2, 4, 3), torch.randn(2, 4, 3)  # (batch, time, neurons)
x_eager = x.clone().requires_grad_()
(build()(x_eager) * v).sum().backward()
_, ju = torch.func.jvp(build(), (x,), (u,))
assert torch.allclose((v * ju).sum(), (x_eager.grad * u).sum()), "forward-mode and reverse-mode AD disagree"
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
