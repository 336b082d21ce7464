"""Fused multi-step LIF neurons as PyTorch operators: snntorch-style ``Leaky`` and spikingjelly-style ``LIFNode``.

One launch runs all time steps (the membrane stays on chip); with a backward to come the forward also writes the
membrane trace the reverse sweep needs (``U`` after the reset; ``V`` before it when the reset is immediate; the
charge ``H`` for the spikingjelly neuron), which is cheaper than recomputing it (a recompute reads ``x`` again and
still needs the trace in reverse order). The backward is one reverse launch implementing the spec's surrogate
gradient (:mod:`qsnn_reference.surrogate`): ``dx`` and the parameter gradients (beta before its clamp, threshold,
graded_spikes_factor). Low-precision inputs keep the membrane rounded to their dtype after every step, as the
spec (which computes in ``x``'s dtype) does; arithmetic inside a step is float32 (float64 for float64 inputs).
"""

from __future__ import annotations

import functools
import math
import struct
from typing import Optional

import torch
from torch import nn
from torch.autograd import forward_ad as _forward_ad

from qsnn_reference import surrogate as S

from ._runtime import kernel, operator, signature_once

RESETS = {"subtract": 0, "zero": 1, "none": 2}
SURROGATES = {"straight_through": 0, "fast_sigmoid": 1, "atan": 2, "sigmoid": 3}

#: (BLOCK, num_warps) on CUDA by element size in bytes, and how many steps ahead the loads go (measured on an
#: H200, docs/kernels.md); the CPU interpreter uses small blocks.
CUDA_BLOCK = {8: (512, 4), 4: (512, 4), 2: (1024, 4)}
PREFETCH = 2


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


