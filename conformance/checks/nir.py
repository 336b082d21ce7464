"""An exported graph means what the module computes: NIR's own equations (qsnn_reference.nir) run on it agree with the
eager module."""

from __future__ import annotations

from ..core.causes import CheckFailed
from ..transforms import Context, TransformRun
from .harness import Check, Truth, compare, raise_stored_failure, tol


def check_nir_graph_matches_module(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The graph the library exported, run by NIR's declared semantics at the exporter's dt, gives the module's
    output; the message names the graph's parameters (a tau in the wrong unit, a reset that is not the module's)."""
    raise_stored_failure(out)
    if out.findings.nir is None:
        raise RuntimeError(f"{transform} did not record the NIR graph")
    found = out.findings.nir
    try:
        compare(out.y, out.against.y, tol=tol(ctx, transform, "nir_graph_matches_module"),
                cause="nir-graph-changed-forward", what="the NIR graph's declared output vs the module's")
    except CheckFailed as failure:
        raise CheckFailed(failure.cause, f"{failure.message}; the graph, exported at dt={found.dt:g}: {found.graph}",
                          max_abs_err=failure.max_abs_err, max_rel_err=failure.max_rel_err, atol=failure.atol,
                          rtol=failure.rtol) from None
    return 0


CHECKS = (Check("nir_graph_matches_module", check_nir_graph_matches_module),)
