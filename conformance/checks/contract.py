"""The nn.Module contract: chaining methods return the module itself; separate builds share no part."""

from __future__ import annotations

from ..core.causes import CheckFailed
from ..transforms import Context, TransformRun
from .harness import Check, Failures, Truth


def check_module_contract(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """Every chaining nn.Module method returned the module itself (one returning a copy breaks ``model =
    model.eval()``), and eval(), train(False) and train() set every submodule's mode.

    A ``train`` override that does not recurse leaves a BatchNorm or dropout in the other mode."""
    if out.findings.returned_other is None or out.findings.modes_not_set is None:
        raise RuntimeError(f"{transform} recorded no module-method results")
    failures = Failures()
    if out.findings.returned_other:
        failures.add(CheckFailed("module-method-returned-other", "; ".join(out.findings.returned_other)))
    if out.findings.modes_not_set:
        failures.add(CheckFailed("mode-not-propagated", "; ".join(out.findings.modes_not_set[:5])))
    failures.raise_first()
    return 0


def check_independent_builds(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """Two modules built separately share no part: no submodule instance, no tensor memory, no mutable attribute
    object. A hook, an attribute, a mode or an in-place change (``load_state_dict`` too) on one module's part would
    reach the other (a default argument such as ``surrogate_function=Sigmoid()`` is evaluated once)."""
    if out.findings.shared_between_builds is None:
        raise RuntimeError(f"{transform} recorded no comparison of two builds")
    by_cause: dict[str, list[str]] = {}
    for cause, part in out.findings.shared_between_builds:
        by_cause.setdefault(cause, []).append(part)
    failures = Failures()  # each kind of sharing is a finding: the first the cell's, the others its also
    for cause, parts in by_cause.items():
        failures.add(CheckFailed(cause, f"two separately built modules hold the same {_WHAT[cause]}{', '.join(parts)}"))
    failures.raise_first()
    return 0


_WHAT = {"module-shared-between-builds": "instance of ", "tensor-shared-between-builds": "memory under ",
         "object-shared-between-builds": "mutable object as "}


CHECKS = (Check("module_contract", check_module_contract), Check("independent_builds", check_independent_builds))
