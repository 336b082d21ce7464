"""Use the checks from a library's own test suite, in the spirit of scikit-learn's ``parametrize_with_checks``.

>>> # in the library's tests/test_conformance.py (with ``-p conformance.plugin`` to record cells)
>>> from conformance.api import parametrize_with_checks, check_cell
>>> from conformance.types import Subject
>>> MY_LEAKY = Subject(id="mylib.Leaky", spec="neuron.leaky", build=build_my_leaky, param_map={"beta": "beta"},
...                    fixed={"reset_mechanism": "subtract"}, library="mylib")
>>> @parametrize_with_checks([MY_LEAKY], transforms=["eager", "deepcopy", "compile_aot_eager"])
... def test_conformance(cell, record_cell):   # record_cell: the plugin's fixture (streams the JSONL record)
...     check_cell(cell, record=record_cell)
"""

from __future__ import annotations

from typing import Iterable

import pytest

from . import registry
from .plugin import to_pytest_outcome
from .results import CellResult
from .runner import run_cell
from .types import Cell, Subject


def parametrize_with_checks(subjects: Iterable[Subject], *, transforms: Iterable[str] | None = None,
                            devices: Iterable[str] = ("cpu",)):
    """A ``pytest.mark.parametrize("cell", ...)`` over every cell of ``subjects``; ids are the matrix coordinates."""
    subjects = list(subjects)
    for subject in subjects:
        registry.register(subject)
    unknown = sorted(set(transforms or ()) - set(registry.transforms()))
    if unknown:
        raise ValueError(f"unknown transform(s) {unknown}; known: {sorted(registry.transforms())}")
    cells = registry.cells([s.id for s in subjects], devices=devices, transform_ids=transforms)
    return pytest.mark.parametrize("cell", cells, ids=[c.id for c in cells])


def check_cell(cell: Cell, *, record=None) -> CellResult:
    """Run one cell and turn its outcome into pytest's (skip / xfail / fail with cause and minimal example).

    ``record`` is the plugin's ``record_cell`` fixture: pass it to stream the cell into the results files.
    """
    result = run_cell(cell)
    if record is not None:
        record(cell, result)
    else:
        to_pytest_outcome(result)
    return result
