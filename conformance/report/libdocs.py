"""Per-library pages generated from the records: what works, what fails and why, how to reproduce each failure.

``python -m conformance.report.libdocs --results reports/results reports/cuda --out docs/libraries`` (the defaults)
writes ``<library>.md`` for every library in the records (the report reads records only; nothing is re-derived).
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from ..core.escape import md_code, md_fence, md_text, md_url, terminal_text
from ..core.extras import tabulate
from ..core.fileio import atomic_write_many
from ..core.usage import OneLineParser
from .data import LEFT_BEHIND, left_behind, load_records, reproducer_code
from .history import (
    HISTORY_DIR,
    build_history,
    environment_line,
    history_counts,
    history_status,
    load_history,
    version_key,
)
from .html import SYMBOLS

FAILING = ("fail", "xfail", "xpass", "crash", "timeout")
#: Libraries under test as transforms rather than subjects: their page gathers the cells of their transforms.
TRANSFORM_LIBRARIES = {"bdpy": "bdpy_"}


def page_name(library: str) -> str:
    """The file name of a library's page: its name with anything but letters, digits, ``.``, ``_`` and ``-``
    replaced (a recorded library name never leads outside the output directory)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", library)[:100].lstrip(".")
    return (name or "unknown") + ".md"


def render(library: str, records: list, history: dict | None = None) -> str:
    """The Markdown page of one library (every recorded string escaped); ``history`` is its entry of the history
    view (conformance.report.history), if earlier releases were recorded."""
    versions = sorted({str(r.get("library_version") or (r["env"].get("libraries") or {}).get(library, "?"))
                       for r in records if r.get("env")})
    torch_versions = sorted({str(r["env"].get("torch", "?")) for r in records if r.get("env")})
    lines = [f"# {md_text(library)}", "",
             f"Generated from {len(records)} recorded cells ({md_text(library)} {md_text(', '.join(versions))}; "
             f"torch {md_text(', '.join(torch_versions))}). Regenerate: `python -m conformance.report.libdocs`.", ""]
    by_subject: dict[str, list] = defaultdict(list)
    for r in records:
        by_subject[r["subject"]].append(r)
    rows = []
    for subject, recs in sorted(by_subject.items()):
        counts = Counter(r["outcome"] for r in recs)
        ran = sum(v for k, v in counts.items() if k != "skip")
        rows.append([md_text(subject), md_text(recs[0]["spec"]), f"{counts['pass']}/{ran}", str(counts["xfail"]),
                     str(counts["fail"] + counts["crash"] + counts["timeout"] + counts["xpass"]), str(counts["skip"])])
    lines += ["## Summary", "", tabulate(rows, headers=["subject", "spec", "pass/ran", "known failures",
                                                         "unexpected", "skipped"], tablefmt="github",
                                         disable_numparse=True), ""]
    works = sorted({(r["transform"]) for r in records if r["outcome"] == "pass"})
    lines += ["## What works", "", "Transforms with at least one passing check: "
              + ", ".join(md_text(w) for w in works or ["none"]), ""]
    lines += _across_releases(history)
    lines += ["## What fails, and why", "",
              "A known failure is described once, with every cell it covers; a failure nobody has explained yet is "
              "listed per subject.", ""]
    findings: dict[tuple, list] = defaultdict(list)
    for r in records:
        if r["outcome"] in FAILING:
            known = r.get("known") or {}
            if known.get("reason"):
                findings[("known", r["cause"] or "", known["reason"])].append(r)
            else:
                findings[("new", r["cause"] or r["outcome"], r["subject"])].append(r)
    if not findings:
        lines += ["Nothing: every cell that ran passed.", ""]
    for (kind, cause, what), recs in sorted(findings.items(), key=lambda kv: (kv[0][0] != "new", kv[0][1:])):
        subjects = sorted({r["subject"] for r in recs})
        if kind == "known":
            # one finding recorded by runs of several suite versions: the evidence a reader can open, if any has it
            links = sorted({(r.get("known") or {}).get("link") or "" for r in recs} - {""},
                           key=lambda link: (md_url(link) is None, link))
            link = links[0] if links else ""
            lines += [f"### {md_code(cause or 'known failure')}: {len(recs)} cell(s) of {len(subjects)} subject(s)", ""]
            url = md_url(link)
            lines += [f"**Why:** {md_text(what)}" + (f" ([evidence]({url}))" if url else _in_repository(link)), ""]
            shown = sorted({(r.get("known") or {}).get("reproducer") or "" for r in recs} - {""})
            if shown and reproducer_code(shown[0]) is not None:
                lines += [f"**Reproducer** (the library and torch only): {md_code(shown[0])}", ""]
        else:
            lines += [f"### {md_text(what)}: {md_code(cause)} (not explained by a known failure)", ""]
        lines += _cells_by_subject(recs)
        lines += _example(recs)
    return "\n".join(lines)


def _across_releases(history: dict | None) -> list[str]:
    """Fixed in / broken in / changed in, per release, from the history view (CPU cells)."""
    if not history:
        return []
    lines = ["## Across releases", "",
             f"Releases recorded: {', '.join(md_text(v) for v in history['releases'])} (pinned: "
             f"{', '.join(md_text(v) for v in history['pinned'])}); CPU cells, known failures counted as failures. "
             + history_counts(history) + ".", ""]
    lines += [f"- {environment_line(e, code=md_code, text=lambda t: md_text(_portable(t)), age=False)}"
              for e in history["environments"]] + [""]
    titles = {"fixed": "Fixed in", "broken": "Broken in", "changed": "Changed in"}

    def status(summary: dict) -> str:
        return history_status(summary, code=md_code, text=md_text, symbols=SYMBOLS)

    for kind, title in titles.items():
        changes = [c for c in history["changes"] if c["kind"] == kind]
        for release in sorted({c["to"] for c in changes}, key=version_key):
            lines += [f"### {title} {md_text(release)}", ""]
            lines += [f"- {md_code(c['subject'])} × {md_text(c['transform'])}: {status(c['before'])} in "
                      f"{md_text(c['from'])} → {status(c['after'])}" for c in changes if c["to"] == release]
            lines.append("")
    return lines


