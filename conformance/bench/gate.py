"""Judging a benchmark run against the baseline: results files, merging runs, verdicts and the table.

A results file (``python -m conformance.bench run``) and a baseline (``accept``) have the same layout::

    {"schema": 1, "kind": "conformance.bench", "profile": "quick", "device": "cpu", "repeats": 15, "env": {...},
     "attempted": ["<subject>|<size>|<mode>", ...],
     "entries": {"<subject>|<size>|<mode>": {"subject", "library", "spec", "size", "mode", "against", "ratio",
                                            "ratios", "subject_s", "reference_s", "mem_subject", "mem_reference"}},
     "skipped": {"<subject>|<size>|<mode>": "reason"}}

A case regresses when ``new ratio / old ratio > 1 + threshold``. The threshold, the repeats and the confirmation
(a case over the threshold is measured once more and fails only if it is over again) come from the noise
experiment in docs/benchmarks.md; a regression is never decided by an absolute time.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from tabulate import tabulate

SCHEMA = 1
#: Chosen from the noise experiment (docs/benchmarks.md, scripts/bench-noise.py): fail when a ratio grows by more
#: than this fraction, measured on BUILDS fresh builds of a case, REPEATS interleaved blocks of four samples of
#: about SAMPLE_S seconds each per build.
THRESHOLD = 0.12
BUILDS = 3
REPEATS = 3
SAMPLE_S = 0.015

OK, FASTER, NEW, MISSING = "ok", "faster", "new", "missing"
SUSPECT, REGRESSION, UNCONFIRMED = "over threshold", "REGRESSION", "unconfirmed"


# ------------------------------------------------------------------------------------------------------- files
def load(path: Path | str) -> dict:
    """A results or baseline file, checked for the fields the gate reads."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or data.get("kind") != "conformance.bench" or data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a conformance.bench schema-{SCHEMA} file")
    for key, kind in (("entries", dict), ("skipped", dict), ("attempted", list)):
        if not isinstance(data.get(key), kind):
            raise ValueError(f"{path}: {key!r} missing or not a {kind.__name__}")
    for case_id, entry in data["entries"].items():
        ratio = entry.get("ratio") if isinstance(entry, dict) else None
        if not isinstance(ratio, (int, float)) or not math.isfinite(ratio) or ratio <= 0:
            raise ValueError(f"{path}: entry {case_id!r} has no positive finite ratio")
    return data


