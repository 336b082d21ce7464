"""Compare a run with the checked-in expected results, or accept them: ``python -m conformance.expectations``.

    python -m conformance.expectations check --results reports/results/<run>    # exit 1 when any cell differs
    python -m conformance.expectations accept --results reports/results/<run>   # the run becomes the expectations

Only the records of the expectations' environment are used (the file format: :mod:`conformance.records.expectations`;
the merge rule: the report's). Exit status of ``check``: 0 as expected; 1 results differ (worse or better) or no
expectations for this environment; 2 usage error, a corrupt expectations file or no records.

``accept`` of a slice (a run that lacks cells the file lists) writes nothing unless told what to do with the cells it
lacks: ``--partial`` keeps them as listed, ``--replace`` drops them (a whole run after subjects were removed).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from .core.escape import terminal_text
from .core.extras import tabulate
from .core.fileio import atomic_write
from .core.usage import OneLineParser
from .records.expectations import ExpectationsError, compare, default_path, dump, dumps, environment_name, read
from .report.data import left_out_note, load_records


def _recorded(paths: list[str], env: str) -> tuple[dict[str, dict], str | None]:
    """cell -> {"outcome", "cause"} of the records of environment ``env`` under ``paths`` (the report's merge rule),
    and a sentence saying what was left out (None when nothing)."""
    loaded = load_records(paths, environment=env)
    for problem in loaded.problems:
        _say(f"skipped {problem}")
    if loaded.env_cells is None:  # the name states no environment: every record
        return {r["id"]: {"outcome": r["outcome"], "cause": r["cause"]} for r in loaded.rows}, None
    return loaded.env_cells, left_out_note(env, loaded.left_out)


def _without_cpu_dependent(cells: dict[str, dict]) -> tuple[dict[str, dict], int]:
    """``cells`` without those whose outcome depends on the machine's CPU (registry.depends_on_cpu), and how many
    were taken out."""
    from . import registry

    def depends(cell_id: str) -> bool:
        try:
            return registry.depends_on_cpu(registry.parse_cell_id(cell_id))
        except Exception:  # noqa: BLE001 - a cell id this suite cannot parse is compared as any other
            return False

    kept = {cell: value for cell, value in cells.items() if not depends(cell)}
    return kept, len(cells) - len(kept)


def _say(text: str, *, err: bool = True) -> None:
    print(f"expectations: {terminal_text(text)}", file=sys.stderr if err else sys.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
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
    parser.add_argument("--partial", action="store_true", help="the run covered a subset: absent cells are fine "
                        "(check), the listed cells it lacks are kept (accept)")
    parser.add_argument("--replace", action="store_true", help="accept: the run is the whole matrix, the listed "
                        "cells it lacks are dropped (without --partial or --replace, accept of a slice is refused)")
    args = parser.parse_args(argv)
    if args.partial and args.replace:
        parser.error("--partial keeps the cells the run lacks, --replace drops them: give one")
    env = args.env or environment_name()
    path = Path(args.file) if args.file else default_path(env)
    try:
        expected = read(path) if path.exists() and not (args.action == "accept" and args.replace) else None
    except ExpectationsError as exc:
        _say(f"{exc}" + (" (accept --replace overwrites it)" if args.action == "accept" else ""))
        return 2
    if expected is not None and expected["env"] and not args.env:
        env = expected["env"]  # the file says which environment it describes
    actual, left_out = _recorded(args.results, env)
    if left_out:
        _say(left_out)
    actual, on_cpu = _without_cpu_dependent(actual)
    if expected is not None:
        expected = {**expected, "cells": _without_cpu_dependent(expected["cells"])[0]}
    if on_cpu:
        _say(f"{on_cpu} cell(s) depend on the CPU (known failures declared for some CPU features, Known.cpu): "
             "not compared, not written", err=False)
    if not actual:
        _say(f"no records of environment {env} found in {' '.join(args.results)}")
        return 2
    if args.action == "accept":
        return _accept(args, path, env, expected, actual)
    if expected is None:
        _say(f"no expectations file {path} for environment {env!r}. Accept this run with: {_accept_command(args)}")
        return 1
    diffs = compare(expected, actual, complete=not args.partial)
    if not diffs:
        _say(f"{len(actual)} cells match {path}", err=False)
        return 0
    shown = [[terminal_text(part) for part in row] for row in diffs[:200]]
    print(tabulate(shown, headers=["cell", "expected", "this run"], tablefmt="github", disable_numparse=True))
    if len(diffs) > 200:
        print(f"... and {len(diffs) - 200} more")
    print()
    _say(f"{len(diffs)} cell(s) differ from {path} (worse or better). If the change is intended, accept it: "
         f"{_accept_command(args)}", err=False)
    return 1


def _accept_command(args: argparse.Namespace) -> str:
    """The accept command for the run ``args`` checked: with ``--partial`` when the check was of a slice, so that
    following the hint keeps the cells the slice did not run."""
    words = ["python", "-m", "conformance.expectations", "accept", *(["--partial"] if args.partial else []),
             "--results", *args.results]
    for option in ("env", "file"):
        if getattr(args, option):
            words += [f"--{option}", getattr(args, option)]
    return shlex.join(words)


def _accept(args: argparse.Namespace, path: Path, env: str, expected: dict | None, actual: dict[str, dict]) -> int:
    """Write the run's results into the expectations file; refused (exit 2) for a slice without --partial or
    --replace, which would otherwise drop every listed cell the slice did not run."""
    if expected is not None:
        lacking = set(expected["cells"]) - set(actual)
        if lacking and not args.partial:
            _say(f"this run lacks {len(lacking)} of the {len(expected['cells'])} cells {path} lists (a slice?); "
                 f"nothing written. Keep them: {_accept_command(argparse.Namespace(**{**vars(args), 'partial': True}))}"
                 " (or add --replace to drop them)")
            return 2
        actual = {**expected["cells"], **actual}
    rows = [{"id": k, **v} for k, v in actual.items()]
    data = dump(rows, env)
    try:
        atomic_write(path, dumps(data))
    except OSError as exc:
        _say(f"cannot write {path}: {exc.strerror or exc}")
        return 2
    _say(f"wrote {path}: {len(data['cells'])} cells listed, {len(rows) - len(data['cells'])} more whose outcome "
         "the suite's data implies", err=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