def _in_repository(link: str) -> str:
    """Evidence that is not a web link: shown when it is a file of this repository (a reproducer), else left out
    (a path a reader cannot open is no evidence)."""
    from .. import SUITE_ROOT

    try:
        path = (SUITE_ROOT / link).resolve() if link else None
        inside = path is not None and SUITE_ROOT.resolve() in path.parents and path.is_file()
    except (OSError, ValueError):  # a recorded string that is no path at all
        inside = False
    return f" (evidence: {md_code(link)} in this repository)" if inside else ""


def _cells_by_subject(recs: list) -> list[str]:
    """One line per subject: the cells (transform/check, devices and dtypes) and their outcomes."""
    lines = []
    for subject in sorted({r["subject"] for r in recs}):
        mine = [r for r in recs if r["subject"] == subject]
        cells = sorted({f"{r['transform']}/{r['check']}/{r['device']}/{r['dtype']}" for r in mine})
        outcomes = Counter(r["outcome"] for r in mine)
        shown = ", ".join(md_code(c) for c in cells[:12]) + (f" and {len(cells) - 12} more" if len(cells) > 12 else "")
        lines.append(f"- {md_text(subject)} ({', '.join(f'{n} {md_text(o)}' for o, n in sorted(outcomes.items()))}): "
                     f"{shown}")
    return lines + [""]


def _example(recs: list) -> list[str]:
    """What one of the cells recorded, and how to run it again."""
    # the cell shown is chosen by its id, not by the order the workers happened to record in: the page of an
    # unchanged result does not change between runs
    first = min(recs, key=lambda r: (r["device"] != "cpu", r["subject"], r["transform"], r["check"], r["dtype"]))
    cell = "|".join(first[k] for k in ("subject", "transform", "check", "device", "dtype"))
    lines = [f"For example {md_code(cell)}:", ""]
    message = _own_message(first).strip().splitlines()
    if message:
        lines += [*md_fence("\n".join(_portable(m)[:160] for m in message[:6])), ""]
    undone = sorted({line for r in recs for line in left_behind(r)})
    if undone:
        lines += ["Left behind in the worker process (the harness undid it before the next cell; in a user's "
                  "process it stays and changes what runs next):", "", *[f"- {md_code(line)}" for line in undone],
                  ""]
    if first.get("example"):
        lines += [f"Minimal example: {md_code(first['example'][:300])}", ""]
    return lines + ["Reproduce:", "", *md_fence(first.get("reproduce") or "", "bash"), ""]


#: A traceback's file paths as any reader's machine has them: an installed package's from site-packages/ on (the
#: GPU run installs into a private folder, scripts/gpu-run.sh), the project's from its own folders on.
_INSTALLED = re.compile(r'(?:(?<=")|(?<=\s)|^)[^"\s]*?/(?:site-packages|conformance-site|kernels-site)/')
_PROJECT = re.compile(r'(?<=")[^"]*?/(?=(?:conformance|qsnn_reference|qsnn_kernels|suites)/)')


def _portable(line: str) -> str:
    """``line`` with the recording machine's part of each file path dropped (quoted, or a word of its own)."""
    return _PROJECT.sub("", _INSTALLED.sub("site-packages/", line))


def _own_message(row) -> str:
    """The recorded message without what the report appends of the left-behind state (listed on its own)."""
    return (row.get("message") or "").split("\n" + LEFT_BEHIND, 1)[0].split(LEFT_BEHIND, 1)[0]


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m conformance.report.libdocs", description=__doc__)
    # the checked-in GPU records too, as the report reads them (a no-device CUDA skip never displaces them)
    parser.add_argument("--results", nargs="+", default=["reports/results", "reports/cuda"])
    parser.add_argument("--out", default="docs/libraries")
    parser.add_argument("--history", nargs="+", default=[str(HISTORY_DIR)],
                        help="records of earlier releases (default: %(default)s)")
    args = parser.parse_args(argv)
    loaded = load_records(args.results)
    history = build_history(loaded.rows, load_history(args.history, loaded.problems), time.time())
    for problem in loaded.problems:
        print(f"libdocs: skipped {terminal_text(problem)}", file=sys.stderr)
    records = loaded.rows
    by_library: dict[str, list] = defaultdict(list)
    for r in records:
        by_library[r["library"]].append(r)
    for library, prefix in TRANSFORM_LIBRARIES.items():
        mine = [r for r in records if r["transform"].startswith(prefix)]
        if mine:
            by_library[library] = mine
    if not records:
        print(f"libdocs: no records in {terminal_text(' '.join(args.results))}; nothing written", file=sys.stderr)
        return 2
    pages = {Path(args.out) / page_name(library): render(library, recs, history.get(library))
             for library, recs in sorted(by_library.items())}
    try:  # every page or none: a full disk leaves the previous pages
        atomic_write_many(pages)
    except OSError as error:
        print(f"libdocs: cannot write the pages into {terminal_text(args.out)}: "
              f"{terminal_text(error.strerror or error)}", file=sys.stderr)
        return 2
    for library, recs in sorted(by_library.items()):
        print(f"libdocs: wrote {terminal_text(Path(args.out) / page_name(library))} ({len(recs)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
