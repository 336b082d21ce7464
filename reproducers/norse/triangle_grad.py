"""torch.func.grad through norse's LIF with the triangle surrogate raises: Triangle has no setup_context.

``Triangle`` (norse.torch.functional.threshold) is an old-style ``autograd.Function`` (``forward(ctx, ...)``, no
``setup_context``), which torch.func refuses (the same for ``threshold(x, "triangle", alpha)``).
Correct: torch.func.grad gives the gradient that backward gives.
https://github.com/norse/norse/blob/main/norse/torch/functional/threshold.py
"""
import torch
from norse.torch import LIF, LIFParameters

torch.manual_seed(0)
t = lambda v: torch.tensor(float(v))  # noqa: E731
layer = LIF(LIFParameters(tau_syn_inv=t(100), tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0),
                          method="triangle", alpha=t(0.3)), dt=0.001)
lif = lambda v: layer(v, None)[0]  # noqa: E731  (time, batch, neurons) -> spikes of every step

x = torch.rand(3, 2, 4) * 9
cotangent = torch.randn(x.shape)
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
torch.func.grad(lambda v: (lif(v) * cotangent).sum())(x)
