"""Spiking neurons as explicit step functions and time rollouts: no modules, no hidden state.

Per neuron family ``<n>``:

- ``<n>_step(x, *state, **hyper) -> (spk, *new_state)``: one time step, exactly as the library orders it;
- ``<n>_trace(x, **hyper) -> (spk, margin)``: the rollout over time from the library's initial state, with the signed
  distance ``margin`` (the membrane that was compared, minus the threshold) per output element;
- ``<n>(x, **hyper) -> spk``: the rollout's spikes; this is the spec.

``x`` has shape ``(T, B, ...)`` (``time_dim=0``, time-major) or ``(B, T, ...)`` (``time_dim=1``); the output has
``x``'s shape and dtype. The time loop is a Python loop over the static ``T``. Tensor parameters (``beta``,
``threshold``, ...) may be Python floats or tensors of shape ``()`` or broadcastable to one time step of ``x``; they
are cast to ``x``'s dtype. Every spike ``H(u)`` has the surrogate gradient named by ``surrogate``
(:mod:`qsnn_reference.surrogate`), ``surrogate_alpha`` setting its primary parameter (``None``: the surrogate's default).

Library families and the source they follow (the code, where the code and the docstring disagree; see each
docstring): snntorch 1.0 ``Leaky``, ``Synaptic``, ``Alpha``, ``Lapicque``, ``RLeaky``, ``RSynaptic``
(strict spikes ``u > 0``); spikingjelly 2.0 ``IFNode``, ``LIFNode``, ``ParametricLIFNode`` (``u >= 0``);
norse 1.1 ``lif_feed_forward_step``, ``lif_box_feed_forward_step`` (``u > 0``); sinabs 3.1 ``IAF``, ``LIF``
(``u >= 0``).

>>> import torch
>>> leaky(torch.full((3, 1, 1), 0.6), beta=0.5, threshold=1.0).flatten().tolist()
[0.0, 0.0, 1.0]
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from qsnn_reference import _validate
from qsnn_reference.surrogate import SURROGATES
from qsnn_reference.surrogate import spike as _surrogate_spike

RESET_MECHANISMS = ("subtract", "zero", "none")

_Num = "float | torch.Tensor"


# --- shared helpers ------------------------------------------------------------------------------------------------

def _cast(value: Any, x: torch.Tensor) -> Any:
    return value.to(x.dtype) if isinstance(value, torch.Tensor) else value


def _clamp01(value: Any) -> Any:
    return value.clamp(0, 1) if isinstance(value, torch.Tensor) else min(max(value, 0.0), 1.0)


def _log(value: Any) -> Any:
    return torch.log(value) if isinstance(value, torch.Tensor) else math.log(value)


def _exp(value: Any) -> Any:
    return torch.exp(value) if isinstance(value, torch.Tensor) else math.exp(value)


def _bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")


def _check_surrogate(surrogate: str, surrogate_alpha: Any) -> None:
    _validate.one_of("surrogate", surrogate, SURROGATES)
    if surrogate_alpha is not None:
        _validate.positive("surrogate_alpha", surrogate_alpha)


def _check_snn(x: torch.Tensor, threshold: Any, reset_mechanism: str) -> None:
    _validate.floating("x", x)
    _validate.in_range("threshold", threshold)
    _validate.one_of("reset_mechanism", reset_mechanism, RESET_MECHANISMS)


def _greater(name: str, value: Any, other_name: str, other: Any) -> None:
    """``value > other`` elementwise, checked when both are Python numbers or plain eager tensors."""
    concrete = [not isinstance(v, torch.Tensor) or _validate._concrete(v) for v in (value, other)]
    if all(concrete) and not bool(torch.all(torch.as_tensor(value) > torch.as_tensor(other))):
        raise ValueError(f"{name} must be greater than {other_name}")


def _fire(u: torch.Tensor, surrogate: str, surrogate_alpha: Any, strict: bool, **params: float) -> torch.Tensor:
    return _surrogate_spike(u, surrogate=surrogate, alpha=surrogate_alpha, strict=strict, **params)


def _rollout(core: Callable, x: torch.Tensor, state: tuple, time_dim: int, **hyper: Any):
    """Run ``core(x_t, state, **hyper) -> (spk, margin, state)`` over time; return stacked ``(spk, margin)``."""
    _validate.one_of("time_dim", time_dim, (0, 1))
    _validate.ndim_at_least("x", x, 1 + time_dim)
    xs = x if time_dim == 0 else x.transpose(0, 1)
    spikes, margins = [], []
    for t in range(xs.shape[0]):
        spk, margin, state = core(xs[t], state, **hyper)
        spikes.append(spk)
        margins.append(margin)
    spk, margin = torch.stack(spikes), torch.stack(margins)
    if time_dim == 1:
        spk, margin = spk.transpose(0, 1), margin.transpose(0, 1)
    return spk, margin


def _zeros(x: torch.Tensor, time_dim: int) -> torch.Tensor:
    return torch.zeros_like(x.select(time_dim, 0))


# --- snntorch: reset from the previous step (reset_delay) --------------------------------------------------------

def _snn_reset(mem_prev, threshold, surrogate, surrogate_alpha):
    # snntorch's mem_reset: the spike of the stored membrane, through the same spike function, then detached.
    return _fire(mem_prev - threshold, surrogate, surrogate_alpha, True).detach()


def _snn_immediate(mem, spk_unit, reset, threshold, reset_mechanism):
    # snntorch's reset_delay=False branch: do_reset = spk / graded_spikes_factor - reset (not detached).
    do_reset = spk_unit - reset
    if reset_mechanism == "subtract":
        return mem - do_reset * threshold
    if reset_mechanism == "zero":
        return mem - do_reset * mem
    return mem


def _leaky_core(x, state, *, beta, threshold, reset_mechanism, reset_delay, graded_spikes_factor, surrogate,
                surrogate_alpha):
    (mem,) = state
    beta, threshold, gsf = _clamp01(_cast(beta, x)), _cast(threshold, x), _cast(graded_spikes_factor, x)
    reset = _snn_reset(mem, threshold, surrogate, surrogate_alpha)
    if reset_mechanism == "subtract":
        mem = beta * mem + x - reset * threshold
    elif reset_mechanism == "zero":
        mem = beta * ((1 - reset) * mem) + x
    else:
        mem = beta * mem + x
    margin = mem - threshold
    spk = _fire(margin, surrogate, surrogate_alpha, True) * gsf
    if not reset_delay:
        mem = _snn_immediate(mem, spk / gsf, reset, threshold, reset_mechanism)
    return spk, margin, (mem,)


def _check_leaky(x, beta, threshold, reset_mechanism, reset_delay, graded_spikes_factor, surrogate, surrogate_alpha):
    _check_snn(x, threshold, reset_mechanism)
    _validate.in_range("beta", beta, 0.0, 1.0)
    _bool("reset_delay", reset_delay)
    _validate.in_range("graded_spikes_factor", graded_spikes_factor)
    _check_surrogate(surrogate, surrogate_alpha)


def leaky_step(x: torch.Tensor, mem: torch.Tensor, *, beta: _Num, threshold: _Num = 1.0,
               reset_mechanism: str = "subtract", reset_delay: bool = True, graded_spikes_factor: _Num = 1.0,
               surrogate: str = "atan", surrogate_alpha: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of :func:`leaky` (snntorch ``Leaky.forward(x, mem) -> (spk, mem)``)."""
    _check_leaky(x, beta, threshold, reset_mechanism, reset_delay, graded_spikes_factor, surrogate, surrogate_alpha)
    spk, _, (mem,) = _leaky_core(x, (mem,), beta=beta, threshold=threshold, reset_mechanism=reset_mechanism,
                                 reset_delay=reset_delay, graded_spikes_factor=graded_spikes_factor,
                                 surrogate=surrogate, surrogate_alpha=surrogate_alpha)
    return spk, mem


