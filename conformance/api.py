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
from typing import Iterable, Mapping

import pytest

from . import registry
from .core.escape import terminal_text
from .core.settings import UsageError
from .core.types import CallProtocol, Cell, Example, Known, Spec, Subject
from .plugin import to_pytest_outcome
from .records.io import CellResult
from .runner import run_cell

__all__ = ["CallProtocol", "Cell", "Example", "Known", "Spec", "Subject", "check_cell", "parametrize_with_checks",
           "subject", "subjects"]


def parametrize_with_checks(subjects: Iterable[Subject], *, transforms: Iterable[str] | None = None,
                            devices: Iterable[str] = ("cpu",), known: Mapping[str, Iterable[Known]] | None = None):
    """A ``pytest.mark.parametrize("cell", ...)`` over every cell of ``subjects``; ids are the matrix coordinates.

    ``known``: ``{subject id: [Known, ...]}``, known failures this test file adds to its subjects (for a subject
    that a package's entry point declares, its tests keep their own known failures here). A subject declared
    elsewhere too must be the same declaration (``subject(id)`` returns it).
    A bad declaration (an unknown spec, transform or device, a ``fixed`` key the spec does not have, a subject
    declared differently elsewhere) fails the test module's collection with one line naming what is valid.
    """
    subjects = list(subjects)
    origin = _caller_file()
    transforms = None if transforms is None else list(transforms)
    devices = list(devices)
    problem = None
    try:
        for declared in subjects:
            if not isinstance(declared, Subject):
                raise UsageError(f"parametrize_with_checks takes conformance.api.Subject, got "
                                 f"{type(declared).__name__}")
            registry.register(declared, origin=origin)
        for subject_id, entries in (known or {}).items():
            if subject_id not in {s.id for s in subjects}:
                raise UsageError(f"known failures for {subject_id!r}, which is not among the subjects checked here")
            registry.add_known(subject_id, entries)
        unknown = sorted(set(transforms or ()) - set(registry.transforms()))
        if unknown:
            raise UsageError(f"unknown transform(s) {', '.join(map(repr, unknown))}; valid: "
                             f"{', '.join(sorted(registry.transforms()))}")
        bad_devices = sorted(set(devices) - set(registry.DEVICES))
        if bad_devices:
            raise UsageError(f"unknown device(s) {', '.join(map(repr, bad_devices))}; valid: "
                             f"{', '.join(registry.DEVICES)}")
    except UsageError as error:
        problem = str(error)
    if problem is not None:  # outside the handler: pytest would print the UsageError too, as the failure's context
        pytest.fail(terminal_text(f"conformance: {problem}"), pytrace=False)
    cells = registry.cells([s.id for s in subjects], devices=devices, transform_ids=transforms)
    # Checks of one (subject, transform) share a worker under --dist loadgroup, so a compiled module is reused.
    params = [pytest.param(c, id=c.id, marks=pytest.mark.xdist_group(f"{c.subject}|{c.transform}")) for c in cells]
    return pytest.mark.parametrize("cell", params)


def subject(subject_id: str) -> Subject:
    """The registered subject ``subject_id`` (declared by the suite, a package's entry point or a test file), with
    the known failures test files added; a one-line ``UsageError`` naming the near ids when there is none.

    >>> subject("reference.quant.sign_ste").spec
    'quant.sign_ste'
    """
    found = registry.subjects().get(subject_id)
    if found is None:
        import difflib

        near = difflib.get_close_matches(subject_id, list(registry.subjects()), n=3)
        raise UsageError(f"no subject {subject_id!r} is registered" + (f" (did you mean {', '.join(map(repr, near))}?)"
                                                                       if near else ""))
    return found


def subjects() -> dict[str, Subject]:
    """Every registered subject by id (a copy: register with ``parametrize_with_checks``)."""
    return dict(registry.subjects())


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
