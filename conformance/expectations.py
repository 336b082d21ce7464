"""Checked-in expected results per environment: what CI compares a run against.

File layout (``"schema": 1``)::

    {"schema": 1, "env": "cpu-torch2.13",
     "cells": {"<subject>|<transform>|<check>|<device>|<dtype>": {"outcome": "pass", "cause": null}, ...}}

Accepting a change is one command: ``python -m conformance.expectations accept --results DIR`` (or
``python -m conformance.report --write-expectations FILE --env NAME``) rewrites the file from the recorded results.

A file describes one environment, named ``<device>-torch<major.minor>`` (the device kind of the machine: ``cpu``
for one without CUDA): ``check`` and ``accept`` use only the records made in that environment and say how many
others they left out (a record that does not state its environment counts as of any).

Exit status of ``check``: 0 as expected; 1 results differ (worse or better) or no expectations for this
environment; 2 usage error, a corrupt expectations file or no records.

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
    from .report_escape import json_text

    return json_text(data, indent=1, sort_keys=True) + "\n"


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


def _recorded(paths: list[str], env: str) -> tuple[dict[str, dict], str | None]:
    """cell -> {"outcome", "cause"} of the records of environment ``env`` under ``paths`` (the report's merge rule),
    and a sentence saying what was left out (None when nothing)."""
    from .report_data import left_out_note, load

    loaded = load(paths, environment=env)
    for problem in loaded.problems:
        _say(f"skipped {problem}")
    if loaded.env_cells is None:  # the name states no environment: every record
        return {r["id"]: {"outcome": r["outcome"], "cause": r["cause"]} for r in loaded.rows}, None
    return loaded.env_cells, left_out_note(env, loaded.left_out)


def _say(text: str, *, err: bool = True) -> None:
    from .report_escape import terminal_text

    print(f"expectations: {terminal_text(text)}", file=sys.stderr if err else sys.stdout)


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line naming the problem and the valid usage (choices included), exit status 2."""

    def error(self, message: str):
        from .report_escape import terminal_text

        self.exit(2, f"{self.prog}: error: {terminal_text(message)} ({' '.join(self.format_usage().split())})\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(
        prog="python -m conformance.expectations",
        description="Compare a run with the checked-in expected results (CI fails when results get worse OR "
                    "better), or accept the run's results as the new expectations. Only the records of the "
                    "expectations' environment are used.",
        epilog="Exit status of check: 0 as expected; 1 results differ, or no expectations for the environment; "
               "2 usage error, corrupt expectations file, or no records.")
    parser.add_argument("action", choices=["check", "accept"])
    parser.add_argument("--results", nargs="+", required=True, help="result files or directories of the run")
    parser.add_argument("--env", default=None, help="environment name (default: this machine's, e.g. cpu-torch2.13)")
    parser.add_argument("--file", default=None, help="expectations file (default reports/expected/<env>.json)")
    parser.add_argument("--partial", action="store_true", help="the run covered a subset: absent cells are fine")
    args = parser.parse_args(argv)
    env = args.env or environment_name()
    path = Path(args.file) if args.file else default_path(env)
    try:
        expected = load(path) if path.exists() and (args.action == "check" or args.partial) else None
    except ExpectationsError as exc:
        _say(str(exc))
        return 2
    if expected is not None and expected["env"] and not args.env:
        env = expected["env"]  # the file says which environment it describes
    actual, left_out = _recorded(args.results, env)
    if left_out:
        _say(left_out)
    if not actual:
        _say(f"no records of environment {env} found in {' '.join(args.results)}")
        return 2
    if args.action == "accept":
        if expected is not None:
            merged = expected["cells"]
            merged.update(actual)
            actual = merged
        rows = [{"id": k, **v} for k, v in actual.items()]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(dumps(dump(rows, env)), encoding="utf-8")
        tmp.replace(path)
        _say(f"wrote {len(rows)} cells to {path}", err=False)
        return 0
    if expected is None:
        _say(f"no expectations file {path} for environment {env!r}. Accept this run with: "
             f"python -m conformance.expectations accept --results {' '.join(args.results)}")
        return 1
    diffs = compare(expected, actual, complete=not args.partial)
    if not diffs:
        _say(f"{len(actual)} cells match {path}", err=False)
        return 0
    from tabulate import tabulate

    from .report_escape import terminal_text

    shown = [[terminal_text(part) for part in row] for row in diffs[:200]]
    print(tabulate(shown, headers=["cell", "expected", "this run"], tablefmt="github", disable_numparse=True))
    if len(diffs) > 200:
        print(f"... and {len(diffs) - 200} more")
    print()
    _say(f"{len(diffs)} cell(s) differ from {path} (worse or better). If the change is intended, accept it: "
         f"python -m conformance.expectations accept --results {' '.join(args.results)}", err=False)
    return 1


if __name__ == "__main__":
    sys.exit(main())
