"""torch.func.vmap over a norse LIFCell (surrogate method "super") raises: SuperSpike has no vmap rule.

``SuperSpike`` is an ``autograd.Function`` with ``setup_context`` but neither ``generate_vmap_rule = True`` nor a
``vmap`` staticmethod, so vmap refuses it (the same for LIFBoxCell and ``threshold(x, "super", alpha)``). Correct:
vmap over the batch gives what a loop over the samples gives.
https://github.com/norse/norse/blob/main/norse/torch/functional/superspike.py
"""
import torch
from norse.torch import LIFCell, LIFParameters

torch.manual_seed(0)
t = lambda v: torch.tensor(float(v))  # noqa: E731
cell = LIFCell(LIFParameters(tau_syn_inv=t(100), tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0),
                             method="super", alpha=t(1.0)), dt=0.001)


def over_time(x):  # x: (time, batch, neurons), from the initial state
    state, spikes = None, []
    for step in x:
        z, state = cell(step, state)
        spikes.append(z)
    return torch.stack(spikes)


x = torch.rand(3, 2, 4) * 9
per_sample = lambda xi: over_time(xi.unsqueeze(1)).squeeze(1)  # noqa: E731
# expect: RuntimeError: You tried to vmap over SuperSpike, but it does not have vmap support
y = torch.func.vmap(per_sample, in_dims=1, out_dims=1)(x)
assert torch.equal(y, torch.cat([over_time(x[:, i:i + 1]) for i in range(x.shape[1])], dim=1))
