"""Checks: plain functions, each asserting one property of a transform's Outcome for one example.

``check_<property>(ctx, outcome, truth) -> int`` raises :class:`CheckFailed` with a cause and the failing
coordinates, or returns how many output elements the tie rule excused (0 when none). ``truth`` is the spec's
output and gradients for the example (float64, CPU). Checks never mutate their inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .causes import CheckFailed, TransformFailed
from .tolerance import TIE_MARGIN, Tolerance, tolerance
from .transforms import AUTOCAST, Context, Outcome, foreign_tensor, tensor_state


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


# --------------------------------------------------------------------------------------------- comparison


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
    both_nan = torch.isnan(a) & torch.isnan(e)
    diff = torch.where(both_nan, torch.zeros_like(a), (a - e).abs())
    diff = torch.nan_to_num(diff, nan=float("inf"))
    magnitude = scale if scale is not None else (float(e.abs().max()) if e.numel() else 0.0)
    atol = max(tol.atol * magnitude, tol.floor) if tol.scaled else tol.atol
    bad = diff > atol + tol.rtol * e.abs()
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
        idx = tuple(int(i) for i in torch.nonzero(bad)[0])
        rel = (diff / e.abs().clamp_min(1e-300))[bad]
        max_abs = float(diff[bad].max())
        raise CheckFailed(
            cause,
            f"{what}: {int(bad.sum())}/{bad.numel()} elements differ beyond atol={atol:g}, rtol={tol.rtol:g}; "
            f"first at index {idx}: got {a[idx].item():.6g}, expected {e[idx].item():.6g}; max abs err {max_abs:.3g}"
            + (f"; {int(excluded.sum())} tie elements excused" if excluded.any() else ""),
            max_abs_err=max_abs, max_rel_err=float(rel.max()), atol=atol, rtol=tol.rtol)
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


def _dtype_name(ctx: Context) -> str:
    return str(ctx.dtype).replace("torch.", "")


def _tol(ctx: Context, transform: str, check: str) -> Tolerance:
    return tolerance(_dtype_name(ctx), transform, check)


def _time_dim(ctx: Context) -> int | None:
    return ctx.example.hyper.get("time_dim", ctx.spec.time_dim)


# --------------------------------------------------------------------------------------------- checks


def check_forward_matches_spec(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """The output equals the spec's output (tie-aware for discrete outputs)."""
    return compare(out.y, truth.y, tol=_tol(ctx, transform, "forward_matches_spec"), cause="forward-mismatch",
                   what="output vs spec", margin=truth.margin, tie=TIE_MARGIN[_dtype_name(ctx)],
                   time_dim=_time_dim(ctx), batch_dim=ctx.batch_dim)


