"""Render the compatibility matrix from recorded cell results: ``python -m conformance.report``.

Reads the JSONL records under ``--results`` (any number of files or directories, merged: per cell the record of
the newest suite version wins, then the latest run; ``--latest-run-wins`` for the latest run only) and writes
``matrix.html`` (self-contained), ``matrix.md``, ``matrix.json`` and ``summary.md`` (pass rates and changes, small
enough for a pull-request comment) into ``--out`` (default ``reports``). Outcomes are shown as recorded, never
re-derived.

Without ``--results`` it reads ``reports/results`` and the checked-in GPU records of ``reports/cuda``, and first
runs the default matrix into ``reports/results`` (pytest, streaming its progress) when there is no record of this
machine's devices (cpu; cuda when torch sees a GPU) other than a no-device skip. A path named with ``--results`` is
never run into: a missing or empty one is an error.

    python -m conformance.report                                   # render (run the matrix if this machine has none)
    python -m conformance.report --results reports/results reports/cuda --out reports
    python -m conformance.report --diff-against reports/expected/cpu-torch2.13.json --fail-on-regression
    python -m conformance.report --write-expectations reports/expected/cpu.json --env cpu-torch2.13

Against an expectations file of one environment (``cpu-torch2.13``) only the records of that environment are
compared; the others (e.g. the merged CUDA columns) are left out, and the report says how many.

``python -m conformance.report site --runs-from PUBLISHED --add REPORT --run-id ID --out SITE`` publishes reports as a
static site, each run under its own address (:mod:`conformance.report.site`).

Every report names the directories it read (a run nested in a given directory included) and, when ``--results``
leaves out the checked-in CUDA records or the release history is not read, says so and how to include them.

Exit status: 0 rendered; 1 regressions against --diff-against with --fail-on-regression; 2 usage error, a corrupt
or missing baseline or one without a readable cell (with --fail-on-regression: with any unreadable line), a named
--results path missing or empty, or no records at all (after running the matrix).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from ..core.escape import terminal_text
from ..core.fileio import atomic_write_many
from ..core.usage import OneLineParser
from ..records import expectations
from ..records.io import DEFAULT_DIR, missing_shards
from .data import (
    JSON_SCHEMA_VERSION,
    STALE_AFTER_S,
    Loaded,
    build_model,
    diff,
    in_environment,
    left_out_note,
    load_records,
    load_baseline,
    load_bench,
    matrix_json,
    parse_environment,
    versions_note,
)
from .history import HISTORY_DIR, build_history, load_history
from .html import render_chunks
from .markdown import diff_summary, render_diff_markdown, render_markdown, render_summary

DEFAULT_OUT = Path("reports")
DEFAULT_RUN = ("{python} -m pytest suites/test_matrix.py -n auto --dist loadgroup -p no:cacheprovider -q "
               "--results-dir {results_dir}")
PROG = "python -m conformance.report"


def say(text: str, *, err: bool = True) -> None:
    """One line on stderr (or stdout), control characters from records and libraries made visible."""
    print(f"conformance.report: {terminal_text(text)}", file=sys.stderr if err else sys.stdout, flush=True)


# ------------------------------------------------------------------------------------------------ running
#: Present in a results directory while the matrix run that fills it has not finished (a killed run keeps it).
RUNNING_MARKER = ".matrix-run-unfinished"


def run_matrix(results_dir: Path, run_cmd: Sequence[str] | str | None = None, *, resume: bool = False,
               why: str | None = None) -> int:
    """Run the default matrix (or ``run_cmd``) writing records into ``results_dir``; pytest prints progress.

    ``{python}`` and ``{results_dir}`` in the command are substituted; a command without ``{results_dir}``
    gets ``--results-dir DIR`` appended. With ``resume`` the default command gets ``--resume``: it finishes the
    run a kill interrupted (``RUNNING_MARKER`` left in ``results_dir``) instead of starting again.
    """
    template = run_cmd if run_cmd is not None else DEFAULT_RUN
    words = shlex.split(template) if isinstance(template, str) else list(template)
    if not any("{results_dir}" in w for w in words):
        words += ["--results-dir", "{results_dir}"]
    if resume and run_cmd is None:
        words.append("--resume")
    words = [w.replace("{python}", sys.executable).replace("{results_dir}", str(results_dir)) for w in words]
    why = "finishing the interrupted matrix run" if resume else (why or "no recorded results; running the matrix")
    say(f"{why}:", err=False)
    print("  " + terminal_text(shlex.join(words)), flush=True)
    sys.stderr.flush()
    results_dir.mkdir(parents=True, exist_ok=True)
    marker = results_dir / RUNNING_MARKER
    marker.touch()
    started = time.monotonic()
    try:
        # Inherit stdout/stderr: pytest's own progress streams straight to the terminal.
        rc = subprocess.call(words)
    except OSError as exc:
        say(f"cannot run {words[0]!r}: {exc}")
        return 127
    if rc in (0, 1):  # pytest ran every cell (1: some failed); anything else leaves the run to be finished
        marker.unlink(missing_ok=True)
    say(f"matrix run finished (exit {rc}) in {time.monotonic() - started:.0f} s", err=False)
    return rc


def machine_devices() -> set[str]:
    """The devices this machine can run cells on: cpu, and cuda where torch sees a GPU."""
    devices = {"cpu"}
    try:
        import torch

        if torch.cuda.is_available():
            devices.add("cuda")
    except Exception:  # without a working torch the matrix cannot run anyway: the run says why
        pass
    return devices


# -------------------------------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = OneLineParser(
        prog=PROG,
        description="Render the conformance matrix (matrix.html, matrix.md, matrix.json, summary.md) from recorded "
                    "cell results. Outcomes are read from the records, never re-derived.",
        epilog="Exit status: 0 ok; 1 regressions with --fail-on-regression; 2 usage error, corrupt or missing "
               "baseline or one without a readable cell (with --fail-on-regression: with any unreadable line), a "
               "named --results path missing or empty, or no records.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", nargs="+", metavar="PATH", default=None,
                        help="result files or directories (searched recursively for *.jsonl, *.jsonl.gz), merged; "
                             "each must exist and hold records, and the matrix is never run into them (default: "
                             f"{DEFAULT_DIR} plus reports/cuda, running the matrix into {DEFAULT_DIR} first when "
                             "this machine's devices have no record)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                        help="directory for matrix.html, matrix.md, matrix.json, summary.md, diff.md (default: "
                             f"{DEFAULT_OUT})")
    parser.add_argument("--latest-run-wins", action="store_true",
                        help="per cell show the most recently started record, even when an older run is of a newer "
                             "suite version (default: the newest suite version's record, by its commit time)")
    parser.add_argument("--diff-against", metavar="PATH",
                        help="a previous results directory/file, or an expectations JSON file "
                             '({"schema": 1, "env": ..., "cells": {"subject|transform|check|device|dtype": '
                             '{"outcome", "cause"}}}; only records of its environment are compared): list '
                             "regressions, fixes, changed causes, new and removed cells")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when --diff-against finds a regression (pass/xfail -> fail/crash/timeout/xpass)")
    parser.add_argument("--write-expectations", metavar="FILE", type=Path,
                        help="also write the merged outcomes as an expectations file (accepts the current results; "
                             "with an --env such as cpu-torch2.13 only the records of that environment)")
    parser.add_argument("--env", default="", help="environment name stored with --write-expectations")
    parser.add_argument("--no-run", action="store_true", help="never run the matrix, even when nothing is recorded")
    parser.add_argument("--run-cmd", metavar="CMD",
                        help="command that produces records into the default results directory ({python} and "
                             f"{{results_dir}} are substituted; default: {DEFAULT_RUN!r})")
    parser.add_argument("--report-url", metavar="URL",
                        help="where the full report is published (http/https), linked from summary.md")
    parser.add_argument("--quiet", action="store_true", help="print only problems and the diff summary")
    parser.add_argument("--bench", nargs="+", metavar="FILE", default=None,
                        help="benchmark results to show beside the matrix (python -m conformance.bench; default: "
                             "reports/bench/latest-*.json, else reports/bench/baseline-*.json)")
    parser.add_argument("--no-bench", action="store_true", help="show no benchmark section")
    parser.add_argument("--history", nargs="+", metavar="PATH", default=None,
                        help="records of earlier library releases (./run history) for the history view, read apart "
                             f"from the matrix (default: {HISTORY_DIR} where it exists)")
    parser.add_argument("--no-history", action="store_true", help="show no history view")
    args = parser.parse_args(argv)
    if args.fail_on_regression and not args.diff_against:
        parser.error("--fail-on-regression needs --diff-against")
    return args


def default_bench() -> list[Path]:
    """The latest benchmark run per device, or the checked-in baseline of a device that has none."""
    folder = Path("reports") / "bench"
    latest = {p.name[len("latest-"):]: p for p in sorted(folder.glob("latest-*.json"))}
    baseline = {p.name[len("baseline-"):]: p for p in sorted(folder.glob("baseline-*.json"))}
    return [latest.get(device) or baseline[device] for device in sorted(set(latest) | set(baseline))]


#: The checked-in GPU records, merged into the default report.
CUDA_DIR = Path("reports") / "cuda"


def default_results() -> list[Path]:
    """The default results directory and the checked-in GPU records, those that exist."""
    return [p for p in (DEFAULT_DIR, CUDA_DIR) if p.exists()]


def _covers(given: Path, target: Path) -> bool:
    given, target = given.resolve(), target.resolve()
    return given == target or given in target.parents or target in given.parents


def not_included(paths: Sequence[Path], args: argparse.Namespace, history_rows: Sequence) -> list[dict]:
    """The default sources that this report did not read (the checked-in CUDA records, the release history), each
    with how to include it: a report never drops them without saying so."""
    left = []
    cuda_files = sorted(CUDA_DIR.glob("*.jsonl*")) if CUDA_DIR.is_dir() else []
    if cuda_files and not any(_covers(Path(p), CUDA_DIR) for p in paths):
        left.append({"path": str(CUDA_DIR), "what": f"checked-in CUDA records, {len(cuda_files)} file(s)",
                     "include": f"add it: {PROG} --results {' '.join(map(str, paths))} {CUDA_DIR}"})
    history_files = sorted(HISTORY_DIR.glob("*.jsonl*")) if HISTORY_DIR.is_dir() else []
    if args.no_history and history_files:
        left.append({"path": str(HISTORY_DIR), "what": f"release history, {len(history_files)} file(s)",
                     "include": "run without --no-history"})
    elif args.history and history_files and not any(_covers(Path(p), HISTORY_DIR) for p in args.history):
        left.append({"path": str(HISTORY_DIR), "what": f"release history, {len(history_files)} file(s)",
                     "include": f"add it to --history: --history {' '.join(args.history)} {HISTORY_DIR}"})
    elif not args.no_history and history_files and not history_rows:
        left.append({"path": str(HISTORY_DIR), "what": "release history: no readable record",
                     "include": "record it again with ./run history"})
    return left


def _is_expectations(path: Path) -> bool:
    return path.suffix == ".json" and not path.is_dir()


def main(argv: Sequence[str] | None = None, *, run_cmd: Sequence[str] | str | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["site"]:  # the static site of published reports (conformance.report.site)
        from .site import main as site_main

        return site_main(argv[1:])
    args = parse_args(argv)
    explicit = args.results is not None
    paths = [Path(p) for p in args.results] if explicit else default_results()
    started = time.perf_counter()
    baseline = diff_env = environment = None
    baseline_problems: list = []
    if args.diff_against:
        read = read_baseline(Path(args.diff_against), strict=args.fail_on_regression)
        if read is None:
            return 2
        baseline, diff_env, baseline_problems = read
        environment = diff_env
    if environment is None and args.write_expectations and parse_environment(args.env):
        environment = args.env
    loader = dict(latest_run_wins=args.latest_run_wins, environment=environment)
    loaded = load_records(paths, **loader)
    if explicit:
        unusable = [f"{p} ({'no such file or directory' if not p.exists() else 'no records'})"
                    for p in paths if not loaded.per_source.get(str(p))]
        if unusable:
            for problem in loaded.problems:
                if Path(problem.path).exists():  # a missing path is said once, below
                    say(f"skipped {problem}")
            say(f"--results {', '.join(unusable)}: nothing to render, and a path you name is never run into (without "
                f"--results the matrix is run into {DEFAULT_DIR} when this machine has no records)")
            return 2
        for path in paths:
            if (path / RUNNING_MARKER).exists():
                say(f"the matrix run into {path} did not finish: the report shows the cells it recorded (finish it "
                    f"with: python -m pytest suites/test_matrix.py -n auto --dist loadgroup --results-dir {path} "
                    "--resume)")
    else:
        target = DEFAULT_DIR
        interrupted = (target / RUNNING_MARKER).exists()
        missing = sorted(machine_devices() - loaded.devices)
        if (missing or interrupted) and not args.no_run:
            why = None if interrupted else (f"no records of this machine's device(s) {', '.join(missing)}"
                                            + (f" (the records in {', '.join(map(str, paths))} are of other devices)"
                                               if loaded.rows else "") + "; running the matrix")
            run_matrix(target, args.run_cmd if args.run_cmd is not None else run_cmd, resume=interrupted, why=why)
            paths = default_results()
            started = time.perf_counter()
            loaded = load_records(paths, **loader)
            still = sorted(machine_devices() - loaded.devices)
            if still:
                say(f"the matrix run recorded no cell of this machine's device(s) {', '.join(still)}")
        elif interrupted:
            say(f"the matrix run into {target} did not finish: the report shows the cells it recorded (run without "
                "--no-run to finish it)")
        elif missing and loaded.rows:
            say(f"no records of this machine's device(s) {', '.join(missing)} (run without --no-run to record them)")
    for problem in loaded.problems:
        say(f"skipped {problem}")
    loaded.problems.extend(baseline_problems)  # shown in the report too, printed above
    if not loaded.rows:
        say(f"no records found in {', '.join(map(str, paths)) or DEFAULT_DIR}")
        return 2
    note = versions_note(loaded)
    if note:
        say(note)
    gaps = missing_shards(paths)
    if gaps:
        say(f"shard(s) {', '.join(gaps)} not found: the cells of those shards are missing from the report (merge "
            "every shard's records with --results)")
    the_diff = None
    if args.diff_against:
        sparse = Path(args.diff_against).suffix == ".json"  # an expectations file lists no implied cell
        if diff_env is not None and loaded.env_cells is not None:  # like with like: that environment's records
            the_diff = diff(baseline, loaded.env_cells, against=str(args.diff_against), environment=environment,
                            left_out=loaded.left_out, sparse=sparse)
        else:
            the_diff = diff(baseline, loaded.rows, against=str(args.diff_against), sparse=sparse)
    bench = [] if args.no_bench else load_bench(args.bench or default_bench(), loaded.problems)
    history_rows = []
    if not args.no_history:
        history_rows = load_history([Path(p) for p in args.history] if args.history else [HISTORY_DIR],
                                    loaded.problems)
        if args.history and not history_rows:
            say(f"--history {', '.join(args.history)}: no records")
            return 2
    model = build_model(loaded, the_diff, bench=bench)
    model["history"] = build_history(loaded.rows, history_rows, time.time())
    model["not_included"] = not_included(paths, args, history_rows)
    model["history_read"] = {"paths": [str(p) for p in (args.history or [HISTORY_DIR])] if history_rows else [],
                             "records": len(history_rows)}
    if model["history"]:
        stale = [e["name"] for lib in model["history"].values() for e in lib["environments"] if e["stale"]]
        if stale:
            say(f"stale history records (older than {STALE_AFTER_S // 86400} days): {', '.join(stale)}; record them "
                "again with ./run history")
    outputs = {"matrix.html": render_chunks(loaded, model, the_diff),
               "matrix.md": render_markdown(loaded, model, the_diff),
               "matrix.json": matrix_json(model, loaded.rows),
               "summary.md": render_summary(loaded, model, the_diff, report_url=args.report_url)}
    if the_diff is not None:
        outputs["diff.md"] = render_diff_markdown(the_diff) + "\n"
    files = {args.out / name: content for name, content in outputs.items()}
    if args.write_expectations:
        files[args.write_expectations] = expectations_text(loaded, args.env)
    try:  # every file is complete before any replaces its old version: a failure leaves the previous report
        atomic_write_many(files)
    except OSError as exc:
        say(f"cannot write the report: {exc}")
        return 2
    for entry in model["not_included"]:  # said once the report is written (a failure to write is one line)
        say(f"not included: {entry['path']} ({entry['what']}); {entry['include']}")
    elapsed = time.perf_counter() - started
    if not args.quiet:
        s = model["summary"]
        say(f"{len(loaded.rows)} checks ({loaded.n_records} records read, {len(loaded.problems)} problem(s)); pass "
            f"{s['n_pass']}/{s['n_total']}; wrote {', '.join(str(p) for p in files)} in {elapsed:.2f} s "
            f"(matrix.json schema_version {JSON_SCHEMA_VERSION})", err=False)
    if the_diff is not None:
        say(f"diff against {the_diff.against}: {diff_summary(the_diff)}", err=False)
        note = left_out_note(the_diff.environment, the_diff.left_out)
        if note:
            say(note, err=False)
        for cell, old, new in the_diff.regressions:
            print("  " + terminal_text(f"REGRESSION {cell}: {old['outcome']} -> {new['outcome']}"
                                       + (f" ({new['cause']})" if new.get("cause") else "")))
        if not args.quiet:
            for cell, old, new in the_diff.fixes:
                print("  " + terminal_text(f"fixed {cell}: {old['outcome']} -> {new['outcome']}"))
        if args.fail_on_regression and the_diff.regressions:
            return 1
    return 0


def read_baseline(path: Path, *, strict: bool) -> tuple[dict[str, dict], str | None, list] | None:
    """The ``--diff-against`` baseline (cell -> {"outcome", "cause"}), the environment it describes and its unreadable
    lines (each printed here), or None after saying why it cannot be used: it is missing or corrupt, it has no usable
    cell (a diff against nothing finds no regression) or, with ``strict``, an unreadable line."""
    problems: list = []
    try:
        environment = expectations.read(path)["env"] if _is_expectations(path) else None
        baseline = load_baseline(path, problems)
    except expectations.ExpectationsError as exc:
        say(f"--diff-against: {exc}")
        return None
    except FileNotFoundError as exc:  # its message names the option
        say(str(exc))
        return None
    for problem in problems:
        say(f"--diff-against: skipped {problem}")
    if not baseline:
        say(f"--diff-against {path}: no readable cell, nothing to compare with"
            + (f" ({len(problems)} unreadable line(s), above)" if problems else ""))
        return None
    if strict and problems:
        say(f"--diff-against {path}: {len(problems)} unreadable line(s), above: with --fail-on-regression the baseline "
            "must be whole (the cells of those lines could hide regressions)")
        return None
    return baseline, environment if parse_environment(environment) else None, problems


def expectations_text(loaded: Loaded, env: str) -> str:
    """The expectations file of ``env``: the records of that environment when it names one, else every row."""
    if loaded.env_cells is not None and loaded.environment == env:
        cells = [{"id": cell, **value} for cell, value in loaded.env_cells.items()]
    else:
        wanted = parse_environment(env)
        cells = [r for r in loaded.rows if in_environment(r["env"], wanted)]
    return expectations.dumps(expectations.dump(cells, env))
