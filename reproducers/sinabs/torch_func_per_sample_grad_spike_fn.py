"""Per-sample gradients with torch.func (vmap of grad of functional_call) cannot run a sinabs LIF layer: its spike
functions are old-style autograd.Functions.

MultiSpike and SingleSpike (sinabs/activation/spike_generation.py) define `forward(ctx, ...)` with no setup_context
staticmethod; torch.func refuses such Functions. The correct behaviour: vmap(grad(...)) gives, for each sample, the
tau_mem gradient a single-sample backward pass gives, which needs setup_context and a vmap rule.
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
loop = []
for b in range(x.shape[0]):  # one fresh layer and one backward pass per sample
    single = build()
    single(x[b:b + 1]).sum().backward()
    loop.append(single.tau_mem.grad)

layer = build()
params = {"tau_mem": layer.tau_mem.detach()}


def loss(params, xi):  # xi: one sample, (time, neurons)
    return torch.func.functional_call(layer, params, (xi.unsqueeze(0),)).sum()


per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, x)["tau_mem"]
assert torch.allclose(per_sample, torch.stack(loop)), "per-sample gradients differ from the loop"
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
