"""Checks that a transform preserves what the eager module computes: forward, gradients, and that calling the same
module twice gives the same output."""

from __future__ import annotations

import torch

from ..core.causes import CheckFailed
from ..transforms import Context, TransformRun
from ..transforms.harness import same_values
from .harness import Check, Failures, Truth, by_call, compare, raise_stored_failure, tie_margin, time_dim, tol
from .spec import as_computed


def _forward_against(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    # Tie-aware like the spec checks: a transform that reorders arithmetic (a compiler, another device, autocast)
    # may flip a spike whose deciding quantity sits within the rounding margin of its boundary.
    where = "CUDA output vs CPU" if transform == "cpu_vs_cuda" else f"{transform} output vs eager"
    margin = truth.margin if truth.margin is not None and truth.margin.shape == out.against.y.shape else None
    try:
        # against the eager output as the transform's own dtype holds it (autocast in float16: a value past 65504
        # is its infinity there, as in the spec checks)
        return compare(out.y, as_computed(ctx, out.against.y, transform), tol=tol(ctx, transform, "preserves_forward"),
                       cause="transform-changed-forward", what=where, margin=margin,
                       tie=tie_margin(ctx, transform), time_dim=time_dim(ctx), batch_dim=ctx.batch_dim)
    except CheckFailed as failure:
        raise by_call(ctx, out, failure) from None



def check_preserves_forward(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The transformed callable computes what the eager module (or the per-sample loop) computes."""
    raise_stored_failure(out)
    tolerance = tol(ctx, transform, "preserves_forward")
    excused = _forward_against(ctx, out, truth, transform)
    if out.findings.second_shape is not None:
        y2, expected2 = out.findings.second_shape
        compare(y2, expected2, tol=tolerance, cause="transform-changed-forward",
                what=f"{transform} output vs eager for a second batch size")
    return excused


def check_preserves_grad(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The transformed callable's gradients equal the eager module's (or the loop's). An example whose forward
    had an excused tie flip is not compared: its gradient legitimately differs."""
    raise_stored_failure(out)
    if out.y is not None and out.against is not None and out.against.y is not None \
            and out.y.shape == out.against.y.shape:
        try:
            if _forward_against(ctx, out, truth, transform):
                return out.y.numel()
        except CheckFailed:
            pass  # a real forward difference is preserves_forward's finding; the gradients are judged below
    tolerance = tol(ctx, transform, "preserves_grad")
    expected_grads = out.against.grads or {}
    if not expected_grads:
        raise CheckFailed("transform-changed-grad", "the run it is compared against produced no gradients")
    # A scaled (mixed-precision) tolerance is relative to the module's whole gradient flow: one rounded cotangent
    # feeds every gradient, and a small gradient can be a sum with cancellation of much larger rounded terms
    # (d/dx = sum_j g_j W_j of size 0.006 from terms of size 1: seen on bitorch QLinear and brevitas QuantLinear).
    scale = max((float(g.detach().abs().max()) for g in expected_grads.values() if g.numel()), default=0.0) \
        if tolerance.scaled else None
    failures = Failures()  # every gradient is judged: the first that differs is the finding, the others its also
    for name, expected in expected_grads.items():
        actual = (out.grads or {}).get(name)
        if actual is None:
            failures.add(CheckFailed("transform-changed-grad", f"{transform} produced no gradient for {name!r}"))
            continue
        failures.judge(lambda: compare(actual, expected, tol=tolerance, cause="transform-changed-grad",
                                       what=f"{transform} gradient d/d{name} vs eager", scale=scale))
    failures.raise_first()
    return 0


def check_deterministic(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """Calling the same module twice on the same input gives bitwise the same output (state is reset)."""
    second = out.findings.second_call
    if second is None:
        raise RuntimeError(f"{transform} made no second call for the deterministic check")
    if second.shape != out.y.shape or not same_values(second, out.y):
        diff = (second.double() - out.y.double()).abs().max().item() if second.shape == out.y.shape else float("nan")
        raise CheckFailed("nondeterministic", f"second call differs from the first (max abs diff {diff:.3g}): "
                          "hidden state carried over between calls", max_abs_err=diff)
    return 0


CHECKS = (
    Check("preserves_forward", check_preserves_forward),
    Check("preserves_grad", check_preserves_grad, needs_grad=True),
    Check("deterministic", check_deterministic),
)