def write(path: Path | str, data: dict) -> None:
    from ..report import atomic_write

    atomic_write(path, json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n")


def merge(runs: Sequence[dict]) -> dict:
    """One baseline from several runs of the same device: per case the median of the runs' ratios (a baseline
    from one run carries that run's noise into every later comparison)."""
    if not runs:
        raise ValueError("no runs to merge")
    devices = {run["device"] for run in runs}
    if len(devices) != 1:
        raise ValueError(f"runs from different devices cannot make one baseline: {sorted(devices)}")
    latest = max(runs, key=lambda run: run.get("started", ""))
    entries: dict[str, dict] = {}
    for case_id in sorted({i for run in runs for i in run["entries"]}):
        found = [run["entries"][case_id] for run in runs if case_id in run["entries"]]
        entry = dict(next((run["entries"][case_id] for run in [latest] if case_id in run["entries"]), found[-1]))
        entry["ratio"] = round(statistics.median(e["ratio"] for e in found), 5)
        entry["run_ratios"] = [e["ratio"] for e in found]
        entries[case_id] = entry
    skipped = {i: r for run in runs for i, r in run["skipped"].items() if i not in entries}
    return {**{k: v for k, v in latest.items() if k not in ("entries", "skipped", "attempted")},
            "profile": "+".join(sorted({run["profile"] for run in runs})), "runs": len(runs),
            "attempted": sorted({i for run in runs for i in run["attempted"]}), "entries": entries,
            "skipped": skipped}


# ----------------------------------------------------------------------------------------------------- verdicts
@dataclass
class Row:
    id: str
    subject: str
    library: str
    size: str
    mode: str
    against: str
    old: float | None
    new: float | None
    verdict: str
    confirm: float | None = None
    mem_subject: int | None = None
    mem_reference: int | None = None
    reason: str = ""

    @property
    def change(self) -> float | None:
        value = self.confirm if self.confirm is not None else self.new
        return None if self.old is None or value is None else value / self.old - 1.0


def judge(old: float, new: float, threshold: float) -> str:
    if new / old > 1.0 + threshold:
        return SUSPECT
    if new / old < 1.0 / (1.0 + threshold):
        return FASTER
    return OK


def _labels(case_id: str, entry: dict | None) -> dict:
    subject, size, mode = case_id.split("|")
    entry = entry or {}
    return dict(subject=subject, library=str(entry.get("library", subject.split(".", 1)[0])), size=size, mode=mode,
                against=str(entry.get("against", "spec")))


def compare(baseline: dict, results: dict, *, threshold: float) -> list[Row]:
    """One row per case measured now or expected from the baseline. Baseline cases this run did not attempt
    (another profile, a ``--subjects`` filter) are left out; attempted but unmeasured ones are ``missing``."""
    old_entries, new_entries = baseline["entries"], results["entries"]
    attempted = set(results["attempted"])
    rows = []
    for case_id, entry in new_entries.items():
        old = old_entries.get(case_id)
        verdict = NEW if old is None else judge(old["ratio"], entry["ratio"], threshold)
        rows.append(Row(case_id, **_labels(case_id, entry), old=None if old is None else old["ratio"],
                        new=entry["ratio"], verdict=verdict, mem_subject=entry.get("mem_subject"),
                        mem_reference=entry.get("mem_reference")))
    for case_id, old in old_entries.items():
        if case_id in attempted and case_id not in new_entries:
            rows.append(Row(case_id, **_labels(case_id, old), old=old["ratio"], new=None, verdict=MISSING,
                            reason=results["skipped"].get(case_id, "not measured")))
    order = {REGRESSION: 0, SUSPECT: 0, UNCONFIRMED: 1, MISSING: 2, FASTER: 3, NEW: 4, OK: 5}
    return sorted(rows, key=lambda r: (order[r.verdict], r.library, r.subject, r.size, r.mode))


def confirm(rows: Iterable[Row], confirmation: dict | None, *, threshold: float, required: bool = True) -> list[Row]:
    """Settle the rows over the threshold: with ``required``, by the second measurement in ``confirmation``
    (a regression only if it is over the threshold again; a case it could not measure stays a regression);
    without, the first measurement decides."""
    settled = []
    for row in rows:
        if row.verdict == SUSPECT:
            again = (confirmation or {}).get("entries", {}).get(row.id) if required else None
            if required and again is not None:
                row.confirm = again["ratio"]
                row.verdict = REGRESSION if judge(row.old, again["ratio"], threshold) == SUSPECT else UNCONFIRMED
            else:
                row.verdict = REGRESSION
                if required:
                    row.reason = "not measured again: " + (confirmation or {}).get("skipped", {}).get(row.id, "")
        settled.append(row)
    order = {REGRESSION: 0, UNCONFIRMED: 1, MISSING: 2, FASTER: 3, NEW: 4, OK: 5}
    return sorted(settled, key=lambda r: (order[r.verdict], r.library, r.subject, r.size, r.mode))


# -------------------------------------------------------------------------------------------------------- table
def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / 2**20:.1f}"


def table(rows: Sequence[Row]) -> str:
    """The gate's table: old ratio, new ratio (and the confirming one), change, verdict, peak memory."""
    body = []
    for r in rows:
        memory = "" if r.mem_subject is None and r.mem_reference is None \
            else f"{_mib(r.mem_subject)} / {_mib(r.mem_reference)}"
        new = _ratio(r.new) + (f" → {_ratio(r.confirm)}" if r.confirm is not None else "")
        change = "" if r.change is None else f"{r.change:+.1%}"
        body.append([r.subject, r.size, r.mode, f"/{r.against}", _ratio(r.old), new, change,
                     r.verdict + (f": {r.reason}" if r.reason else ""), memory])
    return tabulate(body, ["subject", "size", "mode", "vs", "old ratio", "new ratio", "change", "verdict",
                           "peak MiB subject / ref"], tablefmt="simple", disable_numparse=True)


def summary(rows: Sequence[Row], *, threshold: float, baseline: str = "") -> str:
    counts = {}
    for row in rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    shown = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: kv[0] != REGRESSION))
    verdict = "FAIL" if counts.get(REGRESSION) else "pass"
    where = f" against {baseline}" if baseline else ""
    return (f"conformance.bench gate: {verdict}{where} (threshold +{threshold:.0%} on subject/reference ratios): "
            f"{shown or 'nothing compared'}")
