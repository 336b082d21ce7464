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

import argparse
import json
import sys
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


def environment_name() -> str:
    """The expectations key of this machine: device kind and torch minor version, e.g. ``cpu-torch2.13``."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    major_minor = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    return f"{device}-torch{major_minor}"


def default_path(env: str) -> Path:
    return Path(__file__).resolve().parent.parent / "reports" / "expected" / f"{env}.json"


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


def _recorded(paths: list[str]) -> dict[str, dict]:
    from .results import iter_records, latest_by_cell

    problems: list = []
    records = latest_by_cell(iter_records(paths, problems))
    for problem in problems:
        print(f"expectations: skipped {problem}", file=sys.stderr)
    return {key: {"outcome": r["outcome"], "cause": r.get("cause")} for key, r in records.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.expectations",
        description="Compare a run with the checked-in expected results (CI fails when results get worse OR "
                    "better), or accept the run's results as the new expectations.")
    parser.add_argument("action", choices=["check", "accept"])
    parser.add_argument("--results", nargs="+", required=True, help="result files or directories of the run")
    parser.add_argument("--env", default=None, help="environment name (default: this machine's, e.g. cpu-torch2.13)")
    parser.add_argument("--file", default=None, help="expectations file (default reports/expected/<env>.json)")
    parser.add_argument("--partial", action="store_true", help="the run covered a subset: absent cells are fine")
    args = parser.parse_args(argv)
    env = args.env or environment_name()
    path = Path(args.file) if args.file else default_path(env)
    actual = _recorded(args.results)
    if not actual:
        print(f"expectations: no records found in {args.results}", file=sys.stderr)
        return 2
    if args.action == "accept":
        if path.exists() and args.partial:
            merged = load(path)["cells"]
            merged.update(actual)
            actual = merged
        rows = [{"id": k, **v} for k, v in actual.items()]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(dump(rows, env), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
        print(f"expectations: wrote {len(rows)} cells to {path}")
        return 0
    if not path.exists():
        print(f"expectations: no expectations file {path} for environment {env!r}.\n"
              f"Accept this run with: python -m conformance.expectations accept --results {' '.join(args.results)}",
              file=sys.stderr)
        return 1
    diffs = compare(load(path), actual, complete=not args.partial)
    if not diffs:
        print(f"expectations: {len(actual)} cells match {path}")
        return 0
    from tabulate import tabulate

    print(tabulate(diffs[:200], headers=["cell", "expected", "this run"], tablefmt="github"))
    if len(diffs) > 200:
        print(f"... and {len(diffs) - 200} more")
    print(f"\nexpectations: {len(diffs)} cell(s) differ from {path} (worse or better).\n"
          f"If the change is intended, accept it: python -m conformance.expectations accept --results "
          f"{' '.join(args.results)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
