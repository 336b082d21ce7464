"""The harness every check is written with: its declaration (``Check``), the spec's answer for an example
(``Truth``), one comparison function with the tie rule, and the tolerance and tie margin of a cell."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ..core.causes import CheckFailed, TransformFailed
from ..core.tolerance import TIE_MARGIN, Tolerance, tolerance
from ..transforms import Context, TransformRun, by_id


@dataclass(frozen=True)
class Check:
    name: str
    fn: Callable[..., int]
    #: judges a gradient: not applicable to a spec without one
    needs_grad: bool = False
    #: transforms (fnmatch globs) it judges besides those that list it
    applies_to: tuple[str, ...] = ()
    #: judges state carried between calls: not applicable to a subject without a call protocol
    needs_protocol: bool = False
    #: what the check still finds after the transform raised (``(transform, failure) -> [CheckFailed]``): recorded
    #: with the transform's failure as the cell's further findings (``also``)
    after_failure: Callable[[str, TransformFailed], list[CheckFailed]] | None = None
    #: judges the result against the spec: its cells also check the spec's ``size_edges``
    against_spec: bool = False


@dataclass
class Truth:
    """The spec's answer for one example: output, gradients for the context's cotangent, and margins."""

    y: torch.Tensor | None
    grads: dict[str, torch.Tensor] | None
    margin: torch.Tensor | None


def spec_truth(ctx: Context) -> Truth:
    """Evaluate the spec in float64 on the CPU on the (dtype-rounded) example: the reference answer."""
    ex = ctx.example
    if ctx.spec.fn is None:
        return Truth(y=None, grads=None, margin=None)  # an opaque model: no spec to judge against
    x = ex.x.detach().clone().requires_grad_(ctx.differentiable)
    params = {k: v.detach().clone().requires_grad_(ctx.differentiable) for k, v in ex.params.items()}
    y = ctx.spec.fn(x, **params, **ex.hyper)
    grads = None
    if ctx.differentiable:
        cot = ctx.cotangent(y.to(ctx.dtype)).double().cpu()
        inputs = [x] + list(params.values())
        got = torch.autograd.grad((y * cot).sum(), inputs, allow_unused=True) if y.requires_grad else [None] * len(inputs)
        grads = {name: (torch.zeros_like(t) if g is None else g)
                 for name, t, g in zip(["x"] + list(params), inputs, got)}
    margin = ctx.spec.margin(ex) if ctx.spec.margin is not None else None
    return Truth(y=y.detach(), grads=grads, margin=None if margin is None else margin.detach())


class Failures:
    """A check's failures on one example, collected so that it judges everything before it fails: the first becomes
    the cell's finding, the others its ``also`` (one cell, all its findings)."""

    def __init__(self) -> None:
        self.found: list[CheckFailed] = []

    def judge(self, judgement: Callable[[], object]) -> None:
        try:
            judgement()
        except CheckFailed as failure:
            self.found.append(failure)

    def add(self, failure: CheckFailed) -> None:
        self.found.append(failure)

    def raise_first(self) -> None:
        if self.found:
            first, *rest = self.found
            first.also = rest
            raise first


