"""The nn.Module contract: chaining methods return the module itself; separate builds share no part."""

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


def check_independent_builds(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """Two modules built separately share no submodule instance: a hook, an attribute or a mode set on one module's
    part would reach the other (a default argument such as ``surrogate_function=Sigmoid()`` is evaluated once)."""
    if out.findings.shared_between_builds is None:
        raise RuntimeError(f"{transform} recorded no comparison of two builds")
    if out.findings.shared_between_builds:
        raise CheckFailed("module-shared-between-builds", "two separately built modules hold the same instance of "
                          + ", ".join(out.findings.shared_between_builds))
    return 0


CHECKS = (Check("module_contract", check_module_contract), Check("independent_builds", check_independent_builds))