def check_grad_matches_spec(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """The gradient of <cotangent, output> w.r.t. the input and every mapped parameter equals the spec's
    formula (the STE/surrogate is part of the spec). An example whose forward had an excused tie flip is not
    compared: its gradient legitimately differs."""
    excused = check_forward_matches_spec(ctx, out, truth, transform)
    if excused:
        return truth.y.numel()
    tol = _tol(ctx, transform, "grad_matches_spec")
    for name, expected in truth.grads.items():
        if name != "x" and name not in ctx.subject.param_map:
            continue
        actual = out.grads.get(name)
        if actual is None:
            raise CheckFailed("grad-mismatch", f"no gradient for {name!r}")
        compare(actual.reshape(expected.shape) if actual.numel() == expected.numel() else actual, expected,
                tol=tol, cause="grad-mismatch", what=f"d<cot, y>/d{name} vs spec")
    return 0


def _raise_stored_failure(out: Outcome) -> None:
    """A transform that records findings for other checks keeps its own failure here (e.g. fullgraph compile)."""
    failure = out.info.get("failure")
    if failure is not None:
        raise TransformFailed(failure.stage, failure.error) from failure.error


def _forward_vs_baseline(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    # Tie-aware like the spec checks: a transform that reorders arithmetic (a compiler, another device, autocast)
    # may flip a spike whose deciding quantity sits within the rounding margin of its boundary.
    where = "CUDA output vs CPU" if transform == "cpu_vs_cuda" else f"{transform} output vs eager"
    margin = truth.margin if truth.margin is not None and truth.margin.shape == out.baseline.y.shape else None
    return compare(out.y, out.baseline.y, tol=_tol(ctx, transform, "preserves_forward"),
                   cause="transform-changed-forward", what=where, margin=margin,
                   tie=TIE_MARGIN[_effective_dtype(ctx, transform)], time_dim=_time_dim(ctx), batch_dim=ctx.batch_dim)


def _effective_dtype(ctx: Context, transform: str) -> str:
    """The dtype the arithmetic runs in: the cell's, or the autocast dtype of an autocast transform."""
    amp = AUTOCAST.get(transform)
    return str(amp).replace("torch.", "") if amp is not None else _dtype_name(ctx)


def check_preserves_forward(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """The transformed callable computes what the eager module (or the per-sample loop) computes."""
    _raise_stored_failure(out)
    tol = _tol(ctx, transform, "preserves_forward")
    excused = _forward_vs_baseline(ctx, out, truth, transform)
    if "second_shape" in out.info:
        y2, expected2 = out.info["second_shape"]
        compare(y2, expected2, tol=tol, cause="transform-changed-forward",
                what=f"{transform} output vs eager for a second batch size")
    return excused


def check_preserves_grad(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """The transformed callable's gradients equal the eager module's (or the loop's). An example whose forward
    had an excused tie flip is not compared: its gradient legitimately differs."""
    _raise_stored_failure(out)
    if out.y is not None and out.baseline is not None and out.baseline.y is not None \
            and out.y.shape == out.baseline.y.shape:
        try:
            if _forward_vs_baseline(ctx, out, truth, transform):
                return out.y.numel()
        except CheckFailed:
            pass  # a real forward difference is preserves_forward's finding; the gradients are judged below
    tol = _tol(ctx, transform, "preserves_grad")
    expected_grads = out.baseline.grads or {}
    if not expected_grads:
        raise CheckFailed("transform-changed-grad", "the baseline produced no gradients to compare")
    # A scaled (mixed-precision) tolerance is relative to the module's whole gradient flow: one rounded cotangent
    # feeds every gradient, and a small gradient can be a sum with cancellation of much larger rounded terms
    # (d/dx = sum_j g_j W_j of size 0.006 from terms of size 1: seen on bitorch QLinear and brevitas QuantLinear).
    scale = max((float(g.detach().abs().max()) for g in expected_grads.values() if g.numel()), default=0.0) \
        if tol.scaled else None
    for name, expected in expected_grads.items():
        actual = (out.grads or {}).get(name)
        if actual is None:
            raise CheckFailed("transform-changed-grad", f"{transform} produced no gradient for {name!r}")
        compare(actual, expected, tol=tol, cause="transform-changed-grad",
                what=f"{transform} gradient d/d{name} vs eager", scale=scale)
    return 0


def check_output_dtype(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """The output dtype is the declared one (the input's unless the spec fixes it)."""
    # Integer outputs (packed words) must carry exactly the spec's integer dtype.
    declared = ctx.spec.output_dtype or ctx.dtype
    expected = truth.y.dtype if truth.y is not None and not truth.y.is_floating_point() else declared
    if out.y.dtype != expected:
        raise CheckFailed("dtype-mismatch", f"output dtype {out.y.dtype} != declared {expected}")
    return 0


def check_deterministic(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """Calling the same module twice on the same input gives bitwise the same output (state is reset)."""
    second = out.info["second_y"]
    if second.shape != out.y.shape or not torch.equal(second, out.y):
        diff = (second.double() - out.y.double()).abs().max().item() if second.shape == out.y.shape else float("nan")
        raise CheckFailed("nondeterministic", f"second call differs from the first (max abs diff {diff:.3g}): "
                          "hidden state carried over between calls", max_abs_err=diff)
    return 0


def check_copy_independent(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """The copy shares no tensor storage with the original, and mutating the copy leaves the original's
    output unchanged."""
    original, clone = out.info["copy_pair"]
    orig_state, clone_state = tensor_state(original), tensor_state(clone)
    ptrs = {}
    for path, t in orig_state.items():
        if t.numel() and foreign_tensor(t) is None and t.device.type != "meta":
            ptrs.setdefault(t.untyped_storage().data_ptr(), path)
    for path, t in clone_state.items():
        if t.numel() and foreign_tensor(t) is None and t.untyped_storage().data_ptr() in ptrs:
            raise CheckFailed("copy-shares-state", f"copy's {path} shares storage with original's "
                              f"{ptrs[t.untyped_storage().data_ptr()]}")
    x = ctx.input()
    changed = [p for p in clone.parameters() if p.is_floating_point()]
    saved = [p.detach().clone() for p in changed]
    with torch.no_grad():
        before = original(x).detach().clone()
        try:
            for p in changed:
                p.add_(0.5)
            after = original(x).detach()
        finally:  # the outcome is shared with the other checks of this cell: leave it as found
            for p, value in zip(changed, saved):
                p.copy_(value)
    if not torch.equal(before, after):
        raise CheckFailed("copy-shares-state", "changing the copy's parameters changed the original's output")
    return 0


def check_no_state_leak(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """The transform left the module's own parameters, buffers, .grad and hidden state as they were: no
    batched/tracer/fake tensors, no changed values."""
    problems = out.info.get("leaks", [])
    if problems:
        raise CheckFailed("state-leak", f"{transform} left {len(problems)} problem(s) in the module: "
                          + "; ".join(problems[:5]))
    return 0


def check_no_graph_breaks(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """dynamo records no graph break in the module's forward (resumed breaks and frames skipped by a break in a
    loop both count)."""
    count, reasons = out.info["graph_breaks"]
    if not count:
        _raise_stored_failure(out)  # no break, yet fullgraph compilation failed: report that
    if count:
        from .causes import _graph_break_reason

        raise CheckFailed("graph-break:" + _graph_break_reason(reasons[0] if reasons else "unknown"),
                          f"{count} graph break(s): " + " | ".join(reasons[:3]))
    return 0


def check_hook_capture_intact(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """Tensors captured by forward hooks (by reference) still hold their capture-time values when the
    subject returns: nothing inside the subject overwrote a hooked output in place."""
    hooks = out.info["hooks"]
    if not hooks["captured"]:
        raise CheckFailed("hook-graph-cut", "no forward hook fired: the subject's modules were bypassed")
    if hooks.get("mislabelled"):
        raise CheckFailed("hook-capture-mislabelled", f"the feature(s) returned for {sorted(set(hooks['mislabelled']))} "
                          "are not outputs of those layers")
    if hooks["mutated"]:
        raise CheckFailed("hook-capture-mutated", f"captured output(s) of {sorted(set(hooks['mutated']))} were "
                          f"overwritten in place before {hooks.get('read_at', 'the subject returned')}")
    return 0


def check_state_matches_eager(ctx: Context, out: Outcome, truth: Truth, transform: str) -> int:
    """After forward+backward, the module holds the same hidden state as after an eager forward+backward."""
    twin, module = out.info["state_pair"]
    expected, actual = tensor_state(twin), tensor_state(module)
    for path, t in expected.items():
        other = actual.get(path)
        if other is None or other.shape != t.shape or not torch.allclose(other.detach().double(),
                                                                         t.detach().double(), atol=1e-6,
                                                                         rtol=1e-5, equal_nan=True):
            raise CheckFailed("state-advanced-twice", f"state {path!r} after {transform} differs from eager")
    return 0


CHECKS: dict[str, Callable[..., int]] = {
    "forward_matches_spec": check_forward_matches_spec,
    "grad_matches_spec": check_grad_matches_spec,
    "preserves_forward": check_preserves_forward,
    "preserves_grad": check_preserves_grad,
    "output_dtype": check_output_dtype,
    "deterministic": check_deterministic,
    "copy_independent": check_copy_independent,
    "no_state_leak": check_no_state_leak,
    "no_graph_breaks": check_no_graph_breaks,
    "hook_capture_intact": check_hook_capture_intact,
    "state_matches_eager": check_state_matches_eager,
}

#: checks that need a gradient; not applicable to specs without one.
GRADIENT_CHECKS = frozenset({"grad_matches_spec", "preserves_grad"})
