"""Checked-in expected results per environment: what CI compares a run against.

File layout (``"schema": 1``)::

    {"schema": 1, "env": "cpu-torch2.13",
     "cells": {"<subject>|<transform>|<check>|<device>|<dtype>": {"outcome": "pass", "cause": null}, ...}}

Sparse: a cell whose outcome the suite's own data already implies is not listed (:func:`implied`: a known failure
that failed as its entry declares, a cell inapplicable by design, a cell of a device the machine lacks). A run's
cell that is not listed must be implied; a listed one must match.

Accepting a change is one command: ``python -m conformance.expectations accept --results DIR`` (or
``python -m conformance.report --write-expectations FILE --env NAME``) rewrites the file from the recorded results.

A file describes one environment, named ``<device>-torch<major.minor>`` (the device kind of the machine: ``cpu``
for one without CUDA): ``check`` and ``accept`` use only the records made in that environment and say how many
others they left out (a record that does not state its environment counts as of any).

The command (``check``, ``accept``) is :mod:`conformance.expectations`; this module is the file format.

>>> data = dump([{"id": "s|eager|forward|cpu|float32", "outcome": "fail", "cause": "forward-mismatch"}], "cpu")
>>> data["cells"]["s|eager|forward|cpu|float32"]
{'outcome': 'fail', 'cause': 'forward-mismatch'}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from .. import SUITE_ROOT
from .io import NO_DEVICE, NOT_APPLICABLE
from .schema import OUTCOMES

SCHEMA = 1


class ExpectationsError(ValueError):
    """An expectations file that cannot be used (wrong schema, bad cell id or outcome)."""


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def read(path: Path | str) -> dict:
    """The validated contents of an expectations file: ``{"schema", "env", "cells"}``.

    Raises :class:`ExpectationsError` with one line saying what is wrong (unreadable, not JSON, wrong schema or
    types); never another exception for a bad file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not JSON, or not UTF-8
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0][:200]
        raise ExpectationsError(f"{path}: cannot read expectations: {reason}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("cells"), dict):
        raise ExpectationsError(f"{path}: not an expectations file (need a JSON object with \"schema\": {SCHEMA} "
                                "and a \"cells\" object)")
    if not isinstance(data.get("env", ""), str):
        raise ExpectationsError(f"{path}: \"env\" must be a string, not {_shown(data['env'])}")
    for cell, value in data["cells"].items():
        if cell.count("|") != 4:
            raise ExpectationsError(f"{path}: cell id {_shown(cell)} is not subject|transform|check|device|dtype")
        if not isinstance(value, dict) or value.get("outcome") not in OUTCOMES:
            raise ExpectationsError(f"{path}: cell {_shown(cell)}: outcome must be one of {', '.join(OUTCOMES)}")
        if not isinstance(value.get("cause"), (str, type(None))):
            raise ExpectationsError(f"{path}: cell {_shown(cell)}: cause must be a string or null, not "
                                    f"{_shown(value['cause'])}")
    return {"schema": SCHEMA, "env": data.get("env", ""), "cells": data["cells"]}


def implied(outcome: str, message: str | None, known) -> bool:
    """Whether a cell's outcome follows from the suite's own data, so that an expectations file need not list it: a
    known failure that failed as its entry declares (xfail: the runner has checked the cause against the entry), a
    cell inapplicable by design, a CUDA cell on a machine without one."""
    if outcome == "xfail":
        return bool(known)
    return outcome == "skip" and isinstance(message, str) and (message.startswith(NOT_APPLICABLE)
                                                              or message == NO_DEVICE)


def is_implied(cell: dict) -> bool:
    """``implied`` for a report row or a cell value ({"outcome", "cause", "implied"}) that already says."""
    if "implied" in cell:
        return bool(cell["implied"])
    return implied(cell["outcome"], cell.get("message"), cell.get("known"))


def dump(rows: Iterable[dict], env: str) -> dict:
    """Expectations from merged report rows (``id``, ``outcome``, ``cause`` and, to tell what is implied,
    ``message`` and ``known`` or ``implied``): every cell but the implied ones, keys sorted."""
    cells = {r["id"]: {"outcome": r["outcome"], "cause": r.get("cause")} for r in rows if not is_implied(r)}
    return {"schema": SCHEMA, "env": env, "cells": dict(sorted(cells.items()))}


def dumps(data: dict) -> str:
    """An expectations file's text (keys sorted; recorded strings escaped as in every JSON the report writes)."""
    from ..core.escape import json_text

    return json_text(data, indent=1, sort_keys=True) + "\n"


def environment_name() -> str:
    """The expectations key of this machine: device kind and torch minor version, e.g. ``cpu-torch2.13``."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    major_minor = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    return f"{device}-torch{major_minor}"


def default_path(env: str) -> Path:
    return SUITE_ROOT / "reports" / "expected" / f"{env}.json"


def compare(expected: dict, actual: dict[str, dict], *, complete: bool) -> list[tuple[str, str, str]]:
    """Differences as (cell, expected, actual) strings: changed outcome or cause, cells neither listed nor implied
    (``actual`` values carry ``implied``, or ``message`` and ``known``), and (when the run was complete) listed cells
    that did not run."""
    def show(value: dict | None, missing: str = "(absent)") -> str:
        if value is None:
            return missing
        return value["outcome"] + (f" [{value['cause']}]" if value.get("cause") else "")

    diffs = []
    for cell, got in sorted(actual.items()):
        want = expected["cells"].get(cell)
        if want is None and is_implied(got):
            continue  # not listed, and its outcome is the one the suite's data implies
        if want is None or (want["outcome"], want.get("cause")) != (got["outcome"], got.get("cause")):
            diffs.append((cell, show(want, "(not listed, not implied)"), show(got)))
    if complete:
        for cell in sorted(set(expected["cells"]) - set(actual)):
            diffs.append((cell, show(expected["cells"][cell]), "(absent)"))
    return diffs
