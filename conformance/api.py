"""The public interface for other libraries: declare subjects (``Subject``, ``Known``) and use the checks from the
library's own test suite, in the spirit of scikit-learn's ``parametrize_with_checks``.

>>> # in the library's tests/test_conformance.py (the plugin registers itself when the package is installed)
>>> from conformance.api import Subject, check_cell, parametrize_with_checks
>>> MY_LEAKY = Subject(id="mylib.Leaky", spec="neuron.leaky", build=build_my_leaky, param_map={"beta": "beta"},
...                    fixed={"reset_mechanism": "subtract"}, library="mylib")
>>> @parametrize_with_checks([MY_LEAKY], transforms=["eager", "deepcopy", "compile_aot_eager"])
... def test_conformance(cell, record_cell):   # record_cell: the plugin's fixture (streams the JSONL record)
...     check_cell(cell, record=record_cell)

Every cell is isolated without asking: a crash or a hang in C code costs that cell (recorded as ``crash`` or
``timeout``), not the run; each record's reproduce command loads the subjects from the file that declared them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterable

import pytest

from . import registry
from .core.settings import UsageError
from .core.types import CallProtocol, Cell, Example, Known, Spec, Subject
from .plugin import to_pytest_outcome
from .records.io import CellResult
from .runner import run_cell

__all__ = ["CallProtocol", "Cell", "Example", "Known", "Spec", "Subject", "check_cell", "parametrize_with_checks"]


def parametrize_with_checks(subjects: Iterable[Subject], *, transforms: Iterable[str] | None = None,
                            devices: Iterable[str] = ("cpu",)):
    """A ``pytest.mark.parametrize("cell", ...)`` over every cell of ``subjects``; ids are the matrix coordinates.

    A bad declaration (an unknown spec, transform or device, a ``fixed`` key the spec does not have) fails the
    test module's collection with one line naming what is valid.
    """
    subjects = list(subjects)
    origin = _caller_file()
    transforms = None if transforms is None else list(transforms)
    devices = list(devices)
    try:
        for subject in subjects:
            if not isinstance(subject, Subject):
                raise UsageError(f"parametrize_with_checks takes conformance.api.Subject, got "
                                 f"{type(subject).__name__}")
            registry.register(subject, origin=origin)
        unknown = sorted(set(transforms or ()) - set(registry.transforms()))
        if unknown:
            raise UsageError(f"unknown transform(s) {', '.join(map(repr, unknown))}; valid: "
                             f"{', '.join(sorted(registry.transforms()))}")
        bad_devices = sorted(set(devices) - set(registry.DEVICES))
        if bad_devices:
            raise UsageError(f"unknown device(s) {', '.join(map(repr, bad_devices))}; valid: "
                             f"{', '.join(registry.DEVICES)}")
    except UsageError as error:
        pytest.fail(f"conformance: {error}", pytrace=False)
    cells = registry.cells([s.id for s in subjects], devices=devices, transform_ids=transforms)
    # Checks of one (subject, transform) share a worker under --dist loadgroup, so a compiled module is reused.
    params = [pytest.param(c, id=c.id, marks=pytest.mark.xdist_group(f"{c.subject}|{c.transform}")) for c in cells]
    return pytest.mark.parametrize("cell", params)


def _caller_file() -> str | None:
    """The file that called parametrize_with_checks, relative to the working directory when it is inside it."""
    path = Path(sys._getframe(2).f_code.co_filename)
    if not path.is_file():
        return None
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)


def check_cell(cell: Cell, *, record=None) -> CellResult:
    """Run one cell and turn its outcome into pytest's (skip / xfail / fail with cause, minimal example and the
    reproduce command).

    ``record`` is the plugin's ``record_cell`` fixture: pass it to stream the cell into the results files and to
    run the cell isolated (forked, or under the worker's watchdog) as the session is configured.
    """
    run = getattr(record, "run", None) or run_cell
    result = run(cell)
    if record is not None:
        record(cell, result)
    else:
        to_pytest_outcome(result)
    return result
