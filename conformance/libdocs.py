"""Per-library pages generated from the records: what works, what fails and why, how to reproduce each failure.

``python -m conformance.libdocs --results reports/results --out docs/libraries`` writes ``<library>.md`` for every
library in the records (the report reads records only; nothing is re-derived).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

from tabulate import tabulate

from .report_data import left_behind
from .results import iter_records, latest_by_cell

FAILING = ("fail", "xfail", "xpass", "crash", "timeout")
#: Libraries under test as transforms rather than subjects: their page gathers the cells of their transforms.
TRANSFORM_LIBRARIES = {"bdpy": "bdpy_"}


def render(library: str, records: list[dict]) -> str:
    """The Markdown page of one library."""
    versions = sorted({r["env"].get("libraries", {}).get(library, "?") for r in records if r.get("env")})
    torch_versions = sorted({r["env"].get("torch", "?") for r in records if r.get("env")})
    lines = [f"# {library}", "",
             f"Generated from {len(records)} recorded cells ({library} {', '.join(versions)}; torch "
             f"{', '.join(torch_versions)}). Regenerate: `python -m conformance.libdocs`.", ""]
    by_subject: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_subject[r["subject"]].append(r)
    rows = []
    for subject, recs in sorted(by_subject.items()):
        counts = Counter(r["outcome"] for r in recs)
        ran = sum(v for k, v in counts.items() if k != "skip")
        rows.append([subject, recs[0]["spec"], f"{counts['pass']}/{ran}", counts["xfail"],
                     counts["fail"] + counts["crash"] + counts["timeout"] + counts["xpass"], counts["skip"]])
    lines += ["## Summary", "", tabulate(rows, headers=["subject", "spec", "pass/ran", "known failures",
                                                         "unexpected", "skipped"], tablefmt="github"), ""]
    works = sorted({(r["transform"]) for r in records if r["outcome"] == "pass"})
    lines += ["## What works", "", "Transforms with at least one passing check: " + ", ".join(works or ["none"]), ""]
    lines += ["## What fails, and why", ""]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        if r["outcome"] in FAILING:
            reason = (r.get("known") or {}).get("reason") or ""
            groups[(r["subject"], r["cause"] or "", reason)].append(r)
    if not groups:
        lines += ["Nothing: every cell that ran passed.", ""]
    for (subject, cause, reason), recs in sorted(groups.items()):
        # the cell shown is chosen by its id, not by the order the workers happened to record in: the page of
        # an unchanged result does not change between runs
        first = min(recs, key=lambda r: (r["device"] != "cpu", r["transform"], r["check"], r["dtype"]))
        cells = sorted({f"{r['transform']}/{r['check']}/{r['device']}/{r['dtype']}" for r in recs})
        link = (first.get("known") or {}).get("link")
        lines += [f"### {subject}: `{cause or first['outcome']}`", ""]
        if reason:
            lines += [f"**Why:** {reason}" + (f" ([evidence]({link}))" if link and link.startswith("http")
                                             else (f" (evidence: {link})" if link else "")), ""]
        outcomes = Counter(r["outcome"] for r in recs)
        lines += [f"Cells ({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))}): "
                  + ", ".join(f"`{c}`" for c in cells[:12]) + (" ..." if len(cells) > 12 else ""), ""]
        message = (first.get("message") or "").strip().splitlines()
        if message:
            lines += ["```", *[m[:160] for m in message[:6]], "```", ""]
        undone = sorted({line for r in recs for line in left_behind(r)})
        if undone:
            lines += ["Left behind in the worker process (the harness undid it before the next cell; in a user's "
                      "process it stays and changes what runs next):", "", *[f"- `{line}`" for line in undone], ""]
        if first.get("example"):
            lines += [f"Minimal example: `{first['example'][:300]}`", ""]
        lines += ["Reproduce:", "", "```bash", first.get("reproduce", ""), "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.libdocs", description=__doc__)
    parser.add_argument("--results", nargs="+", default=["reports/results"])
    parser.add_argument("--out", default="docs/libraries")
    args = parser.parse_args(argv)
    problems: list = []
    records = list(latest_by_cell(iter_records(args.results, problems)).values())
    for problem in problems:
        print(f"libdocs: skipped {problem}", file=sys.stderr)
    by_library: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_library[r.get("library", "unknown")].append(r)
    for library, prefix in TRANSFORM_LIBRARIES.items():
        mine = [r for r in records if r.get("transform", "").startswith(prefix)]
        if mine:
            by_library[library] = mine
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for library, recs in sorted(by_library.items()):
        path = out / f"{library}.md"
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(render(library, recs), encoding="utf-8")
        tmp.replace(path)
        print(f"libdocs: wrote {path} ({len(recs)} cells)")
    return 0 if records else 2


if __name__ == "__main__":
    sys.exit(main())
