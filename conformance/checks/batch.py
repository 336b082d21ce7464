"""Checks of the per-sample columns: a sample's output does not depend on the other samples of its batch."""

from __future__ import annotations

from ..transforms import Context, TransformRun
from .harness import Check, Truth, compare, tie_margin, time_dim, tol


def check_samples_independent(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The module run on the whole batch computes, for each sample, what it computes for that sample alone: a module
    that couples the samples (batch statistics) has no per-sample gradient, and vmap over samples, which runs each
    alone, computes something else than the batched module."""
    pair = out.findings.whole_batch
    if pair is None:
        raise RuntimeError(f"{transform} recorded no run of the whole batch beside the per-sample one")
    batched, alone = pair
    margin = truth.margin if truth.margin is not None and truth.margin.shape == alone.shape else None
    return compare(batched, alone, tol=tol(ctx, transform, "samples_independent"), cause="batch-coupled",
                   what="the module on the whole batch vs each sample run alone", margin=margin,
                   tie=tie_margin(ctx, transform), time_dim=time_dim(ctx), batch_dim=ctx.batch_dim)


CHECKS = (Check("samples_independent", check_samples_independent),)
