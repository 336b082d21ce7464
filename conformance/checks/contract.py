"""The nn.Module contract: chaining methods return the module itself."""

from __future__ import annotations

from ..core.causes import CheckFailed
from ..transforms import Context, TransformRun
from .harness import Check, Truth


def check_module_contract(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """Every chaining nn.Module method returned the module itself (a wrapper that returns what it wraps, or a copy,
    silently breaks ``model = model.eval()``)."""
    if out.findings.returned_other is None:
        raise RuntimeError(f"{transform} recorded no module-method results")
    if out.findings.returned_other:
        raise CheckFailed("module-method-returned-other", "; ".join(out.findings.returned_other))
    return 0


CHECKS = (Check("module_contract", check_module_contract),)
