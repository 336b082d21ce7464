"""Render the compatibility matrix from recorded cell results: ``python -m conformance.report``.

Reads the JSONL records under ``--results`` (default ``reports/results``; any number of files or directories,
merged, the latest record of a cell wins) and writes ``matrix.html`` (self-contained), ``matrix.md`` and
``matrix.json`` into ``--out`` (default ``reports``). Outcomes are shown as recorded, never re-derived.
When no record exists it first runs the default matrix (pytest, streaming its progress).

    python -m conformance.report                                   # render (run the matrix if nothing recorded)
    python -m conformance.report --results reports/results reports/cuda --out reports
    python -m conformance.report --diff-against reports/expected/cpu.json --fail-on-regression
    python -m conformance.report --write-expectations reports/expected/cpu.json --env cpu-torch2.13

Exit status: 0 rendered; 1 regressions against --diff-against with --fail-on-regression;
2 usage error, unreadable baseline, or no records at all (after running the matrix).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Sequence

from tabulate import tabulate

from . import expectations
# atomic_write is re-exported for conformance.bench.gate, which imports it from here (until it imports fileio).
from .fileio import atomic_write, atomic_write_many
from .report_data import (JSON_SCHEMA_VERSION, WORST_FIRST, Diff, Loaded, build_model, diff, error_size, group,
                          load, load_baseline, load_bench, transform_sort_key)
from .report_html import MEANING, SYMBOLS, render
from .results import DEFAULT_DIR

DEFAULT_OUT = Path("reports")
DEFAULT_RUN = ("{python} -m pytest suites/test_matrix.py -n auto --dist loadgroup -p no:cacheprovider -q "
               "--results-dir {results_dir}")


# ---------------------------------------------------------------------------------------------- markdown
def _md_cell(agg: dict) -> str:
    worst = agg["worst"]
    n = sum(agg["counts"].values())
    if n > 1 and agg["n_total"]:
        return f"{SYMBOLS[worst]} {agg['n_pass']}/{agg['n_total']}"
    return SYMBOLS[worst]


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def render_markdown(loaded: Loaded, model: dict, the_diff: Diff | None = None) -> str:
    from .report_data import aggregate

    rows = loaded.rows
    out = ["# Conformance matrix", "",
           f"Generated {model['generated']} from {len(rows)} checks in {len(model['runs'])} run(s); "
           f"pass {model['summary']['n_pass']}/{model['summary']['n_total']} (skips excluded). "
           "A cell shows its worst outcome and passing/total checks over all checks and dtypes.", "",
           "Legend: " + " · ".join(f"{SYMBOLS[o]} {o} ({MEANING[o]})" for o in WORST_FIRST), ""]
    if model["problems"]:
        out += [f"**{len(model['problems'])} unreadable line(s) skipped:**", ""]
        out += [f"- `{p['path']}:{p['line']}` {_md_escape(p['reason'])}" for p in model["problems"][:200]]
        out.append("")
    for (device,), device_rows in sorted(group(rows, "device").items()):
        transforms = sorted({r["transform"] for r in device_rows}, key=transform_sort_key)
        cells = group(device_rows, "subject", "transform")
        table = []
        for subject in model["subjects"]:
            if not any((subject["subject"], t) in cells for t in transforms):
                continue
            line = [_md_escape(subject["library"]), _md_escape(subject["spec"]), _md_escape(subject["subject"])]
            line += [_md_cell(aggregate(cells[(subject["subject"], t)])) if (subject["subject"], t) in cells else ""
                     for t in transforms]
            table.append(line)
        header = ["library", "spec", "subject"] + [_md_escape(t) for t in transforms]
        out += [f"## {device}", "", tabulate(table, header, tablefmt="github"), ""]
    out += ["## Pass rate per library", ""]
    out.append(tabulate([[lib, "–" if i["pass_rate"] is None else f"{100 * i['pass_rate']:.0f}%",
                          f"{i['n_pass']}/{i['n_total']}",
                          " ".join(f"{SYMBOLS[o]}{n}" for o, n in i["counts"].items())]
                         for lib, i in model["libraries"].items()],
                        ["library", "pass rate", "pass/total", "outcomes"], tablefmt="github"))
    out += ["", "## Causes", ""]
    if model["causes"]:
        out.append(tabulate([[f"`{_md_escape(c['cause'])}`", c["total"], c["matrix_cells"],
                              ", ".join(f"{_md_escape(k)} {v}" for k, v in c["by_library"].items()),
                              ", ".join(f"{k} {v}" for k, v in c["by_outcome"].items())] for c in model["causes"]],
                            ["cause", "checks", "cells", "by library", "by outcome"], tablefmt="github"))
    else:
        out.append("No failures with a recorded cause.")
    out += ["", "## Runs", ""]
    out.append(tabulate([[f"`{_md_escape(r['run'])}`", r["started"], r["age"] + (" (stale)" if r["stale"] else ""),
                          ", ".join(r["devices"]), ", ".join(r["torch"]), r["suite_sha"] or "", r["cells"]]
                         for r in model["runs"]],
                        ["run", "started (UTC)", "age", "devices", "torch", "suite sha", "cells shown"],
                        tablefmt="github"))
    out += render_agreement_markdown(model.get("agreement") or [])
    out += render_bench_markdown(model.get("bench") or [])
    if the_diff is not None:
        out += ["", render_diff_markdown(the_diff, limit=50)]
    return "\n".join(out) + "\n"


def render_agreement_markdown(agreement: list[dict]) -> list[str]:
    """The CPU/CUDA agreement table (``cpu_vs_cuda`` cells): which subjects disagree between devices, by how much."""
    if not agreement:
        return []
    bad = [a for a in agreement if a["worst"] not in ("pass", "skip")]
    out = ["", "## CPU/CUDA agreement", "",
           f"The same module, parameters and input on both devices: {len(bad)} of {len(agreement)} subject(s) "
           "disagree (or could not be compared).", ""]
    out.append(tabulate([[_md_escape(a["library"]), _md_escape(a["subject"]), f"{SYMBOLS.get(a['worst'], '?')} "
                          f"{a['worst']}", error_size(a["max_abs_err"]), error_size(a["max_rel_err"]),
                          f"`{_md_escape(a['cause'])}`" if a["cause"] else "",
                          _md_escape((a["message"] or "").splitlines()[0][:160]) if a["message"] else ""]
                         for a in agreement],
                        ["library", "subject", "worst", "max abs err", "max rel err", "cause", "message"],
                        tablefmt="github", disable_numparse=True))
    return out


def render_bench_markdown(bench: list[dict]) -> list[str]:
    out = []
    for run in bench:
        out += ["", f"## Speed relative to the spec ({_md_escape(run['device'])}, {_md_escape(run['profile'])} profile)",
                "", f"From `{_md_escape(run['source'])}`, {_md_escape(run['started'])}: median of interleaved "
                "(subject time / spec time), or compiled / eager; peak MiB of one forward+backward.", ""]
        rows = []
        for library, items in run["libraries"].items():
            for item in items:
                memory = "" if item["mem_subject"] is None or item["mem_reference"] is None else \
                    f"{item['mem_subject'] / 2**20:.1f} / {item['mem_reference'] / 2**20:.1f}"
                rows.append([_md_escape(library), _md_escape(item["subject"]), _md_escape(item["size"]),
                             _md_escape(item["mode"]), "" if item["ratio"] is None else f"{item['ratio']:.2f}×",
                             memory])
        out.append(tabulate(rows, ["library", "subject", "size", "mode", "ratio", "peak MiB subject / spec"],
                            tablefmt="github", disable_numparse=True))
    return out


def render_diff_markdown(the_diff: Diff, limit: int | None = None) -> str:
    def show(v: dict) -> str:
        cause = f" `{_md_escape(v['cause'])}`" if v.get("cause") else ""
        return f"{SYMBOLS.get(v['outcome'], '?')} {v['outcome']}{cause}"

    out = [f"## Diff against `{the_diff.against}`", "", diff_summary(the_diff), ""]
    for title, items in (("Regressions", the_diff.regressions), ("Fixes", the_diff.fixes),
                         ("Changed causes", the_diff.changed_causes),
                         ("Other outcome changes", the_diff.changed_outcomes)):
        if items:
            shown = items if limit is None else items[:limit]
            out += [f"### {title} ({len(items)})", "",
                    tabulate([[f"`{_md_escape(c)}`", show(o), show(n)] for c, o, n in shown], ["cell", "before", "now"],
                             tablefmt="github")]
            if len(shown) < len(items):
                out.append(f"\n… and {len(items) - len(shown)} more (diff.md)")
            out.append("")
    for title, items in (("New cells", the_diff.new), ("Removed cells", the_diff.removed)):
        if items:
            shown = items if limit is None else items[:limit]
            out += [f"### {title} ({len(items)})", ""] + [f"- `{_md_escape(c)}` {show(v)}" for c, v in shown]
            if len(shown) < len(items):
                out.append(f"- … and {len(items) - len(shown)} more (diff.md)")
            out.append("")
    return "\n".join(out)


def diff_summary(the_diff: Diff) -> str:
    return (f"{len(the_diff.regressions)} regression(s), {len(the_diff.fixes)} fix(es), "
            f"{len(the_diff.changed_causes)} changed cause(s), {len(the_diff.changed_outcomes)} other outcome "
            f"change(s), {len(the_diff.new)} new, {len(the_diff.removed)} removed")


# ------------------------------------------------------------------------------------------------ running
#: Present in a results directory while the matrix run that fills it has not finished (a killed run keeps it).
RUNNING_MARKER = ".matrix-run-unfinished"


def run_matrix(results_dir: Path, run_cmd: Sequence[str] | str | None = None, *, resume: bool = False) -> int:
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
    why = "finishing the interrupted matrix run" if resume else "no recorded results; running the matrix"
    print(f"conformance.report: {why}:\n  {shlex.join(words)}", flush=True)
    sys.stderr.flush()
    results_dir.mkdir(parents=True, exist_ok=True)
    marker = results_dir / RUNNING_MARKER
    marker.touch()
    started = time.monotonic()
    try:
        # Inherit stdout/stderr: pytest's own progress streams straight to the terminal.
        rc = subprocess.call(words)
    except OSError as exc:
        print(f"conformance.report: cannot run {words[0]!r}: {exc}", file=sys.stderr)
        return 127
    if rc in (0, 1):  # pytest ran every cell (1: some failed); anything else leaves the run to be finished
        marker.unlink(missing_ok=True)
    print(f"conformance.report: matrix run finished (exit {rc}) in {time.monotonic() - started:.0f} s", flush=True)
    return rc


# -------------------------------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.report",
        description="Render the conformance matrix (matrix.html, matrix.md, matrix.json) from recorded cell "
                    "results. Outcomes are read from the records, never re-derived.",
        epilog="Exit status: 0 ok; 1 regressions with --fail-on-regression; 2 usage error or no records.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", nargs="+", metavar="PATH", default=None,
                        help=f"result files or directories (searched recursively for *.jsonl), merged; the latest "
                             f"record of a cell wins (default: {DEFAULT_DIR}, plus reports/cuda if present)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                        help=f"directory for matrix.html, matrix.md, matrix.json, diff.md (default: {DEFAULT_OUT})")
    parser.add_argument("--diff-against", metavar="PATH",
                        help="a previous results directory/file, or an expectations JSON file "
                             '({"schema": 1, "env": ..., "cells": {"subject|transform|check|device|dtype": '
                             '{"outcome", "cause"}}}): list regressions, fixes, changed causes, new and removed cells')
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when --diff-against finds a regression (pass/xfail -> fail/crash/timeout/xpass)")
    parser.add_argument("--write-expectations", metavar="FILE", type=Path,
                        help="also write the merged outcomes as an expectations file (accepts the current results)")
    parser.add_argument("--env", default="", help="environment name stored with --write-expectations")
    parser.add_argument("--no-run", action="store_true", help="never run the matrix, even when nothing is recorded")
    parser.add_argument("--run-cmd", metavar="CMD",
                        help="command that produces records when none exist ({python} and {results_dir} are "
                             f"substituted; default: {DEFAULT_RUN!r})")
    parser.add_argument("--quiet", action="store_true", help="print only problems and the diff summary")
    parser.add_argument("--bench", nargs="+", metavar="FILE", default=None,
                        help="benchmark results to show beside the matrix (python -m conformance.bench; default: "
                             "reports/bench/latest-*.json, else reports/bench/baseline-*.json)")
    parser.add_argument("--no-bench", action="store_true", help="show no benchmark section")
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


def default_results() -> list[Path]:
    paths = [DEFAULT_DIR]
    paths += [p for p in (Path("reports") / "cuda",) if p.exists()]
    return paths


def main(argv: Sequence[str] | None = None, *, run_cmd: Sequence[str] | str | None = None) -> int:
    args = parse_args(argv)
    paths = [Path(p) for p in args.results] if args.results else default_results()
    started = time.perf_counter()
    loaded = load(paths)
    target = next((p for p in paths if p.is_dir() or not p.suffix), DEFAULT_DIR)
    interrupted = (target / RUNNING_MARKER).exists()
    if (not loaded.rows or interrupted) and not args.no_run:
        paths += [] if target in paths else [target]
        run_matrix(target, args.run_cmd if args.run_cmd is not None else run_cmd, resume=interrupted)
        started = time.perf_counter()
        loaded = load(paths)
    elif interrupted:
        print(f"conformance.report: the matrix run into {target} did not finish: the report shows the cells it "
              "recorded (run without --no-run to finish it)", file=sys.stderr)
    for problem in loaded.problems:
        print(f"conformance.report: skipped {problem}", file=sys.stderr)
    if not loaded.rows:
        print(f"conformance.report: no records found in {', '.join(map(str, paths))}", file=sys.stderr)
        return 2
    the_diff = None
    if args.diff_against:
        try:
            baseline = load_baseline(args.diff_against, loaded.problems)
        except (OSError, ValueError) as exc:
            print(f"conformance.report: {exc}", file=sys.stderr)
            return 2
        the_diff = diff(baseline, loaded.rows, against=str(args.diff_against))
    bench = [] if args.no_bench else load_bench(args.bench or default_bench(), loaded.problems)
    model = build_model(loaded, the_diff, bench=bench)
    # Render everything before writing anything: a failure leaves the previous report intact.
    outputs = {"matrix.html": render(loaded, model, the_diff),
               "matrix.md": render_markdown(loaded, model, the_diff),
               "matrix.json": json.dumps(model, separators=(",", ":"), allow_nan=False) + "\n"}
    if the_diff is not None:
        outputs["diff.md"] = render_diff_markdown(the_diff) + "\n"
    for name, text in outputs.items():
        atomic_write(args.out / name, text)
    if args.write_expectations:
        atomic_write(args.write_expectations,
                     json.dumps(expectations.dump(loaded.rows, args.env), indent=1) + "\n")
    elapsed = time.perf_counter() - started
    if not args.quiet:
        s = model["summary"]
        print(f"conformance.report: {len(loaded.rows)} checks ({loaded.n_records} records read, "
              f"{len(loaded.problems)} problem(s)); pass {s['n_pass']}/{s['n_total']}; "
              f"wrote {', '.join(str(args.out / n) for n in outputs)} in {elapsed:.2f} s "
              f"(matrix.json schema_version {JSON_SCHEMA_VERSION})")
    if the_diff is not None:
        print(f"conformance.report: diff against {the_diff.against}: {diff_summary(the_diff)}")
        for cell, old, new in the_diff.regressions:
            print(f"  REGRESSION {cell}: {old['outcome']} -> {new['outcome']}"
                  + (f" ({new['cause']})" if new.get("cause") else ""))
        if not args.quiet:
            for cell, old, new in the_diff.fixes:
                print(f"  fixed {cell}: {old['outcome']} -> {new['outcome']}")
        if args.fail_on_regression and the_diff.regressions:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
