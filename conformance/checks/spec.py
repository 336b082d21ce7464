"""Checks against the spec: the output and the gradient (the STE/surrogate formula is part of the spec), and the
output's dtype."""

from __future__ import annotations

import torch

from ..core.causes import CheckFailed
from ..transforms import Context, TransformRun, by_id
from ..transforms.harness import DTYPES
from .harness import Check, Failures, Truth, compare, tie_margin, time_dim, tol


def as_computed(ctx: Context, expected: torch.Tensor, transform: str) -> torch.Tensor:
    """The spec's answer as the dtype a transform computes in represents it (``Transform.compute_dtype``; as it is
    for the others, and where the spec fixes its output's dtype): a value past that dtype's range is its infinity, as
    IEEE rounding makes it."""
    computed = by_id(transform).compute_dtype
    if computed is None or ctx.spec.output_dtype is not None or not expected.is_floating_point():
        return expected
    return expected.to(DTYPES[computed]).to(expected.dtype)


def check_forward_matches_spec(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The output equals the spec's output (tie-aware for discrete outputs)."""
    return compare(out.y, as_computed(ctx, truth.y, transform), tol=tol(ctx, transform, "forward_matches_spec"),
                   cause="forward-mismatch",
                   what="output vs spec", margin=truth.margin, tie=tie_margin(ctx, transform),
                   time_dim=time_dim(ctx), batch_dim=ctx.batch_dim)


def check_grad_matches_spec(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The gradient of <cotangent, output> w.r.t. the input and every mapped parameter equals the spec's
    formula (the STE/surrogate is part of the spec). An example whose forward had an excused tie flip is not
    compared: its gradient legitimately differs."""
    excused = check_forward_matches_spec(ctx, out, truth, transform)
    if excused:
        return truth.y.numel()
    tolerance = tol(ctx, transform, "grad_matches_spec")
    failures = Failures()  # every gradient is judged: the first that differs is the finding, the others its also
    for name, expected in truth.grads.items():
        if name != "x" and name not in ctx.subject.param_map:
            continue
        actual = out.grads.get(name)
        if actual is None:
            failures.add(CheckFailed("grad-mismatch", f"no gradient for {name!r}"))
            continue
        failures.judge(lambda: compare(actual.reshape(expected.shape) if actual.numel() == expected.numel() else actual,
                                       as_computed(ctx, expected, transform), tol=tolerance, cause="grad-mismatch",
                                       what=f"d<cot, y>/d{name} vs spec"))
    failures.raise_first()
    return 0


def check_output_dtype(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The output dtype is the declared one (the input's unless the spec fixes it)."""
    # Integer outputs (packed words) must carry exactly the spec's integer dtype.
    declared = ctx.spec.output_dtype or ctx.dtype
    expected = truth.y.dtype if truth.y is not None and not truth.y.is_floating_point() else declared
    if out.y.dtype != expected:
        raise CheckFailed("dtype-mismatch", f"output dtype {out.y.dtype} != declared {expected}")
    return 0


CHECKS = (
    Check("forward_matches_spec", check_forward_matches_spec, against_spec=True),
    Check("grad_matches_spec", check_grad_matches_spec, needs_grad=True, against_spec=True),
    Check("output_dtype", check_output_dtype),
)