def compare(actual: torch.Tensor, expected: torch.Tensor, *, tol: Tolerance, cause: str, what: str,
            margin: torch.Tensor | None = None, tie: float = 0.0, time_dim: int | None = None,
            batch_dim: int = 0, scale: float | None = None) -> int:
    """Assert ``actual`` is within ``tol`` of ``expected``; returns the number of elements excused as ties.

    A ``scaled`` tolerance's atol is relative to ``scale``, by default the largest ``|expected|``.

    Tie rule (discrete outputs: spikes, signs, levels): a mismatching element is excused only when the spec's
    margin there is within ``tie`` of its decision boundary but not exactly on it (exact boundary values are the
    spec's convention, e.g. sign(0), and are judged). For sequences, the rest of that sample's
    trajectory after an excused flip is excluded too (a flipped spike changes the reset and all later steps).
    """
    if actual.shape != expected.shape:
        raise CheckFailed(cause, f"{what}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    if not expected.is_floating_point() and not expected.is_complex():
        a_int, e_int = actual.detach().cpu(), expected.detach().cpu()
        if a_int.dtype != e_int.dtype or not torch.equal(a_int, e_int):
            bad = a_int.to(e_int.dtype) != e_int if a_int.dtype != torch.bool else a_int != e_int.bool()
            idx = tuple(int(i) for i in torch.nonzero(bad)[0]) if bad.any() else ()
            raise CheckFailed(cause, f"{what}: integer outputs differ ({int(bad.sum())}/{bad.numel()} elements, "
                              f"dtype {a_int.dtype} vs {e_int.dtype}); first at index {idx}")
        return 0
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    same = (torch.isnan(a) & torch.isnan(e)) | (a == e)  # equal infinities too
    diff = torch.where(same, torch.zeros_like(a), (a - e).abs())
    diff = torch.nan_to_num(diff, nan=float("inf"))
    finite = e[torch.isfinite(e)]
    magnitude = scale if scale is not None else (float(finite.abs().max()) if finite.numel() else 0.0)
    atol = max(tol.atol * magnitude, tol.floor) if tol.scaled else tol.atol
    # an infinite expected value (past the range of the dtype computed in) is met by that infinity only
    bad = (diff > atol + tol.rtol * e.abs()) | (torch.isinf(e) & ~same)
    excluded = torch.zeros_like(bad)
    if margin is not None and bad.any():
        # An input exactly on the boundary (margin 0: sign(0), mem == threshold, a .5 rounding tie) is decided by
        # the spec's convention, not by rounding: it is judged, never excused.
        m = margin.detach().to("cpu", torch.float64)
        near = (m.abs() <= tie) & (m != 0)
        excused = bad & near
        excluded = excused.clone()
        if time_dim is not None and excused.any():
            excluded |= _after_first_flip(excused, time_dim, batch_dim)
        bad = bad & ~excluded
    if bad.any():
        positions = torch.nonzero(bad)
        idx = tuple(int(i) for i in positions[0])
        first_step = int(positions[:, time_dim].min()) if time_dim is not None else None
        rel = (diff / e.abs().clamp_min(1e-300))[bad]
        max_abs = float(diff[bad].max())
        raise CheckFailed(
            cause,
            f"{what}: {int(bad.sum())}/{bad.numel()} elements differ beyond atol={atol:g}, rtol={tol.rtol:g}; "
            f"first at index {idx}: got {a[idx].item():.6g}, expected {e[idx].item():.6g}; max abs err {max_abs:.3g}"
            + (f"; {int(excluded.sum())} tie elements excused" if excluded.any() else ""),
            max_abs_err=max_abs, max_rel_err=float(rel.max()), atol=atol, rtol=tol.rtol, first_step=first_step)
    return int(excluded.sum())


def _after_first_flip(excused: torch.Tensor, time_dim: int, batch_dim: int) -> torch.Tensor:
    """Mask of every element of a sample at time steps strictly after its first excused flip."""
    moved = excused.movedim((time_dim, batch_dim), (0, 1))
    steps, batch = moved.shape[:2]
    per_step = moved.reshape(steps, batch, -1).any(-1)  # (T, B)
    seen = per_step.to(torch.int64).cumsum(0)
    later = (seen - per_step.to(torch.int64)) > 0
    shape = (steps, batch) + (1,) * (moved.dim() - 2)
    return later.reshape(shape).expand_as(moved).movedim((0, 1), (time_dim, batch_dim))


def dtype_name(ctx: Context) -> str:
    return str(ctx.dtype).replace("torch.", "")


def tol(ctx: Context, transform: str, check: str) -> Tolerance:
    return tolerance(dtype_name(ctx), transform, check)


def tie_margin(ctx: Context, transform: str | None = None) -> float:
    """The tie margin of the dtype the arithmetic runs in: the cell's, or the transform's own (autocast)."""
    computed = by_id(transform).compute_dtype if transform is not None else None
    return TIE_MARGIN[computed or dtype_name(ctx)]


def time_dim(ctx: Context) -> int | None:
    return ctx.example.hyper.get("time_dim", ctx.spec.time_dim)


def by_call(ctx: Context, out: TransformRun, failure: CheckFailed) -> CheckFailed:
    """A failure of a run fed one step per call, named after the first call where it parts: when the first call
    agrees and a later one does not, the state carried between calls is what differs."""
    if not ctx.persistent or failure.first_step is None:
        return failure
    calls = out.y.shape[time_dim(ctx)]
    cause = "state-lost-between-calls" if failure.first_step > 0 else failure.cause
    return CheckFailed(cause, f"call {failure.first_step + 1} of {calls} is the first to part: {failure.message}",
                       max_abs_err=failure.max_abs_err, max_rel_err=failure.max_rel_err, atol=failure.atol,
                       rtol=failure.rtol, first_step=failure.first_step)


def raise_stored_failure(out: TransformRun) -> None:
    """A transform that records findings for other checks keeps its own failure (e.g. a fullgraph compile)."""
    failure = out.findings.failure
    if failure is not None:
        raise TransformFailed(failure.stage, failure.error) from failure.error