def leaky_trace(x: torch.Tensor, *, beta: _Num, threshold: _Num = 1.0, reset_mechanism: str = "subtract",
                reset_delay: bool = True, graded_spikes_factor: _Num = 1.0, surrogate: str = "atan",
                surrogate_alpha: float | None = None, time_dim: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`leaky` and its margin ``U[t] - threshold`` (``U[t]`` before an immediate reset)."""
    _check_leaky(x, beta, threshold, reset_mechanism, reset_delay, graded_spikes_factor, surrogate, surrogate_alpha)
    return _rollout(_leaky_core, x, (_zeros(x, time_dim),), time_dim, beta=beta, threshold=threshold,
                    reset_mechanism=reset_mechanism, reset_delay=reset_delay,
                    graded_spikes_factor=graded_spikes_factor, surrogate=surrogate, surrogate_alpha=surrogate_alpha)


def leaky(x: torch.Tensor, *, beta: _Num, threshold: _Num = 1.0, reset_mechanism: str = "subtract",
          reset_delay: bool = True, graded_spikes_factor: _Num = 1.0, surrogate: str = "atan",
          surrogate_alpha: float | None = None, time_dim: int = 0) -> torch.Tensor:
    """First-order discrete LIF neuron, as snntorch 1.0 ``Leaky`` computes it.

    Forward:  from ``U[-1] = 0``, with ``b = clamp(beta, 0, 1)``, ``thr = threshold``, ``g = graded_spikes_factor``:
              ``R[t] = H(U[t-1] - thr)``, detached (the stored membrane's spike, recomputed);
              ``"subtract"``: ``U[t] = b U[t-1] + x[t] - R[t] thr``;
              ``"zero"``:     ``U[t] = b (1 - R[t]) U[t-1] + x[t]`` (snntorch's code: the *input is kept*; its
              docstring says ``U[t] = bU + I - R(bU + I)``, which also drops the input);
              ``"none"``:     ``U[t] = b U[t-1] + x[t]``;
              ``S[t] = g H(U[t] - thr)`` (strict: ``U > thr``).
              ``reset_delay=False`` then resets in the same step: ``D = S[t]/g - R[t]`` (not detached),
              ``"subtract"``: ``U[t] -= D thr``, ``"zero"``: ``U[t] -= D U[t]`` (net effect for ``"subtract"``:
              ``U[t] = b U[t-1] + x[t] - H(U[t] - thr) thr``, the reset carrying the spike's surrogate gradient).
              The stored ``U[t]`` is the next step's ``U[t-1]``.
    Backward: autograd through the above; ``dH/du`` is ``surrogate``'s derivative (snntorch default ``atan``,
              alpha 2). ``R`` is detached; ``clamp`` passes the gradient inside ``[0, 1]``.
    Dtype:    output and computation in ``x``'s dtype (tensor parameters are cast to it).
    Shape:    ``x``: ``(T, B, ...)`` for ``time_dim=0``, ``(B, T, ...)`` for ``time_dim=1``; output = ``x``'s shape;
              ``beta``, ``threshold``, ``graded_spikes_factor`` broadcast against one time step.
    """
    return leaky_trace(x, beta=beta, threshold=threshold, reset_mechanism=reset_mechanism, reset_delay=reset_delay,
                       graded_spikes_factor=graded_spikes_factor, surrogate=surrogate,
                       surrogate_alpha=surrogate_alpha, time_dim=time_dim)[0]


def _synaptic_core(x, state, *, alpha, beta, threshold, reset_mechanism, reset_delay, surrogate, surrogate_alpha,
                   recurrent=None):
    syn, mem = state[-2:]
    alpha, beta, threshold = _clamp01(_cast(alpha, x)), _clamp01(_cast(beta, x)), _cast(threshold, x)
    drive = x if recurrent is None else x + recurrent(state[0])
    reset = _snn_reset(mem, threshold, surrogate, surrogate_alpha)
    syn = alpha * syn + drive
    mem = beta * mem + syn
    if reset_mechanism == "subtract":
        mem = mem - reset * threshold
    elif reset_mechanism == "zero":
        mem = mem - mem * reset
    margin = mem - threshold
    spk = _fire(margin, surrogate, surrogate_alpha, True)
    if not reset_delay:
        mem = _snn_immediate(mem, spk, reset, threshold, reset_mechanism)
    new_state = (syn, mem) if recurrent is None else (spk, syn, mem)
    return spk, margin, new_state


def _check_synaptic(x, alpha, beta, threshold, reset_mechanism, reset_delay, surrogate, surrogate_alpha):
    _check_snn(x, threshold, reset_mechanism)
    _validate.in_range("alpha", alpha, 0.0, 1.0)
    _validate.in_range("beta", beta, 0.0, 1.0)
    _bool("reset_delay", reset_delay)
    _check_surrogate(surrogate, surrogate_alpha)


def synaptic_step(x: torch.Tensor, syn: torch.Tensor, mem: torch.Tensor, *, alpha: _Num, beta: _Num,
                  threshold: _Num = 1.0, reset_mechanism: str = "subtract", reset_delay: bool = True,
                  surrogate: str = "atan", surrogate_alpha: float | None = None):
    """One step of :func:`synaptic` (snntorch ``Synaptic.forward(x, syn, mem) -> (spk, syn, mem)``)."""
    _check_synaptic(x, alpha, beta, threshold, reset_mechanism, reset_delay, surrogate, surrogate_alpha)
    spk, _, (syn, mem) = _synaptic_core(x, (syn, mem), alpha=alpha, beta=beta, threshold=threshold,
                                        reset_mechanism=reset_mechanism, reset_delay=reset_delay,
                                        surrogate=surrogate, surrogate_alpha=surrogate_alpha)
    return spk, syn, mem


def synaptic_trace(x: torch.Tensor, *, alpha: _Num, beta: _Num, threshold: _Num = 1.0,
                   reset_mechanism: str = "subtract", reset_delay: bool = True, surrogate: str = "atan",
                   surrogate_alpha: float | None = None, time_dim: int = 0):
    """:func:`synaptic` and its margin ``U[t] - threshold``."""
    _check_synaptic(x, alpha, beta, threshold, reset_mechanism, reset_delay, surrogate, surrogate_alpha)
    zero = _zeros(x, time_dim)
    return _rollout(_synaptic_core, x, (zero, zero), time_dim, alpha=alpha, beta=beta, threshold=threshold,
                    reset_mechanism=reset_mechanism, reset_delay=reset_delay, surrogate=surrogate,
                    surrogate_alpha=surrogate_alpha)


def synaptic(x: torch.Tensor, *, alpha: _Num, beta: _Num, threshold: _Num = 1.0, reset_mechanism: str = "subtract",
             reset_delay: bool = True, surrogate: str = "atan", surrogate_alpha: float | None = None,
             time_dim: int = 0) -> torch.Tensor:
    """Second-order LIF neuron (synaptic current + membrane), as snntorch 1.0 ``Synaptic`` computes it.

    Forward:  from ``I[-1] = U[-1] = 0``, with ``a = clamp(alpha, 0, 1)``, ``b = clamp(beta, 0, 1)``:
              ``R[t] = H(U[t-1] - thr)`` detached; ``I[t] = a I[t-1] + x[t]``; ``V = b U[t-1] + I[t]``;
              ``"subtract"``: ``U[t] = V - R[t] thr``; ``"zero"``: ``U[t] = V - R[t] V`` (here the *whole* update
              is zeroed, unlike :func:`leaky`; ``I`` is never reset); ``"none"``: ``U[t] = V``;
              ``S[t] = H(U[t] - thr)`` (strict). ``reset_delay=False``: ``D = S[t] - R[t]``, ``"subtract"``:
              ``U[t] -= D thr``, ``"zero"``: ``U[t] -= D U[t]``.
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative; ``R`` detached.
    Dtype:    follows ``x``.
    Shape:    as :func:`leaky`.
    """
    return synaptic_trace(x, alpha=alpha, beta=beta, threshold=threshold, reset_mechanism=reset_mechanism,
                          reset_delay=reset_delay, surrogate=surrogate, surrogate_alpha=surrogate_alpha,
                          time_dim=time_dim)[0]


# --- snntorch Alpha ---------------------------------------------------------------------------------------------

def _alpha_core(x, state, *, alpha, beta, threshold, reset_mechanism, surrogate, surrogate_alpha):
    exc, inh, mem = state
    a, b, threshold = _clamp01(_cast(alpha, x)), _clamp01(_cast(beta, x)), _cast(threshold, x)
    reset = _snn_reset(mem, threshold, surrogate, surrogate_alpha)
    exc_new = a * exc + x
    inh_new = b * inh - x
    tau_alpha = _log(a) / (_log(b) - _log(a)) + 1
    mem_new = tau_alpha * (exc_new + inh_new)
    if reset_mechanism == "subtract":
        exc_new = exc_new - threshold * reset
        inh_new = inh_new - (b * inh - x) * reset
        mem_new = mem_new + inh * reset
    elif reset_mechanism == "zero":
        exc_new = exc_new - exc_new * reset
        inh_new = inh_new - inh_new * reset
        mem_new = mem_new - mem_new * reset
    margin = mem_new - threshold
    spk = _fire(margin, surrogate, surrogate_alpha, True)
    return spk, margin, (exc_new, inh_new, mem_new)


def _check_alpha(x, alpha, beta, threshold, reset_mechanism, surrogate, surrogate_alpha):
    _check_snn(x, threshold, reset_mechanism)
    _validate.in_range("alpha", alpha, 0.0, 1.0, low_open=True)
    _validate.in_range("beta", beta, 0.0, 1.0, low_open=True, high_open=True)
    _greater("alpha", alpha, "beta", beta)
    _check_surrogate(surrogate, surrogate_alpha)


def alpha_step(x: torch.Tensor, syn_exc: torch.Tensor, syn_inh: torch.Tensor, mem: torch.Tensor, *, alpha: _Num,
               beta: _Num, threshold: _Num = 1.0, reset_mechanism: str = "zero", surrogate: str = "atan",
               surrogate_alpha: float | None = None):
    """One step of :func:`alpha_neuron` (snntorch ``Alpha.forward -> (spk, syn_exc, syn_inh, mem)``)."""
    _check_alpha(x, alpha, beta, threshold, reset_mechanism, surrogate, surrogate_alpha)
    spk, _, state = _alpha_core(x, (syn_exc, syn_inh, mem), alpha=alpha, beta=beta, threshold=threshold,
                                reset_mechanism=reset_mechanism, surrogate=surrogate, surrogate_alpha=surrogate_alpha)
    return (spk, *state)


def alpha_trace(x: torch.Tensor, *, alpha: _Num, beta: _Num, threshold: _Num = 1.0, reset_mechanism: str = "zero",
                surrogate: str = "atan", surrogate_alpha: float | None = None, time_dim: int = 0):
    """:func:`alpha_neuron` and its margin ``U[t] - threshold``."""
    _check_alpha(x, alpha, beta, threshold, reset_mechanism, surrogate, surrogate_alpha)
    zero = _zeros(x, time_dim)
    return _rollout(_alpha_core, x, (zero, zero, zero), time_dim, alpha=alpha, beta=beta, threshold=threshold,
                    reset_mechanism=reset_mechanism, surrogate=surrogate, surrogate_alpha=surrogate_alpha)


def alpha_neuron(x: torch.Tensor, *, alpha: _Num, beta: _Num, threshold: _Num = 1.0, reset_mechanism: str = "zero",
                 surrogate: str = "atan", surrogate_alpha: float | None = None, time_dim: int = 0) -> torch.Tensor:
    """Alpha-kernel neuron (excitatory and inhibitory currents), as snntorch 1.0 ``Alpha`` computes it.

    Forward:  from zero state, ``a = clamp(alpha, 0, 1) > b = clamp(beta, 0, 1)``, ``R[t] = H(U[t-1] - thr)``
              detached: ``E = a E[t-1] + x[t]``, ``F = b N[t-1] - x[t]``,
              ``tau = log(a) / (log(b) - log(a)) + 1`` (the code; the docstring prints
              ``log(a)/log(b) - log(a) + 1``), ``V = tau (E + F)``;
              ``"zero"`` (snntorch's default): ``E[t], N[t], U[t] = (E, F, V) * (1 - R[t])``;
              ``"subtract"`` (the code): ``E[t] = E - thr R``, ``N[t] = F - (b N[t-1] - x[t]) R`` (= ``F (1 - R)``),
              ``U[t] = V + N[t-1] R``; ``"none"``: ``(E, F, V)``. ``S[t] = H(U[t] - thr)`` (strict).
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative; ``R`` detached.
    Dtype:    follows ``x``.
    Shape:    as :func:`leaky`.
    """
    return alpha_trace(x, alpha=alpha, beta=beta, threshold=threshold, reset_mechanism=reset_mechanism,
                       surrogate=surrogate, surrogate_alpha=surrogate_alpha, time_dim=time_dim)[0]


# --- snntorch Lapicque ------------------------------------------------------------------------------------------

def _lapicque_core(x, state, *, threshold, R, C, time_step, reset_mechanism, surrogate, surrogate_alpha):
    (mem,) = state
    threshold = _cast(threshold, x)
    reset = _snn_reset(mem, threshold, surrogate, surrogate_alpha)
    base = x * R * (1 / (R * C)) * time_step + (1 - time_step / (R * C)) * mem
    if reset_mechanism == "subtract":
        mem = base - reset * threshold
    elif reset_mechanism == "zero":
        mem = base - reset * base
    else:
        mem = base
    margin = mem - threshold
    return _fire(margin, surrogate, surrogate_alpha, True), margin, (mem,)


def _check_lapicque(x, threshold, R, C, time_step, reset_mechanism, surrogate, surrogate_alpha):
    _check_snn(x, threshold, reset_mechanism)
    _validate.positive("R", R)
    _validate.positive("C", C)
    _validate.positive("time_step", time_step)
    _validate.in_range("time_step", time_step, None, R * C)
    _check_surrogate(surrogate, surrogate_alpha)


def lapicque_step(x: torch.Tensor, mem: torch.Tensor, *, threshold: _Num = 1.0, R: float = 1.0, C: float = 1.0,
                  time_step: float = 1e-3, reset_mechanism: str = "subtract", surrogate: str = "atan",
                  surrogate_alpha: float | None = None):
    """One step of :func:`lapicque` (snntorch ``Lapicque.forward(x, mem) -> (spk, mem)``)."""
    _check_lapicque(x, threshold, R, C, time_step, reset_mechanism, surrogate, surrogate_alpha)
    spk, _, (mem,) = _lapicque_core(x, (mem,), threshold=threshold, R=R, C=C, time_step=time_step,
                                    reset_mechanism=reset_mechanism, surrogate=surrogate,
                                    surrogate_alpha=surrogate_alpha)
    return spk, mem


def lapicque_trace(x: torch.Tensor, *, threshold: _Num = 1.0, R: float = 1.0, C: float = 1.0, time_step: float = 1e-3,
                   reset_mechanism: str = "subtract", surrogate: str = "atan", surrogate_alpha: float | None = None,
                   time_dim: int = 0):
    """:func:`lapicque` and its margin ``U[t] - threshold``."""
    _check_lapicque(x, threshold, R, C, time_step, reset_mechanism, surrogate, surrogate_alpha)
    return _rollout(_lapicque_core, x, (_zeros(x, time_dim),), time_dim, threshold=threshold, R=R, C=C,
                    time_step=time_step, reset_mechanism=reset_mechanism, surrogate=surrogate,
                    surrogate_alpha=surrogate_alpha)


def lapicque(x: torch.Tensor, *, threshold: _Num = 1.0, R: float = 1.0, C: float = 1.0, time_step: float = 1e-3,
             reset_mechanism: str = "subtract", surrogate: str = "atan", surrogate_alpha: float | None = None,
             time_dim: int = 0) -> torch.Tensor:
    """RC-circuit LIF neuron, as snntorch 1.0 ``Lapicque`` computes it (forward Euler, not ``beta``).

    Forward:  from ``U[-1] = 0``, ``R[t] = H(U[t-1] - thr)`` detached,
              ``V = x[t] R (1 / (R C)) T + (1 - T / (R C)) U[t-1]`` with ``T = time_step``;
              ``"subtract"``: ``U[t] = V - R[t] thr``; ``"zero"``: ``U[t] = V - R[t] V``; ``"none"``: ``V``;
              ``S[t] = H(U[t] - thr)`` (strict). snntorch computes ``beta = exp(-T/(RC))`` but never uses it in the
              update: the decay is ``1 - T/(RC)``; built from ``beta`` alone snntorch sets ``R = 1``,
              ``C = T / log(1/beta)``, so the decay is ``1 + log(beta)`` and the input gain ``log(1/beta)``.
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative; ``R[t]`` detached.
    Dtype:    follows ``x``.
    Shape:    as :func:`leaky`. ``R``, ``C``, ``time_step`` are Python floats with ``0 < time_step <= R C``.
    """
    return lapicque_trace(x, threshold=threshold, R=R, C=C, time_step=time_step, reset_mechanism=reset_mechanism,
                          surrogate=surrogate, surrogate_alpha=surrogate_alpha, time_dim=time_dim)[0]


# --- snntorch recurrent: RLeaky, RSynaptic -----------------------------------------------------------------------

def _recurrent(x, V, recurrent_bias, all_to_all):
    V = _cast(V, x)
    if all_to_all:
        bias = _cast(recurrent_bias, x)
        return lambda spk: torch.nn.functional.linear(spk, V, bias)
    return lambda spk: spk * V


def _check_recurrent(x, V, recurrent_bias, all_to_all):
    _bool("all_to_all", all_to_all)
    if all_to_all:
        if not isinstance(V, torch.Tensor) or V.dim() != 2 or V.shape[0] != V.shape[1] or V.shape[1] != x.shape[-1]:
            raise ValueError(f"V must be a square (N, N) tensor with N = x.shape[-1] = {x.shape[-1]} when "
                             f"all_to_all=True, got {getattr(V, 'shape', V)}")
        if recurrent_bias is not None and tuple(recurrent_bias.shape) != (x.shape[-1],):
            raise ValueError(f"recurrent_bias must have shape ({x.shape[-1]},), got {tuple(recurrent_bias.shape)}")
    else:
        _validate.in_range("V", V)
        if recurrent_bias is not None:
            raise ValueError("recurrent_bias must be None when all_to_all=False (one-to-one V has no bias)")


def _rleaky_core(x, state, *, beta, threshold, V, recurrent_bias, all_to_all, reset_mechanism, reset_delay,
                 surrogate, surrogate_alpha):
    spk_prev, mem = state
    beta, threshold = _clamp01(_cast(beta, x)), _cast(threshold, x)
    reset = _snn_reset(mem, threshold, surrogate, surrogate_alpha)
    base = beta * mem + x + _recurrent(x, V, recurrent_bias, all_to_all)(spk_prev)
    if reset_mechanism == "subtract":
        mem = base - reset * threshold
    elif reset_mechanism == "zero":
        mem = base - reset * base
    else:
        mem = base
    margin = mem - threshold
    spk = _fire(margin, surrogate, surrogate_alpha, True)
    if not reset_delay:
        mem = _snn_immediate(mem, spk, reset, threshold, reset_mechanism)
    return spk, margin, (spk, mem)


def _check_rleaky(x, beta, threshold, V, recurrent_bias, all_to_all, reset_mechanism, reset_delay, surrogate,
                  surrogate_alpha):
    _check_snn(x, threshold, reset_mechanism)
    _validate.in_range("beta", beta, 0.0, 1.0)
    _check_recurrent(x, V, recurrent_bias, all_to_all)
    _bool("reset_delay", reset_delay)
    _check_surrogate(surrogate, surrogate_alpha)


def rleaky_step(x: torch.Tensor, spk: torch.Tensor, mem: torch.Tensor, *, beta: _Num, V: _Num = 1.0,
                recurrent_bias: torch.Tensor | None = None, all_to_all: bool = False, threshold: _Num = 1.0,
                reset_mechanism: str = "subtract", reset_delay: bool = True, surrogate: str = "atan",
                surrogate_alpha: float | None = None):
    """One step of :func:`rleaky` (snntorch ``RLeaky.forward(x, spk, mem) -> (spk, mem)``)."""
    _check_rleaky(x, beta, threshold, V, recurrent_bias, all_to_all, reset_mechanism, reset_delay, surrogate,
                  surrogate_alpha)
    spk, _, (_, mem) = _rleaky_core(x, (spk, mem), beta=beta, threshold=threshold, V=V,
                                    recurrent_bias=recurrent_bias, all_to_all=all_to_all,
                                    reset_mechanism=reset_mechanism, reset_delay=reset_delay, surrogate=surrogate,
                                    surrogate_alpha=surrogate_alpha)
    return spk, mem


def rleaky_trace(x: torch.Tensor, *, beta: _Num, V: _Num = 1.0, recurrent_bias: torch.Tensor | None = None,
                 all_to_all: bool = False, threshold: _Num = 1.0, reset_mechanism: str = "subtract",
                 reset_delay: bool = True, surrogate: str = "atan", surrogate_alpha: float | None = None,
                 time_dim: int = 0):
    """:func:`rleaky` and its margin ``U[t] - threshold``."""
    _check_rleaky(x, beta, threshold, V, recurrent_bias, all_to_all, reset_mechanism, reset_delay, surrogate,
                  surrogate_alpha)
    zero = _zeros(x, time_dim)
    return _rollout(_rleaky_core, x, (zero, zero), time_dim, beta=beta, threshold=threshold, V=V,
                    recurrent_bias=recurrent_bias, all_to_all=all_to_all, reset_mechanism=reset_mechanism,
                    reset_delay=reset_delay, surrogate=surrogate, surrogate_alpha=surrogate_alpha)


def rleaky(x: torch.Tensor, *, beta: _Num, V: _Num = 1.0, recurrent_bias: torch.Tensor | None = None,
           all_to_all: bool = False, threshold: _Num = 1.0, reset_mechanism: str = "subtract",
           reset_delay: bool = True, surrogate: str = "atan", surrogate_alpha: float | None = None,
           time_dim: int = 0) -> torch.Tensor:
    """Recurrent first-order LIF neuron, as snntorch 1.0 ``RLeaky`` computes it.

    Forward:  from ``S[-1] = U[-1] = 0``, ``R[t] = H(U[t-1] - thr)`` detached,
              ``W(S) = S V`` (``all_to_all=False``, elementwise ``V`` of shape ``()`` or ``(N,)``) or
              ``W(S) = S V^T + recurrent_bias`` (``all_to_all=True``: snntorch's ``nn.Linear(N, N)``, weight ``V``);
              ``B = clamp(beta, 0, 1) U[t-1] + x[t] + W(S[t-1])``;
              ``"subtract"``: ``U[t] = B - R[t] thr``; ``"zero"``: ``U[t] = B - R[t] B``; ``"none"``: ``B``;
              ``S[t] = H(U[t] - thr)`` (strict); ``reset_delay=False`` as in :func:`leaky` (no graded factor).
              The recurrent spike ``S[t-1]`` is not detached. (snntorch's convolutional recurrence is not covered.)
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative; ``R`` detached.
    Dtype:    follows ``x``.
    Shape:    as :func:`leaky`; ``V``: ``()``/``(N,)``, or ``(N, N)`` with ``recurrent_bias`` ``(N,)`` or ``None``.
    """
    return rleaky_trace(x, beta=beta, V=V, recurrent_bias=recurrent_bias, all_to_all=all_to_all,
                        threshold=threshold, reset_mechanism=reset_mechanism, reset_delay=reset_delay,
                        surrogate=surrogate, surrogate_alpha=surrogate_alpha, time_dim=time_dim)[0]


def _rsynaptic_core(x, state, *, alpha, beta, threshold, V, recurrent_bias, all_to_all, reset_mechanism,
                    reset_delay, surrogate, surrogate_alpha):
    return _synaptic_core(x, state, alpha=alpha, beta=beta, threshold=threshold, reset_mechanism=reset_mechanism,
                          reset_delay=reset_delay, surrogate=surrogate, surrogate_alpha=surrogate_alpha,
                          recurrent=_recurrent(x, V, recurrent_bias, all_to_all))


def _check_rsynaptic(x, alpha, beta, threshold, V, recurrent_bias, all_to_all, reset_mechanism, reset_delay,
                     surrogate, surrogate_alpha):
    _check_synaptic(x, alpha, beta, threshold, reset_mechanism, reset_delay, surrogate, surrogate_alpha)
    _check_recurrent(x, V, recurrent_bias, all_to_all)


def rsynaptic_step(x: torch.Tensor, spk: torch.Tensor, syn: torch.Tensor, mem: torch.Tensor, *, alpha: _Num,
                   beta: _Num, V: _Num = 1.0, recurrent_bias: torch.Tensor | None = None, all_to_all: bool = False,
                   threshold: _Num = 1.0, reset_mechanism: str = "subtract", reset_delay: bool = True,
                   surrogate: str = "atan", surrogate_alpha: float | None = None):
    """One step of :func:`rsynaptic` (snntorch ``RSynaptic.forward(x, spk, syn, mem) -> (spk, syn, mem)``)."""
    _check_rsynaptic(x, alpha, beta, threshold, V, recurrent_bias, all_to_all, reset_mechanism, reset_delay,
                     surrogate, surrogate_alpha)
    spk, _, (_, syn, mem) = _rsynaptic_core(x, (spk, syn, mem), alpha=alpha, beta=beta, threshold=threshold, V=V,
                                            recurrent_bias=recurrent_bias, all_to_all=all_to_all,
                                            reset_mechanism=reset_mechanism, reset_delay=reset_delay,
                                            surrogate=surrogate, surrogate_alpha=surrogate_alpha)
    return spk, syn, mem


def rsynaptic_trace(x: torch.Tensor, *, alpha: _Num, beta: _Num, V: _Num = 1.0,
                    recurrent_bias: torch.Tensor | None = None, all_to_all: bool = False, threshold: _Num = 1.0,
                    reset_mechanism: str = "subtract", reset_delay: bool = True, surrogate: str = "atan",
                    surrogate_alpha: float | None = None, time_dim: int = 0):
    """:func:`rsynaptic` and its margin ``U[t] - threshold``."""
    _check_rsynaptic(x, alpha, beta, threshold, V, recurrent_bias, all_to_all, reset_mechanism, reset_delay,
                     surrogate, surrogate_alpha)
    zero = _zeros(x, time_dim)
    return _rollout(_rsynaptic_core, x, (zero, zero, zero), time_dim, alpha=alpha, beta=beta, threshold=threshold,
                    V=V, recurrent_bias=recurrent_bias, all_to_all=all_to_all, reset_mechanism=reset_mechanism,
                    reset_delay=reset_delay, surrogate=surrogate, surrogate_alpha=surrogate_alpha)


def rsynaptic(x: torch.Tensor, *, alpha: _Num, beta: _Num, V: _Num = 1.0, recurrent_bias: torch.Tensor | None = None,
              all_to_all: bool = False, threshold: _Num = 1.0, reset_mechanism: str = "subtract",
              reset_delay: bool = True, surrogate: str = "atan", surrogate_alpha: float | None = None,
              time_dim: int = 0) -> torch.Tensor:
    """Recurrent second-order LIF neuron, as snntorch 1.0 ``RSynaptic`` documents it.

    Forward:  :func:`synaptic` with the synaptic update ``I[t] = a I[t-1] + x[t] + W(S[t-1])``, ``W`` as in
              :func:`rleaky`. ``reset_delay=False`` resets in the same step as :func:`synaptic` does; snntorch 1.0's
              ``RSynaptic`` code for it reads its ``spk``/``mem`` *arguments* instead of the new state (a
              ``TypeError`` when they are not passed, a silent no-op when they are).
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative; ``R`` detached.
    Dtype:    follows ``x``.
    Shape:    as :func:`rleaky`.
    """
    return rsynaptic_trace(x, alpha=alpha, beta=beta, V=V, recurrent_bias=recurrent_bias, all_to_all=all_to_all,
                           threshold=threshold, reset_mechanism=reset_mechanism, reset_delay=reset_delay,
                           surrogate=surrogate, surrogate_alpha=surrogate_alpha, time_dim=time_dim)[0]


# --- spikingjelly: charge, fire, reset in the same step ---------------------------------------------------------

def _sj_fire_reset(h, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha):
    margin = h - v_threshold
    spk = _fire(margin, surrogate, surrogate_alpha, False)
    s = spk.detach() if detach_reset else spk
    v = h - s * v_threshold if v_reset is None else s * v_reset + (1.0 - s) * h
    return spk, margin, (v,)


def _sj_if_core(x, state, *, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha):
    return _sj_fire_reset(state[0] + x, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)


def _sj_leak(x, v, q, decay_input, v_reset):
    rest = 0.0 if v_reset is None else v_reset
    return v + (x - (v - rest)) * q if decay_input else v - (v - rest) * q + x


def _sj_lif_core(x, state, *, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha):
    rest = 0.0 if v_reset is None else v_reset
    v = state[0]
    h = v + (x - (v - rest)) / tau if decay_input else v - (v - rest) / tau + x
    return _sj_fire_reset(h, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)


def _sj_plif_core(x, state, *, w, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha):
    h = _sj_leak(x, state[0], torch.sigmoid(_cast(w, x)), decay_input, v_reset)
    return _sj_fire_reset(h, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)


def _check_sj(x, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha):
    _validate.floating("x", x)
    _validate.in_range("v_threshold", v_threshold)
    if v_reset is not None:
        _validate.in_range("v_reset", v_reset)
    _bool("detach_reset", detach_reset)
    _check_surrogate(surrogate, surrogate_alpha)


def _sj_init(x, v_reset, time_dim):
    zero = _zeros(x, time_dim)
    return zero if v_reset is None else zero + v_reset


def sj_if_step(x: torch.Tensor, v: torch.Tensor, *, v_threshold: float = 1.0, v_reset: float | None = 0.0,
               detach_reset: bool = False, surrogate: str = "sigmoid", surrogate_alpha: float | None = None):
    """One step of :func:`sj_if`: ``(spk, v)``."""
    _check_sj(x, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)
    spk, _, (v,) = _sj_if_core(x, (v,), v_threshold=v_threshold, v_reset=v_reset, detach_reset=detach_reset,
                               surrogate=surrogate, surrogate_alpha=surrogate_alpha)
    return spk, v


def sj_if_trace(x: torch.Tensor, *, v_threshold: float = 1.0, v_reset: float | None = 0.0,
                detach_reset: bool = False, surrogate: str = "sigmoid", surrogate_alpha: float | None = None,
                time_dim: int = 0):
    """:func:`sj_if` and its margin ``H[t] - v_threshold``."""
    _check_sj(x, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)
    return _rollout(_sj_if_core, x, (_sj_init(x, v_reset, time_dim),), time_dim, v_threshold=v_threshold,
                    v_reset=v_reset, detach_reset=detach_reset, surrogate=surrogate, surrogate_alpha=surrogate_alpha)


def sj_if(x: torch.Tensor, *, v_threshold: float = 1.0, v_reset: float | None = 0.0, detach_reset: bool = False,
          surrogate: str = "sigmoid", surrogate_alpha: float | None = None, time_dim: int = 0) -> torch.Tensor:
    """Integrate-and-fire neuron, as spikingjelly 2.0 ``neuron.IFNode`` computes it.

    Forward:  ``V[-1] = v_reset`` (0 when ``v_reset is None``); charge ``H[t] = V[t-1] + x[t]``;
              fire ``S[t] = H(H[t] - v_threshold)`` (non-strict: ``H >= v_threshold``);
              reset with ``s = S[t]`` (``S[t].detach()`` if ``detach_reset``): ``v_reset is None`` (soft):
              ``V[t] = H[t] - s v_threshold``; else (hard): ``V[t] = s v_reset + (1 - s) H[t]``.
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative (spikingjelly default ``Sigmoid(alpha=4)``).
    Dtype:    follows ``x``.
    Shape:    as :func:`leaky`; ``v_threshold``, ``v_reset`` are Python floats (spikingjelly asserts floats).
    """
    return sj_if_trace(x, v_threshold=v_threshold, v_reset=v_reset, detach_reset=detach_reset, surrogate=surrogate,
                       surrogate_alpha=surrogate_alpha, time_dim=time_dim)[0]


def _check_sj_lif(x, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha):
    _check_sj(x, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)
    _validate.positive("tau", tau)
    _validate.in_range("tau", tau, 1.0, None)
    _bool("decay_input", decay_input)


def sj_lif_step(x: torch.Tensor, v: torch.Tensor, *, tau: float = 2.0, decay_input: bool = True,
                v_threshold: float = 1.0, v_reset: float | None = 0.0, detach_reset: bool = False,
                surrogate: str = "sigmoid", surrogate_alpha: float | None = None):
    """One step of :func:`sj_lif`: ``(spk, v)``."""
    _check_sj_lif(x, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)
    spk, _, (v,) = _sj_lif_core(x, (v,), tau=tau, decay_input=decay_input, v_threshold=v_threshold, v_reset=v_reset,
                                detach_reset=detach_reset, surrogate=surrogate, surrogate_alpha=surrogate_alpha)
    return spk, v


def sj_lif_trace(x: torch.Tensor, *, tau: float = 2.0, decay_input: bool = True, v_threshold: float = 1.0,
                 v_reset: float | None = 0.0, detach_reset: bool = False, surrogate: str = "sigmoid",
                 surrogate_alpha: float | None = None, time_dim: int = 0):
    """:func:`sj_lif` and its margin ``H[t] - v_threshold``."""
    _check_sj_lif(x, tau, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)
    return _rollout(_sj_lif_core, x, (_sj_init(x, v_reset, time_dim),), time_dim, tau=tau, decay_input=decay_input,
                    v_threshold=v_threshold, v_reset=v_reset, detach_reset=detach_reset, surrogate=surrogate,
                    surrogate_alpha=surrogate_alpha)


def sj_lif(x: torch.Tensor, *, tau: float = 2.0, decay_input: bool = True, v_threshold: float = 1.0,
           v_reset: float | None = 0.0, detach_reset: bool = False, surrogate: str = "sigmoid",
           surrogate_alpha: float | None = None, time_dim: int = 0) -> torch.Tensor:
    """Leaky integrate-and-fire neuron, as spikingjelly 2.0 ``neuron.LIFNode`` computes it.

    Forward:  :func:`sj_if` with the charge (``r = v_reset``, or 0 when ``v_reset is None``)
              ``decay_input=True``:  ``H[t] = V[t-1] + (x[t] - (V[t-1] - r)) / tau``;
              ``decay_input=False``: ``H[t] = V[t-1] - (V[t-1] - r) / tau + x[t]``.
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative.
    Dtype:    follows ``x``.
    Shape:    as :func:`leaky`; ``tau >= 1`` is a Python float (spikingjelly asserts ``tau > 1``).
    """
    return sj_lif_trace(x, tau=tau, decay_input=decay_input, v_threshold=v_threshold, v_reset=v_reset,
                        detach_reset=detach_reset, surrogate=surrogate, surrogate_alpha=surrogate_alpha,
                        time_dim=time_dim)[0]


def _check_sj_plif(x, w, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha):
    _check_sj(x, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)
    _validate.in_range("w", w)
    _bool("decay_input", decay_input)


def sj_plif_step(x: torch.Tensor, v: torch.Tensor, *, w: _Num, decay_input: bool = True, v_threshold: float = 1.0,
                 v_reset: float | None = 0.0, detach_reset: bool = False, surrogate: str = "sigmoid",
                 surrogate_alpha: float | None = None):
    """One step of :func:`sj_plif`: ``(spk, v)``."""
    _check_sj_plif(x, w, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)
    spk, _, (v,) = _sj_plif_core(x, (v,), w=w, decay_input=decay_input, v_threshold=v_threshold, v_reset=v_reset,
                                 detach_reset=detach_reset, surrogate=surrogate, surrogate_alpha=surrogate_alpha)
    return spk, v


def sj_plif_trace(x: torch.Tensor, *, w: _Num, decay_input: bool = True, v_threshold: float = 1.0,
                  v_reset: float | None = 0.0, detach_reset: bool = False, surrogate: str = "sigmoid",
                  surrogate_alpha: float | None = None, time_dim: int = 0):
    """:func:`sj_plif` and its margin ``H[t] - v_threshold``."""
    _check_sj_plif(x, w, decay_input, v_threshold, v_reset, detach_reset, surrogate, surrogate_alpha)
    return _rollout(_sj_plif_core, x, (_sj_init(x, v_reset, time_dim),), time_dim, w=w, decay_input=decay_input,
                    v_threshold=v_threshold, v_reset=v_reset, detach_reset=detach_reset, surrogate=surrogate,
                    surrogate_alpha=surrogate_alpha)


def sj_plif(x: torch.Tensor, *, w: _Num, decay_input: bool = True, v_threshold: float = 1.0,
            v_reset: float | None = 0.0, detach_reset: bool = False, surrogate: str = "sigmoid",
            surrogate_alpha: float | None = None, time_dim: int = 0) -> torch.Tensor:
    """Parametric LIF neuron (learnable time constant), as spikingjelly 2.0 ``neuron.ParametricLIFNode`` computes it.

    Forward:  :func:`sj_lif` with ``1/tau`` replaced by ``q = sigmoid(w)`` (``w`` learnable; spikingjelly initialises
              ``w = -log(init_tau - 1)`` so that ``1/sigmoid(w) = init_tau``):
              ``decay_input=True``: ``H[t] = V[t-1] + (x[t] - (V[t-1] - r)) q``; else
              ``H[t] = V[t-1] - (V[t-1] - r) q + x[t]``.
    Backward: autograd, including ``dq/dw = q (1 - q)``; ``dH/du`` = ``surrogate``'s derivative.
    Dtype:    follows ``x``.
    Shape:    as :func:`leaky`; ``w`` of shape ``()`` (or broadcastable).
    """
    return sj_plif_trace(x, w=w, decay_input=decay_input, v_threshold=v_threshold, v_reset=v_reset,
                         detach_reset=detach_reset, surrogate=surrogate, surrogate_alpha=surrogate_alpha,
                         time_dim=time_dim)[0]


# --- norse: forward-Euler continuous-time LIF -------------------------------------------------------------------

def _norse_lif_core(x, state, *, tau_syn_inv, tau_mem_inv, v_leak, v_th, v_reset, dt, detach_reset, surrogate,
                    surrogate_alpha):
    v, i = state
    tau_syn_inv, tau_mem_inv = _cast(tau_syn_inv, x), _cast(tau_mem_inv, x)
    v_leak, v_th, v_reset = _cast(v_leak, x), _cast(v_th, x), _cast(v_reset, x)
    i_jump = i + x
    v_decayed = v + dt * tau_mem_inv * ((v_leak - v) + i_jump)
    i_decayed = i_jump + (-dt * tau_syn_inv * i_jump)
    margin = v_decayed - v_th
    z = _fire(margin, surrogate, surrogate_alpha, True)
    zr = z.detach() if detach_reset else z
    v_new = (1 - zr) * v_decayed + zr * v_reset
    return z, margin, (v_new, i_decayed)


def _check_norse(x, tau_mem_inv, v_leak, v_th, v_reset, dt, surrogate, surrogate_alpha):
    _validate.floating("x", x)
    _validate.positive("tau_mem_inv", tau_mem_inv)
    _validate.in_range("v_leak", v_leak)
    _validate.in_range("v_th", v_th)
    _validate.in_range("v_reset", v_reset)
    _validate.positive("dt", dt)
    _check_surrogate(surrogate, surrogate_alpha)


def _check_norse_lif(x, tau_syn_inv, tau_mem_inv, v_leak, v_th, v_reset, dt, detach_reset, surrogate,
                     surrogate_alpha):
    _check_norse(x, tau_mem_inv, v_leak, v_th, v_reset, dt, surrogate, surrogate_alpha)
    _validate.positive("tau_syn_inv", tau_syn_inv)
    _bool("detach_reset", detach_reset)


def _norse_init_v(x, v_leak, time_dim):
    return _zeros(x, time_dim) + _cast(v_leak, x)


def norse_lif_step(x: torch.Tensor, v: torch.Tensor, i: torch.Tensor, *, tau_syn_inv: _Num = 200.0,
                   tau_mem_inv: _Num = 100.0, v_leak: _Num = 0.0, v_th: _Num = 1.0, v_reset: _Num = 0.0,
                   dt: float = 1e-3, detach_reset: bool = False, surrogate: str = "fast_sigmoid",
                   surrogate_alpha: float | None = 1.0):
    """One step of :func:`norse_lif` (norse ``lif_feed_forward_step``): ``(spk, v, i)``."""
    _check_norse_lif(x, tau_syn_inv, tau_mem_inv, v_leak, v_th, v_reset, dt, detach_reset, surrogate,
                     surrogate_alpha)
    z, _, (v, i) = _norse_lif_core(x, (v, i), tau_syn_inv=tau_syn_inv, tau_mem_inv=tau_mem_inv, v_leak=v_leak,
                                   v_th=v_th, v_reset=v_reset, dt=dt, detach_reset=detach_reset, surrogate=surrogate,
                                   surrogate_alpha=surrogate_alpha)
    return z, v, i


def norse_lif_trace(x: torch.Tensor, *, tau_syn_inv: _Num = 200.0, tau_mem_inv: _Num = 100.0, v_leak: _Num = 0.0,
                    v_th: _Num = 1.0, v_reset: _Num = 0.0, dt: float = 1e-3, detach_reset: bool = False,
                    surrogate: str = "fast_sigmoid", surrogate_alpha: float | None = 1.0, time_dim: int = 0):
    """:func:`norse_lif` and its margin ``v_decayed[t] - v_th``."""
    _check_norse_lif(x, tau_syn_inv, tau_mem_inv, v_leak, v_th, v_reset, dt, detach_reset, surrogate,
                     surrogate_alpha)
    state = (_norse_init_v(x, v_leak, time_dim), _zeros(x, time_dim))
    return _rollout(_norse_lif_core, x, state, time_dim, tau_syn_inv=tau_syn_inv, tau_mem_inv=tau_mem_inv,
                    v_leak=v_leak, v_th=v_th, v_reset=v_reset, dt=dt, detach_reset=detach_reset,
                    surrogate=surrogate, surrogate_alpha=surrogate_alpha)


def norse_lif(x: torch.Tensor, *, tau_syn_inv: _Num = 200.0, tau_mem_inv: _Num = 100.0, v_leak: _Num = 0.0,
              v_th: _Num = 1.0, v_reset: _Num = 0.0, dt: float = 1e-3, detach_reset: bool = False,
              surrogate: str = "fast_sigmoid", surrogate_alpha: float | None = 1.0, time_dim: int = 0) -> torch.Tensor:
    """Current-based LIF neuron, one forward-Euler step per input, as norse 1.1 ``LIFCell`` /
    ``lif_feed_forward_step`` computes it.

    Forward:  from ``v = v_leak``, ``i = 0`` (``LIFCell.initial_state``), per step, in this order:
              ``j = i + x[t]`` (the current jumps *first*);
              ``v' = v + dt tau_mem_inv ((v_leak - v) + j)`` (the voltage integrates the *jumped* current);
              ``i' = j - dt tau_syn_inv j``;
              ``z = H(v' - v_th)`` (strict: ``v' > v_th``);
              ``v = (1 - z) v' + z v_reset`` (``z`` detached when ``detach_reset``: norse's recurrent ``lif_step``
              detaches it, ``lif_feed_forward_step`` does not); ``i = i'``.
              The module docstring's ODE ``di/dt = 1/tau_syn i`` lacks the minus sign that the code (and the
              function docstrings) have.
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative. norse's default ``method="super"`` is
              ``fast_sigmoid`` with ``surrogate_alpha=1`` (its ``alpha=100`` is ignored by ``SuperSpike``);
              ``method="triangle"`` is ``triangular`` with the same ``alpha``.
    Dtype:    follows ``x`` (norse itself creates ``i`` in float32 whatever the input dtype).
    Shape:    as :func:`leaky`; ``tau_syn_inv``, ``tau_mem_inv``, ``v_leak``, ``v_th``, ``v_reset``: floats or
              tensors; ``dt > 0`` a Python float.
    """
    return norse_lif_trace(x, tau_syn_inv=tau_syn_inv, tau_mem_inv=tau_mem_inv, v_leak=v_leak, v_th=v_th,
                           v_reset=v_reset, dt=dt, detach_reset=detach_reset, surrogate=surrogate,
                           surrogate_alpha=surrogate_alpha, time_dim=time_dim)[0]


def _norse_box_core(x, state, *, tau_mem_inv, v_leak, v_th, v_reset, dt, reset, surrogate, surrogate_alpha):
    (v,) = state
    tau_mem_inv, v_leak, v_th, v_reset = (_cast(p, x) for p in (tau_mem_inv, v_leak, v_th, v_reset))
    v_decayed = v + dt * tau_mem_inv * (x + v_leak - v)
    margin = v_decayed - v_th
    z = _fire(margin, surrogate, surrogate_alpha, True)
    if reset == "value":
        v_new = (1 - z) * v_decayed + z * v_reset
    else:
        v_new = (1 - z) * v_decayed + z * (v_decayed - v_th)
    return z, margin, (v_new,)


def _check_norse_box(x, tau_mem_inv, v_leak, v_th, v_reset, dt, reset, surrogate, surrogate_alpha):
    _check_norse(x, tau_mem_inv, v_leak, v_th, v_reset, dt, surrogate, surrogate_alpha)
    _validate.one_of("reset", reset, ("value", "subtract"))


def norse_lif_box_step(x: torch.Tensor, v: torch.Tensor, *, tau_mem_inv: _Num = 100.0, v_leak: _Num = 0.0,
                       v_th: _Num = 1.0, v_reset: _Num = 0.0, dt: float = 1e-3, reset: str = "value",
                       surrogate: str = "fast_sigmoid", surrogate_alpha: float | None = 1.0):
    """One step of :func:`norse_lif_box` (norse ``lif_box_feed_forward_step``): ``(spk, v)``."""
    _check_norse_box(x, tau_mem_inv, v_leak, v_th, v_reset, dt, reset, surrogate, surrogate_alpha)
    z, _, (v,) = _norse_box_core(x, (v,), tau_mem_inv=tau_mem_inv, v_leak=v_leak, v_th=v_th, v_reset=v_reset, dt=dt,
                                 reset=reset, surrogate=surrogate, surrogate_alpha=surrogate_alpha)
    return z, v


def norse_lif_box_trace(x: torch.Tensor, *, tau_mem_inv: _Num = 100.0, v_leak: _Num = 0.0, v_th: _Num = 1.0,
                        v_reset: _Num = 0.0, dt: float = 1e-3, reset: str = "value", surrogate: str = "fast_sigmoid",
                        surrogate_alpha: float | None = 1.0, time_dim: int = 0):
    """:func:`norse_lif_box` and its margin ``v_decayed[t] - v_th``."""
    _check_norse_box(x, tau_mem_inv, v_leak, v_th, v_reset, dt, reset, surrogate, surrogate_alpha)
    return _rollout(_norse_box_core, x, (_norse_init_v(x, v_leak, time_dim),), time_dim, tau_mem_inv=tau_mem_inv,
                    v_leak=v_leak, v_th=v_th, v_reset=v_reset, dt=dt, reset=reset, surrogate=surrogate,
                    surrogate_alpha=surrogate_alpha)


def norse_lif_box(x: torch.Tensor, *, tau_mem_inv: _Num = 100.0, v_leak: _Num = 0.0, v_th: _Num = 1.0,
                  v_reset: _Num = 0.0, dt: float = 1e-3, reset: str = "value", surrogate: str = "fast_sigmoid",
                  surrogate_alpha: float | None = 1.0, time_dim: int = 0) -> torch.Tensor:
    """LIF neuron without a synaptic current ("box" currents), as norse 1.1 ``LIFBoxCell`` /
    ``lif_box_feed_forward_step`` computes it.

    Forward:  from ``v = v_leak``: ``v' = v + dt tau_mem_inv (x[t] + v_leak - v)``; ``z = H(v' - v_th)`` (strict);
              ``reset="value"`` (norse ``reset_value``, default): ``v = (1 - z) v' + z v_reset``;
              ``reset="subtract"`` (norse ``reset_subtract``): ``v = (1 - z) v' + z (v' - v_th)``. ``z`` is not
              detached.
    Backward: autograd; ``dH/du`` = ``surrogate``'s derivative (norse ``super``: ``fast_sigmoid``, alpha 1).
    Dtype:    follows ``x``.
    Shape:    as :func:`norse_lif`.
    """
    return norse_lif_box_trace(x, tau_mem_inv=tau_mem_inv, v_leak=v_leak, v_th=v_th, v_reset=v_reset, dt=dt,
                               reset=reset, surrogate=surrogate, surrogate_alpha=surrogate_alpha,
                               time_dim=time_dim)[0]


# --- sinabs: multi-spike, subtractive reset, optional floor -----------------------------------------------------

SINABS_SURROGATES = ("single_exponential", "multi_gaussian")


def _sinabs_core(x, state, *, tau_mem, tau_syn, norm_input, spike_threshold, spike_fn, reset, min_v_mem,
                 surrogate, grad_width, grad_scale):
    v, i = state
    alpha_mem = 1.0 if tau_mem is None else _exp(-1.0 / _cast(tau_mem, x))
    i = x if tau_syn is None else _exp(-1.0 / _cast(tau_syn, x)) * (i + x)
    v = alpha_mem * v + ((1 - alpha_mem) * i if norm_input else i)
    u = v - spike_threshold
    params = {"scale": grad_scale}
    if surrogate == "single_exponential":
        params["width"] = grad_width * spike_threshold
    single = _fire(u, surrogate, None, False, **params)
    if spike_fn == "single":
        spk, margin = single, u
    else:
        count = torch.floor(v / spike_threshold).clamp_min(0)
        # value: the spike count; derivative: the surrogate's, as sinabs' MultiSpike.backward.
        spk = count.detach() + (single - single.detach())
        margin = v - spike_threshold * torch.round(v / spike_threshold).clamp_min(1).detach()
    if reset == "subtract":
        v = v - spk * spike_threshold
    else:
        v = v * (spk == 0).to(v.dtype)
    if min_v_mem is not None:
        v = torch.relu(v - min_v_mem) + min_v_mem
    return spk, margin, (v, i)


def _check_sinabs(x, tau_mem, tau_syn, norm_input, spike_threshold, spike_fn, reset, min_v_mem, surrogate,
                  grad_width, grad_scale):
    _validate.floating("x", x)
    if tau_mem is not None:
        _validate.positive("tau_mem", tau_mem)
    if tau_syn is not None:
        _validate.positive("tau_syn", tau_syn)
    _bool("norm_input", norm_input)
    _validate.positive("spike_threshold", spike_threshold)
    _validate.one_of("spike_fn", spike_fn, ("multi", "single"))
    _validate.one_of("reset", reset, ("subtract", "zero"))
    if min_v_mem is not None:
        _validate.in_range("min_v_mem", min_v_mem)
    _validate.one_of("surrogate", surrogate, SINABS_SURROGATES)
    _validate.positive("grad_width", grad_width)
    _validate.positive("grad_scale", grad_scale)


def _sinabs_trace(x, time_dim, **hyper):
    _check_sinabs(x, **hyper)
    zero = _zeros(x, time_dim)
    return _rollout(_sinabs_core, x, (zero, zero), time_dim, **hyper)


def sinabs_lif_step(x: torch.Tensor, v_mem: torch.Tensor, i_syn: torch.Tensor, *, tau_mem: _Num,
                    tau_syn: _Num | None = None, norm_input: bool = True, spike_threshold: float = 1.0,
                    spike_fn: str = "multi", reset: str = "subtract", min_v_mem: float | None = None,
                    surrogate: str = "single_exponential", grad_width: float = 0.5, grad_scale: float = 1.0):
    """One step of :func:`sinabs_lif` (sinabs ``lif_forward_single``): ``(spk, v_mem, i_syn)``; ``i_syn`` is
    carried unchanged in meaning (the step's input) when ``tau_syn is None``."""
    hyper = dict(tau_mem=tau_mem, tau_syn=tau_syn, norm_input=norm_input, spike_threshold=spike_threshold,
                 spike_fn=spike_fn, reset=reset, min_v_mem=min_v_mem, surrogate=surrogate, grad_width=grad_width,
                 grad_scale=grad_scale)
    _check_sinabs(x, **hyper)
    spk, _, (v_mem, i_syn) = _sinabs_core(x, (v_mem, i_syn), **hyper)
    return spk, v_mem, i_syn


def sinabs_lif_trace(x: torch.Tensor, *, tau_mem: _Num, tau_syn: _Num | None = None, norm_input: bool = True,
                     spike_threshold: float = 1.0, spike_fn: str = "multi", reset: str = "subtract",
                     min_v_mem: float | None = None, surrogate: str = "single_exponential", grad_width: float = 0.5,
                     grad_scale: float = 1.0, time_dim: int = 0):
    """:func:`sinabs_lif` and its margin: ``v - spike_threshold`` (``"single"``), or ``v - k spike_threshold`` with
    ``k = max(1, round(v / spike_threshold))``, the nearest count boundary (``"multi"``)."""
    return _sinabs_trace(x, time_dim, tau_mem=tau_mem, tau_syn=tau_syn, norm_input=norm_input,
                         spike_threshold=spike_threshold, spike_fn=spike_fn, reset=reset, min_v_mem=min_v_mem,
                         surrogate=surrogate, grad_width=grad_width, grad_scale=grad_scale)


def sinabs_lif(x: torch.Tensor, *, tau_mem: _Num, tau_syn: _Num | None = None, norm_input: bool = True,
               spike_threshold: float = 1.0, spike_fn: str = "multi", reset: str = "subtract",
               min_v_mem: float | None = None, surrogate: str = "single_exponential", grad_width: float = 0.5,
               grad_scale: float = 1.0, time_dim: int = 0) -> torch.Tensor:
    """Discrete LIF neuron, as sinabs 3.1 ``layers.LIF`` (``functional.lif_forward_single``) computes it.

    Forward:  from ``v = i = 0``, ``a = exp(-1/tau_mem)``, ``thr = spike_threshold``:
              ``i = exp(-1/tau_syn) (i + x[t])`` if ``tau_syn`` is given, else ``i = x[t]`` (the input is decayed
              in the same step); ``v = a v + (1 - a) i`` (``norm_input``) or ``v = a v + i``;
              ``spike_fn="multi"`` (sinabs ``MultiSpike``, default): ``S = max(0, floor(v / thr))`` spikes;
              ``"single"`` (``SingleSpike``): ``S = H(v - thr)`` (non-strict, ``v >= thr``);
              ``reset="subtract"`` (``MembraneSubtract``): ``v = v - S thr``; ``"zero"`` (``MembraneReset(0)``):
              ``v = v * [S == 0]`` (no gradient through the mask); then, if ``min_v_mem`` is given,
              ``v = relu(v - min_v_mem) + min_v_mem``.
    Backward: ``dS/dv`` is the surrogate for both spike functions (``MultiSpike.backward`` uses the one-spike
              surrogate whatever the count): ``"single_exponential"``: ``single_exponential_grad(v - thr,
              width=grad_width * thr, scale=grad_scale)``; ``"multi_gaussian"``: ``multi_gaussian_grad(v - thr,
              scale=grad_scale)`` with sinabs' defaults. No gradient reaches ``spike_threshold`` (sinabs: not
              learnable); ``tau_mem``, ``tau_syn`` are differentiable.
    Dtype:    follows ``x``; multi-spike counts are integer-valued floats.
    Shape:    as :func:`leaky`; ``tau_mem``, ``tau_syn``: float or tensor ``()``/per feature; the rest Python values.
    """
    return sinabs_lif_trace(x, tau_mem=tau_mem, tau_syn=tau_syn, norm_input=norm_input,
                            spike_threshold=spike_threshold, spike_fn=spike_fn, reset=reset, min_v_mem=min_v_mem,
                            surrogate=surrogate, grad_width=grad_width, grad_scale=grad_scale, time_dim=time_dim)[0]


def sinabs_iaf_step(x: torch.Tensor, v_mem: torch.Tensor, i_syn: torch.Tensor, *, tau_syn: _Num | None = None,
                    spike_threshold: float = 1.0, spike_fn: str = "multi", reset: str = "subtract",
                    min_v_mem: float | None = None, surrogate: str = "single_exponential", grad_width: float = 0.5,
                    grad_scale: float = 1.0):
    """One step of :func:`sinabs_iaf`: ``(spk, v_mem, i_syn)``."""
    hyper = dict(tau_mem=None, tau_syn=tau_syn, norm_input=False, spike_threshold=spike_threshold,
                 spike_fn=spike_fn, reset=reset, min_v_mem=min_v_mem, surrogate=surrogate, grad_width=grad_width,
                 grad_scale=grad_scale)
    _check_sinabs(x, **hyper)
    spk, _, (v_mem, i_syn) = _sinabs_core(x, (v_mem, i_syn), **hyper)
    return spk, v_mem, i_syn


def sinabs_iaf_trace(x: torch.Tensor, *, tau_syn: _Num | None = None, spike_threshold: float = 1.0,
                     spike_fn: str = "multi", reset: str = "subtract", min_v_mem: float | None = None,
                     surrogate: str = "single_exponential", grad_width: float = 0.5, grad_scale: float = 1.0,
                     time_dim: int = 0):
    """:func:`sinabs_iaf` and its margin (as :func:`sinabs_lif_trace`)."""
    return _sinabs_trace(x, time_dim, tau_mem=None, tau_syn=tau_syn, norm_input=False,
                         spike_threshold=spike_threshold, spike_fn=spike_fn, reset=reset, min_v_mem=min_v_mem,
                         surrogate=surrogate, grad_width=grad_width, grad_scale=grad_scale)


def sinabs_iaf(x: torch.Tensor, *, tau_syn: _Num | None = None, spike_threshold: float = 1.0,
               spike_fn: str = "multi", reset: str = "subtract", min_v_mem: float | None = None,
               surrogate: str = "single_exponential", grad_width: float = 0.5, grad_scale: float = 1.0,
               time_dim: int = 0) -> torch.Tensor:
    """Integrate-and-fire neuron, as sinabs 3.1 ``layers.IAF`` computes it.

    Forward:  :func:`sinabs_lif` with ``a = 1`` (no leak) and no input normalisation: ``v = v + i``.
    Backward: as :func:`sinabs_lif`.
    Dtype:    follows ``x``; multi-spike counts are integer-valued floats.
    Shape:    as :func:`sinabs_lif`.
    """
    return sinabs_iaf_trace(x, tau_syn=tau_syn, spike_threshold=spike_threshold, spike_fn=spike_fn, reset=reset,
                            min_v_mem=min_v_mem, surrogate=surrogate, grad_width=grad_width, grad_scale=grad_scale,
                            time_dim=time_dim)[0]
