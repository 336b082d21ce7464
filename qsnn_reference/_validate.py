"""Eager, readable validation of spec arguments: a bad parameter raises ``ValueError`` naming it.

Python numbers and strings are always checked. Tensor *values* are checked only when they are plain eager
tensors: under ``torch.compile``, ``torch.export``, vmap or grad a value check would be data-dependent
control flow, and those transforms are exactly what the specs must stay clean under.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch


def _concrete(value: torch.Tensor) -> bool:
    if torch.compiler.is_compiling():
        return False
    if type(value) not in (torch.Tensor, torch.nn.Parameter):
        return False
    if torch._C._functorch.is_functorch_wrapped_tensor(value):
        return False
    return value.device.type != "meta"


def one_of(name: str, value: Any, allowed: Iterable[Any]) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def integer(name: str, value: Any, *, min_value: int | None = None, max_value: int | None = None) -> None:
    if isinstance(value, torch.Tensor) and torch.jit.is_tracing():
        return  # torch.jit.trace turns sizes into 0-dim tensors; they were validated as ints in eager
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if min_value is not None and value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ValueError(f"{name} must be <= {max_value}, got {value}")


def in_range(name: str, value: Any, low: float | None = None, high: float | None = None, *,
             low_open: bool = False, high_open: bool = False) -> None:
    """``low <= value <= high`` (open ends when asked); for tensors, every element (eager only)."""
    if isinstance(value, torch.Tensor):
        if not _concrete(value):
            return
        if value.is_floating_point() and not torch.isfinite(value).all():
            raise ValueError(f"{name} must be finite")
        lo_ok = True if low is None else bool(((value > low) if low_open else (value >= low)).all())
        hi_ok = True if high is None else bool(((value < high) if high_open else (value <= high)).all())
        shown = value.detach().flatten()[:4].tolist()
    else:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name} must be a number, got {value!r}")
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{name} must be finite, got {value!r}")
        lo_ok = True if low is None else ((value > low) if low_open else (value >= low))
        hi_ok = True if high is None else ((value < high) if high_open else (value <= high))
        shown = value
    if not (lo_ok and hi_ok):
        lo = "" if low is None else ("(" if low_open else "[") + f"{low}"
        hi = "" if high is None else f"{high}" + (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {lo or '(-inf'}, {hi or 'inf)'}; got {shown}")


def positive(name: str, value: Any) -> None:
    in_range(name, value, 0.0, None, low_open=True)


def ndim_at_least(name: str, value: torch.Tensor, ndim: int) -> None:
    if value.dim() < ndim:
        raise ValueError(f"{name} must have at least {ndim} dimensions, got shape {tuple(value.shape)}")


def floating(name: str, value: torch.Tensor) -> None:
    if not value.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {value.dtype}")
