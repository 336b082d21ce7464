"""Checked-in expected results per environment: what CI compares a run against.

File layout (``"schema": 1``)::

    {"schema": 1, "env": "cpu-torch2.13",
     "cells": {"<subject>|<transform>|<check>|<device>|<dtype>": {"outcome": "pass", "cause": null}, ...}}

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
from .schema import OUTCOMES

SCHEMA = 1


class ExpectationsError(ValueError):
    """An expectations file that cannot be used (wrong schema, bad cell id or outcome)."""


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def load(path: Path | str) -> dict:
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


def dump(rows: Iterable[dict], env: str) -> dict:
    """Expectations from merged report rows (each with ``id``, ``outcome``, ``cause``), keys sorted."""
    cells = {r["id"]: {"outcome": r["outcome"], "cause": r.get("cause")} for r in rows}
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
    """Differences as (cell, expected, actual) strings: changed outcome or cause, new cells, and (when the run
    was complete) cells that were expected but did not run."""
    def show(value: dict | None) -> str:
        if value is None:
            return "(absent)"
        return value["outcome"] + (f" [{value['cause']}]" if value.get("cause") else "")

    diffs = []
    for cell, got in sorted(actual.items()):
        want = expected["cells"].get(cell)
        if want is None or (want["outcome"], want.get("cause")) != (got["outcome"], got.get("cause")):
            diffs.append((cell, show(want), show(got)))
    if complete:
        for cell in sorted(set(expected["cells"]) - set(actual)):
            diffs.append((cell, show(expected["cells"][cell]), "(absent)"))
    return diffs
