"""The checks of the matrix: plain functions, each asserting one property of a transform's run for one example.

``check_<property>(ctx, run, truth, transform) -> int`` raises :class:`~conformance.core.causes.CheckFailed` with a
cause and the failing coordinates, or returns how many output elements the tie rule excused (0 when none).
``truth`` is the spec's output and gradients for the example (float64, CPU). Checks never mutate their inputs.

Every module of this package that declares ``CHECKS`` (a tuple of :class:`Check`) adds them. A transform lists the
checks that judge it; a check may also name the transforms it applies to (``applies_to``, fnmatch globs), so a new
check is one module here, plus its mutant and the expectations of its cells (CONTRIBUTING.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from .harness import Check


def _gather() -> dict[str, Check]:
    found: dict[str, Check] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "harness":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for check in getattr(module, "CHECKS", ()):
            if check.name in found:
                raise ValueError(f"check {check.name!r} declared twice")
            found[check.name] = check
    return found


CHECKS: dict[str, Check] = _gather()
