"""Fused multi-step LIF neurons as PyTorch operators: snntorch-style ``Leaky`` and spikingjelly-style ``LIFNode``.

One launch runs all time steps (the membrane stays on chip); with a backward to come the forward also writes the
membrane trace the reverse sweep needs (``U`` after the reset; ``V`` before it when the reset is immediate; the
charge ``H`` for the spikingjelly neuron), which is cheaper than recomputing it (a recompute reads ``x`` again and
still needs the trace in reverse order). The backward is one reverse launch implementing the spec's surrogate
gradient (:mod:`reference.surrogate`): ``dx`` and the parameter gradients (beta before its clamp, threshold,
graded_spikes_factor). Low-precision inputs keep the membrane rounded to their dtype after every step, as the
spec (which computes in ``x``'s dtype) does; arithmetic inside a step is float32 (float64 for float64 inputs).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from reference import surrogate as S

from ._runtime import kernel

RESETS = {"subtract": 0, "zero": 1, "none": 2}
SURROGATES = {"straight_through": 0, "fast_sigmoid": 1, "atan": 2, "sigmoid": 3}

#: (BLOCK, num_warps) on CUDA; the CPU interpreter uses small blocks.
CUDA_BLOCK = (512, 4)


def _src():
    from . import _src_lif

    return _src_lif


class _Kernels:
    def __getattr__(self, name: str):
        k = kernel(getattr(_src(), name + "_kernel"))
        setattr(self, name, k)
        return k


K_ = _Kernels()


def _alpha(surrogate: str, surrogate_alpha: Optional[float]) -> float:
    if surrogate not in SURROGATES:
        raise ValueError(f"surrogate must be one of {tuple(SURROGATES)}, got {surrogate!r}")
    if surrogate == "straight_through":
        return 1.0
    return float(S._TABLE[surrogate][1]["alpha"] if surrogate_alpha is None else surrogate_alpha)


def _launch_shape(x: torch.Tensor, n: int, block: tuple | None = None):
    if x.device.type == "cuda":
        size, warps = block or CUDA_BLOCK
        return size, -(-n // size), {"num_warps": warps}
    size = 16
    return size, -(-n // size), {}


def _flags(x: torch.Tensor) -> dict:
    return dict(F64=x.dtype == torch.float64, ROUND=x.dtype in (torch.bfloat16, torch.float16))


# ----------------------------------------------------------------------------------------------- Leaky

@torch.library.custom_op("qsnn_kernels::leaky", mutates_args=())
def leaky_op(x: torch.Tensor, beta: torch.Tensor, threshold: torch.Tensor, graded_spikes_factor: torch.Tensor,
             reset_mechanism: str, reset_delay: bool, surrogate: str, surrogate_alpha: Optional[float],
             save: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if reset_mechanism not in RESETS:
        raise ValueError(f"reset_mechanism must be one of {tuple(RESETS)}, got {reset_mechanism!r}")
    _alpha(surrogate, surrogate_alpha)
    x = x.contiguous()
    steps = x.shape[0]
    n = x.numel() // max(steps, 1)
    spk = torch.empty_like(x)
    u = torch.empty_like(x) if save else x.new_empty(0)
    v = torch.empty_like(x) if (save and not reset_delay) else x.new_empty(0)
    if x.numel():
        params = [p.to(x.dtype).reshape(()).contiguous() for p in (beta, threshold, graded_spikes_factor)]
        block, grid, extra = _launch_shape(x, n)
        K_.leaky_fwd(x.device, (grid,), x, spk, u if save else spk, v if v.numel() else spk, *params, steps, n,
                     RESET=RESETS[reset_mechanism], DELAY=reset_delay, SAVE=save, BLOCK=block, **_flags(x), **extra)
    return spk, u, v


@leaky_op.register_fake
def _(x, beta, threshold, graded_spikes_factor, reset_mechanism, reset_delay, surrogate, surrogate_alpha, save):
    return (torch.empty_like(x), torch.empty_like(x) if save else x.new_empty(0),
            torch.empty_like(x) if (save and not reset_delay) else x.new_empty(0))


def _leaky_setup(ctx, inputs, output):
    x, beta, threshold, gsf, reset_mechanism, reset_delay, surrogate, surrogate_alpha, save = inputs
    _, u, v = output
    ctx.save_for_backward(u, v, beta, threshold, gsf)
    ctx.options = (reset_mechanism, reset_delay, surrogate, surrogate_alpha, save)


def leaky_backward(grad_spk: torch.Tensor, u: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                   threshold: torch.Tensor, gsf: torch.Tensor, reset_mechanism: str, reset_delay: bool,
                   surrogate: str, surrogate_alpha: Optional[float]):
    """``(dx, dbeta, dthreshold, dgraded_spikes_factor)`` from the saved trace (the fused reverse sweep)."""
    grad_spk = grad_spk.contiguous()
    steps = grad_spk.shape[0]
    n = grad_spk.numel() // max(steps, 1)
    dx = torch.empty_like(grad_spk)
    params = [p.to(grad_spk.dtype).reshape(()).contiguous() for p in (beta, threshold, gsf)]
    block, grid, extra = _launch_shape(grad_spk, n)
    acc = torch.float64 if grad_spk.dtype == torch.float64 else torch.float32
    part = torch.zeros((3, grid * block), dtype=acc, device=grad_spk.device)
    if grad_spk.numel():
        K_.leaky_bwd(grad_spk.device, (grid,), grad_spk, u, v if v.numel() else u, dx, part, *params, steps, n,
                     grid, _alpha(surrogate, surrogate_alpha), RESET=RESETS[reset_mechanism], DELAY=reset_delay,
                     SURROGATE=SURROGATES[surrogate], F64=grad_spk.dtype == torch.float64, BLOCK=block, **extra)
    sums = part.sum(dim=1)
    inside = ((beta >= 0) & (beta <= 1)).to(sums.dtype)  # clamp(beta, 0, 1) passes the gradient inside [0, 1]
    return (dx, (sums[0] * inside).to(beta.dtype).reshape(beta.shape), sums[1].to(threshold.dtype).reshape(threshold.shape),
            sums[2].to(gsf.dtype).reshape(gsf.shape))


def _leaky_backward(ctx, grad_spk, grad_u, grad_v):
    u, v, beta, threshold, gsf = ctx.saved_tensors
    reset_mechanism, reset_delay, surrogate, surrogate_alpha, save = ctx.options
    if not save:
        raise RuntimeError("qsnn_kernels::leaky ran with save=False: no membrane trace for the backward")
    if grad_spk is None:
        grad_spk = torch.zeros_like(u)
    dx, db, dt, dg = leaky_backward(grad_spk, u, v, beta, threshold, gsf, reset_mechanism, reset_delay, surrogate,
                                    surrogate_alpha)
    return dx, db, dt, dg, None, None, None, None, None


leaky_op.register_autograd(_leaky_backward, setup_context=_leaky_setup)


def _loop_vmap(op, info, in_dims, args, n_tensors):
    pick = lambda t, d, i: t if d is None else t.select(d, i)  # noqa: E731
    outs = [op(*[pick(a, d, i) for a, d in zip(args[:n_tensors], in_dims[:n_tensors])], *args[n_tensors:])
            for i in range(info.batch_size)]
    return tuple(torch.stack(parts) for parts in zip(*outs)), (0,) * len(outs[0])


@torch.library.register_vmap("qsnn_kernels::leaky")
def _(info, in_dims, x, beta, threshold, gsf, *options):
    x_dim = in_dims[0]
    if all(d is None for d in in_dims[1:4]):
        if x_dim is None:
            return leaky_op(x, beta, threshold, gsf, *options), (None, None, None)
        out = leaky_op(x.movedim(x_dim, 1), beta, threshold, gsf, *options)
        return out, tuple(1 if t.dim() else None for t in out)
    return _loop_vmap(leaky_op, info, in_dims, (x, beta, threshold, gsf, *options), 4)


def _needs_grad(*tensors: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def leaky(x: torch.Tensor, *, beta, threshold=1.0, reset_mechanism: str = "subtract", reset_delay: bool = True,
          graded_spikes_factor=1.0, surrogate: str = "atan", surrogate_alpha: float | None = None,
          time_dim: int = 0) -> torch.Tensor:
    """:func:`reference.neurons.leaky` on the fused kernels (``time_dim=0``; smooth surrogates)."""
    if time_dim != 0:
        raise ValueError("the fused kernel runs time-major input (time_dim=0)")
    params = [p if isinstance(p, torch.Tensor) else x.new_tensor(float(p)) for p in (beta, threshold,
                                                                                      graded_spikes_factor)]
    return leaky_op(x, *params, reset_mechanism, reset_delay, surrogate, surrogate_alpha,
                    _needs_grad(x, *params))[0]


class Leaky(nn.Module):
    """snntorch-style ``Leaky`` over a whole ``(T, ...)`` sequence; beta, threshold and graded_spikes_factor are
    parameters (shape ``()``) as in the spec's module."""

    def __init__(self, beta: float = 0.9, threshold: float = 1.0, graded_spikes_factor: float = 1.0, *,
                 reset_mechanism: str = "subtract", reset_delay: bool = True, surrogate: str = "atan",
                 surrogate_alpha: Optional[float] = None):
        super().__init__()
        self.beta = nn.Parameter(torch.tensor(float(beta)))
        self.threshold = nn.Parameter(torch.tensor(float(threshold)))
        self.graded_spikes_factor = nn.Parameter(torch.tensor(float(graded_spikes_factor)))
        self.reset_mechanism = reset_mechanism
        self.reset_delay = bool(reset_delay)
        self.surrogate = surrogate
        self.surrogate_alpha = None if surrogate_alpha is None else float(surrogate_alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        save = torch.is_grad_enabled() and (x.requires_grad or self.beta.requires_grad
                                            or self.threshold.requires_grad
                                            or self.graded_spikes_factor.requires_grad)
        return torch.ops.qsnn_kernels.leaky(x, self.beta, self.threshold, self.graded_spikes_factor,
                                            self.reset_mechanism, self.reset_delay, self.surrogate,
                                            self.surrogate_alpha, save)[0]


# ----------------------------------------------------------------------------------------------- spikingjelly LIF

def _sj_scalars(tau: float, v_reset: Optional[float]):
    return 1.0 / float(tau), (0.0 if v_reset is None else float(v_reset))


@torch.library.custom_op("qsnn_kernels::sj_lif", mutates_args=())
def sj_lif_op(x: torch.Tensor, tau: float, decay_input: bool, v_threshold: float, v_reset: Optional[float],
              detach_reset: bool, surrogate: str, surrogate_alpha: Optional[float],
              save: bool) -> tuple[torch.Tensor, torch.Tensor]:
    _alpha(surrogate, surrogate_alpha)
    x = x.contiguous()
    steps = x.shape[0]
    n = x.numel() // max(steps, 1)
    spk = torch.empty_like(x)
    h = torch.empty_like(x) if save else x.new_empty(0)
    if x.numel():
        inv_tau, reset = _sj_scalars(tau, v_reset)
        block, grid, extra = _launch_shape(x, n)
        K_.sj_lif_fwd(x.device, (grid,), x, spk, h if save else spk, steps, n, inv_tau, float(v_threshold), reset,
                      reset, DECAY_INPUT=decay_input, SOFT=v_reset is None, SAVE=save, BLOCK=block, **_flags(x),
                      **extra)
    return spk, h


@sj_lif_op.register_fake
def _(x, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha, save):
    return torch.empty_like(x), (torch.empty_like(x) if save else x.new_empty(0))


def _sj_setup(ctx, inputs, output):
    ctx.save_for_backward(output[1])
    ctx.options = inputs[1:]


def sj_lif_backward(grad_spk: torch.Tensor, h: torch.Tensor, tau: float, decay_input: bool, v_threshold: float,
                    v_reset: Optional[float], detach_reset: bool, surrogate: str,
                    surrogate_alpha: Optional[float]) -> torch.Tensor:
    grad_spk = grad_spk.contiguous()
    steps = grad_spk.shape[0]
    n = grad_spk.numel() // max(steps, 1)
    dx = torch.empty_like(grad_spk)
    if grad_spk.numel():
        inv_tau, reset = _sj_scalars(tau, v_reset)
        block, grid, extra = _launch_shape(grad_spk, n)
        K_.sj_lif_bwd(grad_spk.device, (grid,), grad_spk, h, dx, steps, n, inv_tau, float(v_threshold), reset,
                      _alpha(surrogate, surrogate_alpha), DECAY_INPUT=decay_input, SOFT=v_reset is None,
                      DETACH=detach_reset, SURROGATE=SURROGATES[surrogate], F64=grad_spk.dtype == torch.float64,
                      BLOCK=block, **extra)
    return dx


def _sj_backward(ctx, grad_spk, grad_h):
    (h,) = ctx.saved_tensors
    tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha, save = ctx.options
    if not save:
        raise RuntimeError("qsnn_kernels::sj_lif ran with save=False: no membrane trace for the backward")
    if grad_spk is None:
        grad_spk = torch.zeros_like(h)
    dx = sj_lif_backward(grad_spk, h, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate,
                         surrogate_alpha)
    return dx, None, None, None, None, None, None, None, None


sj_lif_op.register_autograd(_sj_backward, setup_context=_sj_setup)


@torch.library.register_vmap("qsnn_kernels::sj_lif")
def _(info, in_dims, x, *options):
    if in_dims[0] is None:
        return sj_lif_op(x, *options), (None, None)
    out = sj_lif_op(x.movedim(in_dims[0], 1), *options)
    return out, tuple(1 if t.dim() else None for t in out)


def sj_lif(x: torch.Tensor, *, tau: float = 2.0, decay_input: bool = True, v_threshold: float = 1.0,
           v_reset: float | None = 0.0, detach_reset: bool = False, surrogate: str = "sigmoid",
           surrogate_alpha: float | None = None, time_dim: int = 0) -> torch.Tensor:
    """:func:`reference.neurons.sj_lif` on the fused kernels (``time_dim=0``)."""
    if time_dim != 0:
        raise ValueError("the fused kernel runs time-major input (time_dim=0)")
    return sj_lif_op(x, float(tau), decay_input, float(v_threshold), v_reset, detach_reset, surrogate,
                     surrogate_alpha, _needs_grad(x))[0]


class SJLIF(nn.Module):
    """spikingjelly-style multi-step ``LIFNode`` over ``(T, ...)`` from its reset state (no parameters)."""

    def __init__(self, tau: float = 2.0, *, decay_input: bool = True, v_threshold: float = 1.0,
                 v_reset: Optional[float] = 0.0, detach_reset: bool = False, surrogate: str = "sigmoid",
                 surrogate_alpha: Optional[float] = None):
        super().__init__()
        self.tau = float(tau)
        self.decay_input = bool(decay_input)
        self.v_threshold = float(v_threshold)
        self.v_reset = None if v_reset is None else float(v_reset)
        self.detach_reset = bool(detach_reset)
        self.surrogate = surrogate
        self.surrogate_alpha = None if surrogate_alpha is None else float(surrogate_alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        save = torch.is_grad_enabled() and x.requires_grad
        return torch.ops.qsnn_kernels.sj_lif(x, self.tau, self.decay_input, self.v_threshold, self.v_reset,
                                             self.detach_reset, self.surrogate, self.surrogate_alpha, save)[0]
