"""The compiler's view: dynamo captures the module's forward without a graph break."""

from __future__ import annotations

from ..core.causes import CheckFailed, graph_break_reason
from ..transforms import Context, TransformRun
from .harness import Check, Truth, raise_stored_failure


def check_no_graph_breaks(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """dynamo records no graph break in the module's forward (resumed breaks and frames skipped by a break in a
    loop both count)."""
    if out.findings.graph_breaks is None:
        raise RuntimeError(f"{transform} did not ask dynamo for graph breaks")
    count, reasons = out.findings.graph_breaks
    if not count:
        raise_stored_failure(out)  # no break, yet fullgraph compilation failed: report that
    if count:
        raise CheckFailed("graph-break:" + graph_break_reason(reasons[0] if reasons else "unknown"),
                          f"{count} graph break(s): " + " | ".join(reasons[:3]))
    return 0


CHECKS = (Check("no_graph_breaks", check_no_graph_breaks),)
