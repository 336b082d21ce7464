"""The transforms of the matrix: every module of this package that declares ``TRANSFORMS`` (a tuple of
:class:`~conformance.transforms.harness.Transform`) and ``ORDER`` (its place in the table), gathered in that order.

A new transform is one module here, written with :mod:`conformance.transforms.harness`, plus the expectations of its
cells (CONTRIBUTING.md). The table's order is the order of the report's columns.
"""

from __future__ import annotations

import importlib
import pkgutil

from .harness import Context, Findings, HookCapture, Transform, TransformRun

__all__ = ["TRANSFORMS", "Context", "Findings", "HookCapture", "Transform", "TransformRun", "by_id"]


def _gather() -> tuple[Transform, ...]:
    modules = [importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)
               if info.name != "harness"]
    table: list[Transform] = []
    for module in sorted((m for m in modules if hasattr(m, "TRANSFORMS")), key=lambda m: (m.ORDER, m.__name__)):
        table.extend(module.TRANSFORMS)
    ids = [t.id for t in table]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise ValueError(f"transform id(s) declared twice: {duplicated}")
    return tuple(table)


TRANSFORMS: tuple[Transform, ...] = _gather()
_BY_ID = {t.id: t for t in TRANSFORMS}


def by_id(transform_id: str) -> Transform:
    """The transform of that id (KeyError for another)."""
    return _BY_ID[transform_id]
