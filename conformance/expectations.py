"""Checked-in expected results per environment: what CI compares a run against.

File layout (``"schema": 1``)::

    {"schema": 1, "env": "cpu-torch2.13",
     "cells": {"<subject>|<transform>|<check>|<device>|<dtype>": {"outcome": "pass", "cause": null}, ...}}

Accepting a change is one command: ``python -m conformance.report --write-expectations FILE --env NAME``
rewrites the file from the recorded results.

>>> data = dump([{"id": "s|eager|forward|cpu|float32", "outcome": "fail", "cause": "forward-mismatch"}], "cpu")
>>> data["cells"]["s|eager|forward|cpu|float32"]
{'outcome': 'fail', 'cause': 'forward-mismatch'}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from .types import OUTCOMES

SCHEMA = 1


class ExpectationsError(ValueError):
    """An expectations file that cannot be used (wrong schema, bad cell id or outcome)."""


def load(path: Path | str) -> dict:
    """The validated contents of an expectations file: ``{"schema", "env", "cells"}``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ExpectationsError(f"{path}: cannot read expectations: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("cells"), dict):
        raise ExpectationsError(f"{path}: not an expectations file (need schema {SCHEMA} and a 'cells' object)")
    for cell, value in data["cells"].items():
        if cell.count("|") != 4:
            raise ExpectationsError(f"{path}: cell id {cell!r} is not subject|transform|check|device|dtype")
        if not isinstance(value, dict) or value.get("outcome") not in OUTCOMES:
            raise ExpectationsError(f"{path}: cell {cell!r}: outcome must be one of {OUTCOMES}")
    return {"schema": SCHEMA, "env": str(data.get("env", "")), "cells": data["cells"]}


def dump(rows: Iterable[dict], env: str) -> dict:
    """Expectations from merged report rows (each with ``id``, ``outcome``, ``cause``), keys sorted."""
    cells = {r["id"]: {"outcome": r["outcome"], "cause": r.get("cause")} for r in rows}
    return {"schema": SCHEMA, "env": env, "cells": dict(sorted(cells.items()))}
