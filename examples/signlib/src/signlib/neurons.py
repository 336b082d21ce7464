"""Leaky integrate-and-fire neurons, reset by subtraction, the reset decided by the previous step's membrane.

    R[t] = H(U[t-1] - threshold)   (detached)
    U[t] = beta U[t-1] + x[t] - R[t] threshold
    S[t] = H(U[t] - threshold)     with the fast-sigmoid surrogate gradient 1 / (slope |u| + 1)^2
"""

import os

import torch
from torch import nn

#: Set to 1 to plant a bug in MultiStepLIF (the decay also applied to the input), to see how the kit reports it.
PLANTED_BUG_VARIABLE = "SIGNLIB_PLANTED_BUG"


class _FastSigmoidSpike(torch.autograd.Function):
    generate_vmap_rule = True  # forward is plain torch ops: vmap batches it as it is

    @staticmethod
    def forward(u, slope):
        return (u > 0).to(u.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        u, slope = inputs
        ctx.save_for_backward(u)
        ctx.slope = slope

    @staticmethod
    def backward(ctx, grad_output):
        (u,) = ctx.saved_tensors
        return grad_output / (ctx.slope * u.abs() + 1.0).square(), None


def spike(u: torch.Tensor, slope: float = 25.0) -> torch.Tensor:
    """H(u) (strict: 0 at u = 0) with the fast-sigmoid surrogate gradient."""
    return _FastSigmoidSpike.apply(u, slope)


def lif_step(x, mem, beta, threshold, slope=25.0):
    """One step from membrane ``mem``: returns ``(spikes, new membrane)``."""
    reset = spike(mem - threshold, slope).detach()
    mem = beta.clamp(0.0, 1.0) * mem + x - reset * threshold
    return spike(mem - threshold, slope), mem


class LIF(nn.Module):
    """A single-step LIF layer: each call is one time step and continues from the membrane the last call left;
    call ``reset()`` between sequences."""

    def __init__(self, beta: float = 0.9, threshold: float = 1.0, slope: float = 25.0):
        super().__init__()
        self.beta = nn.Parameter(torch.tensor(float(beta)))
        self.threshold = nn.Parameter(torch.tensor(float(threshold)))
        self.slope = slope
        self.mem: torch.Tensor | None = None

    def reset(self) -> None:
        self.mem = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mem = torch.zeros_like(x) if self.mem is None else self.mem
        spk, self.mem = lif_step(x, mem, self.beta, self.threshold, self.slope)
        return spk


class MultiStepLIF(nn.Module):
    """A multi-step LIF layer: ``forward(x)`` takes a whole sequence ``[T, batch, ...]`` from rest and returns its
    spikes; it keeps no state between calls."""

    def __init__(self, beta: float = 0.9, threshold: float = 1.0, slope: float = 25.0):
        super().__init__()
        self.beta = nn.Parameter(torch.tensor(float(beta)))
        self.threshold = nn.Parameter(torch.tensor(float(threshold)))
        self.slope = slope
        self.decay_input = os.environ.get(PLANTED_BUG_VARIABLE) == "1"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mem = torch.zeros_like(x[0])
        spikes = []
        for x_t in x:
            if self.decay_input:  # the planted bug: U[t] = beta (U[t-1] + x[t]) - R[t] threshold
                x_t = self.beta.clamp(0.0, 1.0) * x_t
            spk, mem = lif_step(x_t, mem, self.beta, self.threshold, self.slope)
            spikes.append(spk)
        return torch.stack(spikes)
