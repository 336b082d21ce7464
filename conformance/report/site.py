"""The published report as a static site: ``python -m conformance.report site``.

Every run keeps its own address, so that a reader can link to a run and diff two runs; the newest is the landing page:

    SITE/index.html               the newest run's matrix.html (with a line naming the run and linking the others)
    SITE/runs/index.html          every run, newest first: when, pass rate, its page, summary and data
    SITE/runs/<run id>/index.html that run's matrix.html, beside its matrix.json, matrix.md, summary.md, diff.md
    SITE/runs.json                the same list as data

The runs come from ``--runs-from DIR`` (the site published before, e.g. a checkout of the gh-pages branch: its
``runs/<run id>/`` directories; or any directory of run directories) and ``--add REPORT_DIR --run-id ID`` (a report
that ``python -m conformance.report --out REPORT_DIR`` just wrote). A run is ordered by the time its matrix.json says
it was generated. A run id is letters, digits, ``.``, ``_`` and ``-`` only (it is a path on the site); a directory that
is not a run is left out and named on stderr and in the index. Every string read from a run is escaped.

    python -m conformance.report site --runs-from published --add report --run-id "$GITHUB_RUN_ID" --out site

Exit status: 0 written; 2 usage error, an unusable ``--add`` report or no run at all.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Sequence

from ..core.escape import html_text, json_text, terminal_text
from ..core.fileio import atomic_write_many
from ..core.usage import OneLineParser
from .data import natural_key

PROG = "python -m conformance.report site"
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: What a run directory holds (matrix.html is required; the page of the run is its copy, index.html).
RUN_FILES = ("matrix.html", "matrix.json", "matrix.md", "summary.md", "diff.md")
e = html_text


def say(text: str) -> None:
    print(f"conformance.report site: {terminal_text(text)}", file=sys.stderr, flush=True)


def read_run(run_id: str, folder: Path) -> tuple[dict | None, str | None]:
    """(the run: {id, folder, generated, n_pass, n_total, files}, None) or (None, why it is not a run)."""
    if not RUN_ID.fullmatch(run_id):
        return None, "not a run id (letters, digits, '.', '_' and '-' only)"
    page = folder / "matrix.html" if (folder / "matrix.html").is_file() else folder / "index.html"
    if not page.is_file():
        return None, "no matrix.html"
    run = {"id": run_id, "folder": folder, "page": page, "generated": "", "n_pass": None, "n_total": None,
           "files": [name for name in RUN_FILES[1:] if (folder / name).is_file()]}
    try:
        data = json.loads((folder / "matrix.json").read_text(encoding="utf-8"))
        summary = data.get("summary") or {}
        run.update(generated=str(data.get("generated") or ""), n_pass=summary.get("n_pass"),
                   n_total=summary.get("n_total"))
    except (OSError, ValueError, AttributeError, RecursionError):
        pass  # shown without a time or pass rate, ordered last
    for key in ("n_pass", "n_total"):
        if not isinstance(run[key], int) or isinstance(run[key], bool):
            run[key] = None
    return run, None


def collect(runs_from: Sequence[Path], added: Path | None, added_id: str | None) -> tuple[list[dict], list[str]]:
    """Every run found (the one added wins over a published run of the same id), newest first, and what was left
    out (``"<name>: <why>"``)."""
    runs: dict[str, dict] = {}
    left_out = []
    for base in runs_from:
        base = base / "runs" if (base / "runs").is_dir() else base
        for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):  # not .git
            run, why = read_run(folder.name, folder)
            if run is None:
                left_out.append(f"{folder.name}: {why}")
            else:
                runs[run["id"]] = run
    if added is not None:
        run, why = read_run(added_id or "", added)
        if run is None:
            raise ValueError(f"--add {added} --run-id {added_id!r}: {why}")
        runs[run["id"]] = run
    ordered = sorted(runs.values(), key=lambda r: (r["generated"], natural_key(r["id"])), reverse=True)
    return ordered, left_out


def _rate(run: dict) -> str:
    if run["n_total"] is None or run["n_pass"] is None:
        return "?"
    percent = f" ({100 * run['n_pass'] / run['n_total']:.1f}%)" if run["n_total"] else ""
    return f"{run['n_pass']}/{run['n_total']}{percent}"


def run_banner(run: dict, newest: dict, *, to_runs: str) -> str:
    """The line put at the top of a run's page: which run, whether it is the newest, where the others are."""
    which = "the newest run" if run is newest else f'an earlier run; the newest is <a href="{to_runs}{e(newest["id"])}/">' \
                                                  f'{e(newest["id"])}</a>'
    return (f'<p class="warn" id="site-run">Run <code>{e(run["id"])}</code> (generated {e(run["generated"] or "?")}), '
            f'{which} · <a href="{to_runs}index.html">every run</a> · <a href="{to_runs}{e(run["id"])}/">this run\'s '
            "address</a></p>")


