"""torch.func.vmap cannot run a sinabs IAF layer: its spike functions (MultiSpike, SingleSpike) are old-style
autograd.Functions.

MultiSpike and SingleSpike (sinabs/activation/spike_generation.py) define `forward(ctx, ...)` with no setup_context
staticmethod; torch.func refuses such Functions ("In order to use an autograd.Function with functorch transforms
... it must override the setup_context staticmethod"). The correct behaviour: vmap over the batch returns what a
loop over the samples returns, which needs setup_context (and a vmap rule or generate_vmap_rule = True).
https://pytorch.org/docs/stable/notes/extending.func.html
https://github.com/synsense/sinabs/blob/develop/sinabs/activation/spike_generation.py
"""
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF



def build():  # a fresh layer: its state is initialised by its first forward
    return IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
               surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5))


torch.manual_seed(0)
x = torch.rand(2, 4, 3)  # (batch, time, neurons)
loop = torch.stack([build()(x[b:b + 1]).squeeze(0) for b in range(x.shape[0])])
layer = build()
batched = torch.func.vmap(lambda xi: layer(xi.unsqueeze(0)).squeeze(0))(x)  # xi: one sample, (time, neurons)
assert torch.equal(batched, loop), "vmap differs from the loop over samples"
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
