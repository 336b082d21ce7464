"""torch.func.jvp through a norse LIFCell (surrogate method "super") raises: SuperSpike defines no jvp.

``SuperSpike`` is an ``autograd.Function`` without a ``jvp`` staticmethod, so forward-mode AD cannot pass it (the
same for LIFBoxCell and ``threshold(x, "super", alpha)``). Correct: ``jvp`` gives J u consistent with the
surrogate gradient that backward uses.
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
# expect: NotImplementedError: You must implement the jvp function for custom autograd.Function
_, ju = torch.func.jvp(over_time, (x,), (torch.randn_like(x),))