def with_banner(page: str, banner: str) -> str:
    head, found, rest = page.partition("<body>")
    return head + found + "\n" + banner + rest if found else banner + page


def index_page(runs: list[dict], left_out: list[str]) -> str:
    rows = "".join(
        f'<tr><td><a href="{e(r["id"])}/"><code>{e(r["id"])}</code></a>{" (newest)" if i == 0 else ""}</td>'
        f"<td>{e(r['generated'] or '?')}</td><td class=num>{e(_rate(r))}</td><td>"
        + " · ".join(f'<a href="{e(r["id"])}/{e(name)}">{e(name)}</a>' for name in r["files"]) + "</td></tr>"
        for i, r in enumerate(runs))
    skipped = "".join(f"<li>{e(item)}</li>" for item in left_out)
    skipped = f"<p>Not runs, left out:</p><ul>{skipped}</ul>" if skipped else ""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            "<title>Conformance matrix: every run</title><style>body{font:14px system-ui,sans-serif;margin:16px}"
            "td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee}.num{text-align:right}</style>"
            "</head><body><h1>Conformance matrix: every run</h1><p>Newest first; the newest is also the "
            '<a href="../">landing page</a>. Each run keeps its address (<code>runs/&lt;run id&gt;/</code>), to '
            "link to; its <code>matrix.json</code> holds every check (<code>checks</code>, keyed by cell), so two "
            "runs compare cell by cell.</p><table><thead><tr><th>run</th><th>generated (UTC)</th><th>pass</th>"
            f"<th>files</th></tr></thead><tbody>{rows}</tbody></table>{skipped}</body></html>\n")


def build(out: Path, runs: list[dict], left_out: list[str]) -> None:
    """Write the site into ``out`` (its runs/ replaced as a whole, every page complete before any is replaced)."""
    newest = runs[0]
    files: dict[Path, str] = {}
    for run in runs:
        page = run["page"].read_text(encoding="utf-8", errors="replace")
        if run["page"].name == "index.html":  # a published run: drop the banner it was published with
            page = re.sub(r'\n?<p class="warn" id="site-run">.*?</p>', "", page, count=1)
        files[out / "runs" / run["id"] / "index.html"] = with_banner(page, run_banner(run, newest, to_runs="../"))
        if run is newest:
            files[out / "index.html"] = with_banner(page, run_banner(run, newest, to_runs="runs/"))
        for name in run["files"]:
            files[out / "runs" / run["id"] / name] = (run["folder"] / name).read_text(encoding="utf-8",
                                                                                    errors="replace")
    files[out / "runs" / "index.html"] = index_page(runs, left_out)
    files[out / "runs.json"] = json_text([{"run": r["id"], "generated": r["generated"], "n_pass": r["n_pass"],
                                           "n_total": r["n_total"], "page": f"runs/{r['id']}/"} for r in runs],
                                         indent=1) + "\n"
    files[out / ".nojekyll"] = ""
    if (out / "runs").exists():
        shutil.rmtree(out / "runs")
    atomic_write_many(files)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description="Build the static site of published reports: every run under "
                                                  "runs/<run id>/, the newest as the landing page, an index of runs.")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the site to write")
    parser.add_argument("--runs-from", nargs="+", type=Path, default=[], metavar="DIR",
                        help="the site published before (its runs/ directory is read) or a directory of run "
                             "directories, each holding a report (matrix.html, matrix.json, ...)")
    parser.add_argument("--add", type=Path, metavar="REPORT_DIR", help="a report just rendered, added as --run-id")
    parser.add_argument("--run-id", metavar="ID", help="the address of the report added (e.g. $GITHUB_RUN_ID)")
    args = parser.parse_args(argv)
    if (args.add is None) != (args.run_id is None):
        parser.error("--add and --run-id go together")
    missing = [str(p) for p in args.runs_from if not p.is_dir()]
    if missing:
        say(f"--runs-from {', '.join(missing)}: no such directory (a first publication has none: leave it out)")
        return 2
    try:
        runs, left_out = collect(args.runs_from, args.add, args.run_id)
    except ValueError as exc:
        say(str(exc))
        return 2
    for item in left_out:
        say(f"left out {item}")
    if not runs:
        say("no run to publish")
        return 2
    try:
        build(args.out, runs, left_out)
    except OSError as exc:
        say(f"cannot write the site: {exc}")
        return 2
    print(f"conformance.report site: {len(runs)} run(s), newest {runs[0]['id']}; wrote {args.out}")
    return 0