def _launch_shape(x: torch.Tensor, n: int):
    if x.is_cuda:
        size, warps = CUDA_BLOCK[x.element_size()]
        return size, -(-n // size), {"num_warps": warps, "PREFETCH": PREFETCH}
    size = 16
    return size, -(-n // size), {"PREFETCH": PREFETCH}


def _consts(values, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The kernels' float scalars as a tensor of the arithmetic's dtype (a Python float reaches a compiled kernel
    as fp32, which rounded float64 runs' constants); cached, so a repeated call copies nothing to the device. Keyed
    by the floats' bits (a float key would take -0.0 for 0.0)."""
    values = tuple(float(v) for v in values)
    return _consts_cached(struct.pack(f"<{len(values)}d", *values), values,
                          torch.float64 if dtype == torch.float64 else torch.float32, str(device))


@functools.lru_cache(maxsize=256)
def _consts_cached(bits: bytes, values: tuple, dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=device)


def _alpha_consts(surrogate: str, surrogate_alpha: Optional[float]) -> list[float]:
    """alpha, alpha / 2 and pi / 2 * alpha, computed in double as the spec's Python floats are."""
    alpha = _alpha(surrogate, surrogate_alpha)
    return [alpha, alpha / 2.0, math.pi / 2.0 * alpha]


def _flags(x: torch.Tensor) -> dict:
    return dict(F64=x.dtype == torch.float64, ROUND=x.dtype == torch.bfloat16)


def _kernel_view(t: torch.Tensor) -> torch.Tensor:
    """Triton's interpreter (CPU) misreads bfloat16 (numpy has none): CPU bfloat16 runs as float32 (exact, since
    the kernel rounds the membrane to bfloat16 itself)."""
    return t.float() if (t.dtype == torch.bfloat16 and not t.is_cuda) else t.contiguous()


def _scalar_param(p: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A parameter as the 0-d tensor a kernel reads for input of ``dtype``. Float32 parameters go in as they are
    (the kernel widens them exactly for float64 input and rounds them to bfloat16 for bfloat16 input, as
    ``p.to(dtype)`` would): a conversion is a launch, and the host path is part of every eager call's time."""
    if p.dim():
        p = p.reshape(())
    if p.dtype != dtype and p.dtype != torch.float32:
        p = p.to(dtype)
    return p if p.is_cuda else _kernel_view(p)


def _as(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A kernel's output in the caller's dtype (only CPU bfloat16 differs: see ``_kernel_view``)."""
    return t if t.dtype == dtype else t.to(dtype)


def _check_dtype(x: torch.Tensor) -> None:
    if x.dtype not in (torch.float32, torch.float64, torch.bfloat16):
        raise TypeError(f"the LIF kernels take float32, float64 or bfloat16 input, got {x.dtype}")


def _per_time(t: torch.Tensor, bdim, size: int) -> torch.Tensor:
    """A vmapped ``(T, ...)`` tensor with its batch moved to dim 1 (materialised when unbatched)."""
    if bdim is not None:
        return t.movedim(bdim, 1)
    if t.numel() == 0:
        return t
    return t.unsqueeze(1).expand((t.shape[0], size) + tuple(t.shape[1:]))


# ----------------------------------------------------------------------------------------------- eager fast path

_compiling = torch.compiler.is_compiling
_functorch_active = torch._C._are_functorch_transforms_active
_functorch_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled
_jit_tracing = torch._C._get_tracing_state
_PLAIN = (torch.Tensor, nn.Parameter)
_STRIDED = torch.strided


def _eager(*tensors: torch.Tensor) -> bool:
    """Whether calling the operators' CPU/CUDA implementation directly does what the dispatcher would: no
    torch.compile/export tracing, torch.func transform, dispatch or function mode, jit trace or forward-AD level,
    and plain strided CPU/CUDA tensors (the dispatcher's boxing is host time on every eager call)."""
    if (_compiling() or _functorch_active() or _dispatch_modes() or _function_modes() or _jit_tracing() is not None
            or _forward_ad._current_level >= 0):
        return False
    for t in tensors:
        if type(t) not in _PLAIN or t.layout is not _STRIDED or not (t.is_cuda or t.is_cpu) or _functorch_wrapped(t):
            return False
    return True


def _c_apply_ok(*tensors: torch.Tensor) -> bool:
    """Whether ``Function.apply``'s Python layer would only pass the arguments on: it binds them to ``forward``'s
    signature (a no-op for the positional calls here), unwraps dead torch.func wrappers and sends calls under
    torch.func transforms elsewhere; dynamo must see ``apply`` itself."""
    if _compiling() or _functorch_active():
        return False
    for t in tensors:
        if _functorch_wrapped(t):
            return False
    return True


def _c_apply(function_class: type):
    """``function_class.apply`` without ``Function.apply``'s Python layer (where ``_c_apply_ok``): the C++
    ``apply``, about 4 us a call less on the CPU (``inspect.Signature.bind``)."""
    return super(torch.autograd.Function, function_class).apply


_PARAMS: dict = {}


def _param_tensor(x: torch.Tensor, value, eager: bool) -> torch.Tensor:
    """A Python-float parameter as ``x.new_tensor(value)`` (a host-to-device copy that waits for the stream on
    CUDA); in eager calls made once per value, dtype and device and kept (outside inference mode, whose tensors
    autograd cannot save). Traced calls make it each time, as before."""
    value = float(value)
    if not eager or torch.is_inference_mode_enabled():
        return x.new_tensor(value)
    key = (struct.pack("<d", value), x.dtype, x.device)
    t = _PARAMS.get(key)
    if t is None:
        if len(_PARAMS) >= 256:
            _PARAMS.clear()
        t = _PARAMS[key] = x.new_tensor(value)
    return t


# ----------------------------------------------------------------------------------------------- Leaky

def _leaky_impl(x: torch.Tensor, beta: torch.Tensor, threshold: torch.Tensor, graded_spikes_factor: torch.Tensor,
                reset_mechanism: str, reset_delay: bool, surrogate: str, surrogate_alpha: Optional[float],
                save: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Spikes, and (``save``) the membrane trace ``U`` (after reset) and ``V`` (before it; immediate reset only)."""
    if reset_mechanism not in RESETS:
        raise ValueError(f"reset_mechanism must be one of {tuple(RESETS)}, got {reset_mechanism!r}")
    _alpha(surrogate, surrogate_alpha)
    _check_dtype(x)
    xk = _kernel_view(x)
    steps = x.shape[0]
    n = x.numel() // max(steps, 1)
    spk = torch.empty_like(xk)
    u = torch.empty_like(xk) if save else xk.new_empty(0)
    v = torch.empty_like(xk) if (save and not reset_delay) else xk.new_empty(0)
    if x.numel():
        params = [_scalar_param(p, x.dtype) for p in (beta, threshold, graded_spikes_factor)]
        block, grid, extra = _launch_shape(x, n)
        K_.leaky_fwd(x.device, (grid,), xk, spk, u if save else spk, v if v.numel() else spk, *params, steps, n,
                     RESET=RESETS[reset_mechanism], DELAY=reset_delay, SAVE=save, BLOCK=block, **_flags(x), **extra)
    return _as(spk, x.dtype), _as(u, x.dtype), _as(v, x.dtype)


leaky_op = operator("leaky")(_leaky_impl)


@torch.library.register_fake("qsnn_kernels::leaky")
def _(x, beta, threshold, graded_spikes_factor, reset_mechanism, reset_delay, surrogate, surrogate_alpha, save):
    return (torch.empty_like(x), torch.empty_like(x) if save else x.new_empty(0),
            torch.empty_like(x) if (save and not reset_delay) else x.new_empty(0))


@torch.library.register_vmap("qsnn_kernels::leaky")
def _(info, in_dims, x, beta, threshold, gsf, *options):
    if any(d is not None for d in in_dims[1:4]):
        return _loop_vmap(leaky_op, info, in_dims, (x, beta, threshold, gsf, *options), 4)
    if in_dims[0] is None:
        return leaky_op(x, beta, threshold, gsf, *options), (None, None, None)
    out = leaky_op(x.movedim(in_dims[0], 1), beta, threshold, gsf, *options)
    return out, tuple(1 if t.numel() else None for t in out)


def _leaky_backward_impl(grad_spk: torch.Tensor, u: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                         threshold: torch.Tensor, graded_spikes_factor: torch.Tensor, reset_mechanism: str,
                         reset_delay: bool, surrogate: str, surrogate_alpha: Optional[float],
                         param_grads: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused reverse sweep: ``dx`` and, per neuron, the time sums of the three parameter gradients
    (``[3, *x.shape[1:]]``; beta's before its clamp), or an empty ``[0]`` when no ``param_grads`` are wanted."""
    dx, part = _leaky_backward(grad_spk, u, v, beta, threshold, graded_spikes_factor, reset_mechanism, reset_delay,
                               surrogate, surrogate_alpha, param_grads)
    if part is None:
        part = grad_spk.new_empty(0, dtype=torch.float64 if grad_spk.dtype == torch.float64 else torch.float32)
    return dx, part


def _leaky_backward(grad_spk, u, v, beta, threshold, graded_spikes_factor, reset_mechanism, reset_delay, surrogate,
                    surrogate_alpha, param_grads):
    """``_leaky_backward_impl`` with ``part`` None when no ``param_grads`` are wanted (the eager backward)."""
    dtype = grad_spk.dtype
    g = _kernel_view(grad_spk)
    steps = g.shape[0]
    n = g.numel() // max(steps, 1)
    dx = torch.empty_like(g)
    part = None
    if param_grads:  # the kernel writes every element of part when there is work (no zero-fill launch then)
        acc = torch.float64 if dtype == torch.float64 else torch.float32
        part = (torch.empty if g.numel() else torch.zeros)(_part_shape(g, True), dtype=acc, device=g.device)
    if g.numel():
        params = [_scalar_param(p, dtype) for p in (beta, threshold, graded_spikes_factor)]
        uk = _kernel_view(u)
        block, grid, extra = _launch_shape(g, n)
        consts = _consts(_alpha_consts(surrogate, surrogate_alpha), dtype, g.device)
        K_.leaky_bwd(g.device, (grid,), g, uk, _kernel_view(v) if v.numel() else uk, dx,
                     part if param_grads else dx, *params, consts, steps, n, RESET=RESETS[reset_mechanism],
                     DELAY=reset_delay, SURROGATE=SURROGATES[surrogate], PARAM_GRAD=param_grads, BLOCK=block,
                     **_flags(grad_spk), **extra)
    return _as(dx, dtype), part


leaky_backward_op = operator("leaky_backward")(_leaky_backward_impl)


def _part_shape(g: torch.Tensor, param_grads: bool) -> tuple:
    return (3,) + tuple(g.shape[1:]) if param_grads else (0,)


@torch.library.register_fake("qsnn_kernels::leaky_backward")
def _(grad_spk, u, v, beta, threshold, graded_spikes_factor, reset_mechanism, reset_delay, surrogate,
      surrogate_alpha, param_grads):
    acc = torch.float64 if grad_spk.dtype == torch.float64 else torch.float32
    return torch.empty_like(grad_spk), grad_spk.new_empty(_part_shape(grad_spk, param_grads), dtype=acc)


@torch.library.register_vmap("qsnn_kernels::leaky_backward")
def _(info, in_dims, grad_spk, u, v, beta, threshold, gsf, *options):
    if any(d is not None for d in in_dims[3:6]):
        return _loop_vmap(leaky_backward_op, info, in_dims, (grad_spk, u, v, beta, threshold, gsf, *options), 6)
    size = info.batch_size
    g, uu, vv = (_per_time(t, d, size) for t, d in zip((grad_spk, u, v), in_dims[:3]))
    dx, part = leaky_backward_op(g.contiguous(), uu.contiguous(), vv.contiguous(), beta, threshold, gsf, *options)
    return (dx, part), (1, 1 if options[-1] else None)


def _loop_vmap(op, info, in_dims, args, n_tensors):
    pick = lambda t, d, i: t if d is None else t.select(d, i)  # noqa: E731
    outs = [op(*[pick(a, d, i) for a, d in zip(args[:n_tensors], in_dims[:n_tensors])], *args[n_tensors:])
            for i in range(info.batch_size)]
    return tuple(torch.stack(parts) for parts in zip(*outs)), (0,) * len(outs[0])


@signature_once
class LeakyFunction(torch.autograd.Function):
    """Forward with the trace saved; backward by the fused reverse sweep. An ``autograd.Function`` with
    ``setup_context`` so torch.func's grad/vmap compose with it (``custom_op.register_autograd`` does not)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, beta, threshold, gsf, reset_mechanism, reset_delay, surrogate, surrogate_alpha):
        op = _leaky_impl if _eager(x, beta, threshold, gsf) else leaky_op
        return op(x, beta, threshold, gsf, reset_mechanism, reset_delay, surrogate, surrogate_alpha, True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, beta, threshold, gsf, *options = inputs
        _, u, v = output
        ctx.mark_non_differentiable(u, v)
        ctx.set_materialize_grads(False)  # no zero gradients for the trace outputs (a full pass each)
        ctx.save_for_backward(u, v, beta, threshold, gsf)
        ctx.options = tuple(options)

    @staticmethod
    def backward(ctx, grad_spk, grad_u, grad_v):
        if grad_spk is None:
            return (None,) * 8
        u, v, beta, threshold, gsf = ctx.saved_tensors
        needs = ctx.needs_input_grad
        param_grads = needs[1] or needs[2] or needs[3]
        if not torch.is_grad_enabled() and _eager(grad_spk, u, v, beta, threshold, gsf):
            dx, part = _leaky_backward(grad_spk.contiguous(), u, v, beta, threshold, gsf, *ctx.options,
                                       param_grads)
        else:
            with torch.no_grad():  # the reverse sweep is not differentiated again (no double backward)
                dx, part = leaky_backward_op(grad_spk.contiguous(), u, v, beta, threshold, gsf, *ctx.options,
                                             param_grads)
        if not param_grads:
            return dx, None, None, None, None, None, None, None
        sums = part.flatten(1).sum(1)
        inside = beta.clamp(0, 1) == beta  # clamp(beta, 0, 1) passes the gradient on [0, 1] (NaN: no); 3 launches
        return (dx, (sums[0] * inside).to(beta.dtype).reshape(beta.shape),
                sums[1].to(threshold.dtype).reshape(threshold.shape), sums[2].to(gsf.dtype).reshape(gsf.shape),
                None, None, None, None)


def _needs_grad(*tensors: torch.Tensor) -> bool:
    """Go through the autograd.Function (and save the trace) whenever grad mode is on, not only when an input
    requires grad: forward-mode AD (jvp) and ``torch.jit.trace`` see inputs that do not require grad, and must meet
    the Function (which refuses jvp loudly; which trace records with its backward) rather than the bare operator,
    whose silent zero gradient would be wrong. Inference under ``torch.no_grad()`` writes no trace."""
    return torch.is_grad_enabled()


def leaky(x: torch.Tensor, *, beta, threshold=1.0, reset_mechanism: str = "subtract", reset_delay: bool = True,
          graded_spikes_factor=1.0, surrogate: str = "atan", surrogate_alpha: float | None = None,
          time_dim: int = 0) -> torch.Tensor:
    """:func:`reference.neurons.leaky` on the fused kernels (``time_dim=0``; smooth surrogates). Under
    ``torch.no_grad()`` the forward writes no membrane trace."""
    if time_dim != 0:
        raise ValueError("the fused kernel runs time-major input (time_dim=0)")
    params = (beta, threshold, graded_spikes_factor)
    if not (isinstance(beta, torch.Tensor) and isinstance(threshold, torch.Tensor)
            and isinstance(graded_spikes_factor, torch.Tensor)):
        eager = _eager(x)
        params = [p if isinstance(p, torch.Tensor) else _param_tensor(x, p, eager) for p in params]
    options = (reset_mechanism, reset_delay, surrogate, surrogate_alpha)
    if _needs_grad(x, *params):
        return (_LEAKY_APPLY if _c_apply_ok(x, *params) else LeakyFunction.apply)(x, *params, *options)[0]
    return (_leaky_impl if _eager(x, *params) else leaky_op)(x, *params, *options, False)[0]


_LEAKY_APPLY = _c_apply(LeakyFunction)


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
        return leaky(x, beta=self.beta, threshold=self.threshold, graded_spikes_factor=self.graded_spikes_factor,
                     reset_mechanism=self.reset_mechanism, reset_delay=self.reset_delay, surrogate=self.surrogate,
                     surrogate_alpha=self.surrogate_alpha)


# ----------------------------------------------------------------------------------------------- spikingjelly LIF

def _sj_scalars(tau: float, v_reset: Optional[float]):
    return 1.0 / float(tau), (0.0 if v_reset is None else float(v_reset))


def _sj_lif_impl(x: torch.Tensor, tau: float, decay_input: bool, v_threshold: float, v_reset: Optional[float],
                 detach_reset: bool, surrogate: str, surrogate_alpha: Optional[float],
                 save: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Spikes, and (``save``) the charges ``H`` the backward needs."""
    _alpha(surrogate, surrogate_alpha)
    _check_dtype(x)
    xk = _kernel_view(x)
    steps = x.shape[0]
    n = x.numel() // max(steps, 1)
    spk = torch.empty_like(xk)
    h = torch.empty_like(xk) if save else xk.new_empty(0)
    if x.numel():
        inv_tau, reset = _sj_scalars(tau, v_reset)
        block, grid, extra = _launch_shape(x, n)
        consts = _consts([inv_tau, float(v_threshold), reset, reset], x.dtype, x.device)
        K_.sj_lif_fwd(x.device, (grid,), xk, spk, h if save else spk, consts, steps, n, DECAY_INPUT=decay_input,
                      SOFT=v_reset is None, SAVE=save, BLOCK=block, **_flags(x), **extra)
    return _as(spk, x.dtype), _as(h, x.dtype)


sj_lif_op = operator("sj_lif")(_sj_lif_impl)


@torch.library.register_fake("qsnn_kernels::sj_lif")
def _(x, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha, save):
    return torch.empty_like(x), (torch.empty_like(x) if save else x.new_empty(0))


@torch.library.register_vmap("qsnn_kernels::sj_lif")
def _(info, in_dims, x, *options):
    if in_dims[0] is None:
        return sj_lif_op(x, *options), (None, None)
    out = sj_lif_op(x.movedim(in_dims[0], 1), *options)
    return out, tuple(1 if t.numel() else None for t in out)


def _sj_lif_backward_impl(grad_spk: torch.Tensor, h: torch.Tensor, tau: float, decay_input: bool,
                          v_threshold: float, v_reset: Optional[float], detach_reset: bool, surrogate: str,
                          surrogate_alpha: Optional[float]) -> torch.Tensor:
    """The fused reverse sweep: ``dx`` from ``dL/dspk`` and the saved charges."""
    dtype = grad_spk.dtype
    g = _kernel_view(grad_spk)
    steps = g.shape[0]
    n = g.numel() // max(steps, 1)
    dx = torch.empty_like(g)
    if g.numel():
        inv_tau, reset = _sj_scalars(tau, v_reset)
        block, grid, extra = _launch_shape(g, n)
        consts = _consts([inv_tau, float(v_threshold), reset, *_alpha_consts(surrogate, surrogate_alpha)], dtype,
                         g.device)
        K_.sj_lif_bwd(g.device, (grid,), g, _kernel_view(h), dx, consts, steps, n, DECAY_INPUT=decay_input,
                      SOFT=v_reset is None, DETACH=detach_reset, SURROGATE=SURROGATES[surrogate],
                      F64=dtype == torch.float64, BLOCK=block, **extra)
    return _as(dx, dtype)


sj_lif_backward_op = operator("sj_lif_backward")(_sj_lif_backward_impl)


@torch.library.register_fake("qsnn_kernels::sj_lif_backward")
def _(grad_spk, h, *options):
    return torch.empty_like(grad_spk)


@torch.library.register_vmap("qsnn_kernels::sj_lif_backward")
def _(info, in_dims, grad_spk, h, *options):
    g, hh = (_per_time(t, d, info.batch_size) for t, d in zip((grad_spk, h), in_dims[:2]))
    return sj_lif_backward_op(g.contiguous(), hh.contiguous(), *options), 1


@signature_once
class SJLIFFunction(torch.autograd.Function):
    """Forward with the charges saved; backward by the fused reverse sweep (see :class:`LeakyFunction`)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha):
        op = _sj_lif_impl if _eager(x) else sj_lif_op
        return op(x, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha, True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(False)  # no zero gradient for the charge trace (a full pass)
        ctx.save_for_backward(output[1])
        ctx.options = tuple(inputs[1:])

    @staticmethod
    def backward(ctx, grad_spk, grad_h):
        if grad_spk is None:
            return (None,) * 8
        (h,) = ctx.saved_tensors
        if not torch.is_grad_enabled() and _eager(grad_spk, h):
            dx = _sj_lif_backward_impl(grad_spk.contiguous(), h, *ctx.options)
        else:
            with torch.no_grad():  # the reverse sweep is not differentiated again (no double backward)
                dx = sj_lif_backward_op(grad_spk.contiguous(), h, *ctx.options)
        return dx, None, None, None, None, None, None, None


def sj_lif(x: torch.Tensor, *, tau: float = 2.0, decay_input: bool = True, v_threshold: float = 1.0,
           v_reset: float | None = 0.0, detach_reset: bool = False, surrogate: str = "sigmoid",
           surrogate_alpha: float | None = None, time_dim: int = 0) -> torch.Tensor:
    """:func:`reference.neurons.sj_lif` on the fused kernels (``time_dim=0``)."""
    if time_dim != 0:
        raise ValueError("the fused kernel runs time-major input (time_dim=0)")
    options = (float(tau), bool(decay_input), float(v_threshold), None if v_reset is None else float(v_reset),
               bool(detach_reset), surrogate, None if surrogate_alpha is None else float(surrogate_alpha))
    if _needs_grad(x):
        return (_SJ_LIF_APPLY if _c_apply_ok(x) else SJLIFFunction.apply)(x, *options)[0]
    return (_sj_lif_impl if _eager(x) else sj_lif_op)(x, *options, False)[0]


_SJ_LIF_APPLY = _c_apply(SJLIFFunction)


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
        return sj_lif(x, tau=self.tau, decay_input=self.decay_input, v_threshold=self.v_threshold,
                      v_reset=self.v_reset, detach_reset=self.detach_reset, surrogate=self.surrogate,
                      surrogate_alpha=self.surrogate_alpha)
