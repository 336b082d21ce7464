"""The report's data side: read recorded cells, merge runs, aggregate, diff against a baseline.

Everything here works on the records written by :mod:`conformance.results`; no outcome is re-derived, the
recorded ``outcome`` and ``cause`` are counted as they are. The renderers (:mod:`conformance.report_html`,
:mod:`conformance.report`) only format what :func:`build_model` returns.

Aggregation of one matrix cell (all checks, and dtypes/devices when those are not fixed, of one
subject x transform): the worst outcome wins, in the order of :data:`WORST_FIRST`; the count shown is
``n_pass/n_total`` where ``n_total`` excludes skips.
"""

from __future__ import annotations

import functools
import json
import math
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from .results import Problem, cell_key, iter_records, latest_by_cell

#: Version of matrix.json's layout (bump on an incompatible change).
JSON_SCHEMA_VERSION = 1
#: Worst first: a matrix cell shows the first of these that any of its checks has.
WORST_FIRST = ("crash", "timeout", "fail", "xpass", "xfail", "pass", "skip")
BAD = frozenset({"fail", "crash", "timeout", "xpass"})
GOOD = frozenset({"pass", "xfail"})
#: Runs older than this are marked stale in the report.
STALE_AFTER_S = 7 * 24 * 3600

# Canonical column order for the transforms this project defines; anything else follows alphabetically.
_TRANSFORM_ORDER = ("eager", "deepcopy", "deepcopy_used", "pickle", "pickle_used", "state_dict", "state_dict_used",
                    "functional_call", "vmap", "grad", "per_sample_grad", "opacus", "jvp", "compile", "jit_script",
                    "jit_trace", "export", "forward_hooks", "hooks", "bdpy", "checkpoint", "cpu_vs_cuda", "cuda",
                    "to_cuda", "device", "autocast", "float64", "bfloat16", "dtype")
_OPTIONAL_STR = ("cause", "example", "run", "started", "library", "spec", "cell")
_OPTIONAL_NUM = ("max_abs_err", "max_rel_err", "atol", "rtol", "duration_s")


def worst(outcomes: Iterable[str]) -> str:
    """The worst of ``outcomes`` by :data:`WORST_FIRST` (``"skip"`` for none)."""
    rank = {o: i for i, o in enumerate(WORST_FIRST)}
    return min(outcomes, key=lambda o: rank.get(o, 0), default="skip")


@functools.lru_cache(maxsize=None)
def natural_key(name: str) -> tuple:
    """``Layer2`` before ``Layer10``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


@functools.lru_cache(maxsize=None)
def transform_sort_key(name: str) -> tuple:
    for i, prefix in enumerate(_TRANSFORM_ORDER):
        if name == prefix or name.startswith(prefix + "_") or name.startswith(prefix + "[") \
                or name.startswith(prefix + ":") or name.startswith(prefix + "-"):
            return (i, name)
    return (len(_TRANSFORM_ORDER), name)


def normalise(record: dict) -> dict:
    """A copy of a valid record with every optional field present and of the expected type.

    ``iter_records`` guarantees the coordinates and the outcome; the rest may be missing or odd in records
    from older or foreign writers, and must not crash the report.
    """
    row = dict(record)
    for key in _OPTIONAL_STR:
        value = row.get(key)
        row[key] = None if value is None else str(value)
    row["library"] = row["library"] or "unknown"
    row["spec"] = row["spec"] or "unknown"
    row["run"] = row["run"] or "unknown"
    row["started"] = row["started"] or ""
    for key in _OPTIONAL_NUM:
        value = row.get(key)
        row[key] = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value) else None
    tie = row.get("tie_excluded")
    row["tie_excluded"] = tie if isinstance(tie, int) and not isinstance(tie, bool) else 0
    for key in ("message", "reproduce"):
        value = row.get(key)
        row[key] = "" if value is None else str(value)
    undone = left_behind(record)
    if undone:  # shown with the message: a finding about the library/torch even when the cell itself passed
        row["message"] = (row["message"] + "\n" if row["message"] else "") + LEFT_BEHIND + "; ".join(undone)
    known = row.get("known")
    row["known"] = {k: (None if known.get(k) is None else str(known.get(k))) for k in ("reason", "link", "cause")} \
        if isinstance(known, dict) else None
    env = row.get("env")
    row["env"] = env if isinstance(env, dict) else {}
    row["env_key"] = json.dumps(row["env"], sort_keys=True)  # computed once: environments are deduplicated by it
    row["id"] = cell_key(row)
    return row


LEFT_BEHIND = "left behind in the worker process (undone before the next cell): "


def left_behind(record: dict) -> list[str]:
    """What the cell's transform left in process-wide state (conformance.isolation), as recorded."""
    extra = record.get("extra")
    lines = extra.get("process_state_restored") if isinstance(extra, dict) else None
    return [str(line) for line in lines] if isinstance(lines, list) else []


@dataclass
class Loaded:
    """The merged input: the latest record of every cell, and what could not be read."""

    rows: list[dict]
    problems: list[Problem]
    sources: list[str]
    n_records: int = 0


def load(paths: Iterable[Path | str]) -> Loaded:
    """Read and merge every record under ``paths``; the most recently started record of a cell wins."""
    paths = [str(p) for p in paths]
    problems = [Problem(p, 0, "no such file or directory") for p in paths if not Path(p).exists()]
    records = []
    for record in iter_records([p for p in paths if Path(p).exists()], problems):
        try:
            records.append(normalise(record))
        except Exception as exc:  # a valid-looking record with unusable contents: report, keep going
            problems.append(Problem("?", 0, f"unusable record {str(record)[:120]!r}: {exc}"))
    rows = sorted(latest_by_cell(records).values(),
                  key=lambda r: (r["library"], r["spec"], natural_key(r["subject"]), transform_sort_key(r["transform"]),
                                 r["check"], r["device"], r["dtype"]))
    return Loaded(rows=rows, problems=problems, sources=paths, n_records=len(records))


# ----------------------------------------------------------------------------------------------- aggregation
def aggregate(rows: Iterable[dict]) -> dict:
    """Counts per outcome, the worst outcome, ``n_pass/n_total`` (skips excluded) and causes of ``rows``."""
    counts = Counter(r["outcome"] for r in rows_list(rows))
    causes = Counter()
    for r in rows_list(rows):
        if r["cause"] and r["outcome"] != "pass":
            causes[r["cause"]] += 1
    total = sum(counts.values()) - counts.get("skip", 0)
    return {"counts": {o: counts[o] for o in WORST_FIRST if counts.get(o)},
            "worst": worst(counts), "n_pass": counts.get("pass", 0), "n_total": total,
            "causes": dict(causes.most_common())}


def rows_list(rows):
    return rows if isinstance(rows, list) else list(rows)


def group(rows: Iterable[dict], *keys: str) -> dict[tuple, list[dict]]:
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        grouped[tuple(r[k] for k in keys)].append(r)
    return grouped


def cause_summary(rows: list[dict]) -> list[dict]:
    """How many checks each cause explains, per library and outcome, most frequent first."""
    by_cause: dict[str, dict] = {}
    for r in rows:
        if not r["cause"] or r["outcome"] == "pass":
            continue
        entry = by_cause.setdefault(r["cause"], {"cause": r["cause"], "total": 0, "by_library": Counter(),
                                                 "by_outcome": Counter(), "cells": set()})
        entry["total"] += 1
        entry["by_library"][r["library"]] += 1
        entry["by_outcome"][r["outcome"]] += 1
        entry["cells"].add((r["subject"], r["transform"]))
    out = []
    for entry in sorted(by_cause.values(), key=lambda e: (-e["total"], e["cause"])):
        out.append({"cause": entry["cause"], "total": entry["total"], "matrix_cells": len(entry["cells"]),
                    "by_library": dict(entry["by_library"].most_common()),
                    "by_outcome": dict(entry["by_outcome"].most_common())})
    return out


@functools.lru_cache(maxsize=4096)
def parse_time(text: str) -> float | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except (TypeError, ValueError):
        try:
            parsed = datetime.fromisoformat(text)
        except (TypeError, ValueError):
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()


def human_age(seconds: float | None) -> str:
    if seconds is None:
        return "unknown age"
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def runs_summary(rows: list[dict], now: float) -> list[dict]:
    """One entry per run that still provides a cell after merging: when, where, and how old."""
    runs = []
    for (run,), members in sorted(group(rows, "run").items()):
        times = [t for t in (parse_time(r["started"]) for r in members) if t is not None]
        envs = {r["env_key"] for r in members}
        env = members[0]["env"]
        age = now - min(times) if times else None
        runs.append({"run": run, "cells": len(members), "started": min(r["started"] for r in members),
                     "age_s": None if age is None else round(age), "age": human_age(age),
                     "stale": age is not None and age > STALE_AFTER_S,
                     "devices": sorted({r["device"] for r in members}),
                     "torch": sorted({str(r["env"].get("torch")) for r in members}),
                     "suite_sha": env.get("suite_sha"), "n_envs": len(envs)})
    return runs


# ------------------------------------------------------------------------------------------------------ diff
@dataclass
class Diff:
    """What changed against a baseline, cell by cell (cell id -> (old, new))."""

    against: str
    regressions: list[tuple[str, dict, dict]] = field(default_factory=list)
    fixes: list[tuple[str, dict, dict]] = field(default_factory=list)
    changed_causes: list[tuple[str, dict, dict]] = field(default_factory=list)
    changed_outcomes: list[tuple[str, dict, dict]] = field(default_factory=list)
    new: list[tuple[str, dict]] = field(default_factory=list)
    removed: list[tuple[str, dict]] = field(default_factory=list)

    def classification(self) -> dict[str, str]:
        """cell id -> one of regression/fix/cause/changed/new, for marking cells in the matrix."""
        marks = {}
        for name, items in (("changed", self.changed_outcomes), ("cause", self.changed_causes),
                            ("fix", self.fixes), ("regression", self.regressions)):
            for cell, *_ in items:
                marks[cell] = name
        for cell, _ in self.new:
            marks[cell] = "new"
        return marks

    def to_json(self) -> dict:
        pair = lambda items: [{"cell": c, "old": o, "new": n} for c, o, n in items]  # noqa: E731
        return {"against": self.against, "regressions": pair(self.regressions), "fixes": pair(self.fixes),
                "changed_causes": pair(self.changed_causes), "changed_outcomes": pair(self.changed_outcomes),
                "new": [{"cell": c, "new": n} for c, n in self.new],
                "removed": [{"cell": c, "old": o} for c, o in self.removed]}


def load_baseline(path: Path | str, problems: list[Problem]) -> dict[str, dict]:
    """cell id -> {"outcome", "cause"} from an expectations JSON file or a results file/directory."""
    from . import expectations

    path = Path(path)
    if path.is_file() and path.suffix == ".json":
        return {cell: {"outcome": v["outcome"], "cause": v.get("cause")}
                for cell, v in expectations.load(path)["cells"].items()}
    if not path.exists():
        raise FileNotFoundError(f"--diff-against {path}: no such file or directory")
    baseline_problems: list[Problem] = []
    records = [normalise(r) for r in iter_records([path], baseline_problems)]
    problems.extend(Problem(p.path, p.line, "baseline: " + p.reason) for p in baseline_problems)
    return {cell: {"outcome": r["outcome"], "cause": r["cause"]} for cell, r in latest_by_cell(records).items()}


def diff(baseline: dict[str, dict], rows: list[dict], against: str = "") -> Diff:
    """Classify every cell against ``baseline``.

    regression: pass/xfail -> fail/crash/timeout/xpass; fix: fail/crash/timeout -> pass; changed cause: same
    outcome, other cause; changed outcome: any other outcome change (e.g. pass -> skip, fail -> xfail).
    """
    result = Diff(against=against)
    current = {r["id"]: {"outcome": r["outcome"], "cause": r["cause"]} for r in rows}
    for cell in sorted(current):
        new = current[cell]
        old = baseline.get(cell)
        if old is None:
            result.new.append((cell, new))
        elif old["outcome"] in GOOD and new["outcome"] in BAD:
            result.regressions.append((cell, old, new))
        elif old["outcome"] in BAD - {"xpass"} and new["outcome"] == "pass":
            result.fixes.append((cell, old, new))
        elif old["outcome"] != new["outcome"]:
            result.changed_outcomes.append((cell, old, new))
        elif (old.get("cause") or None) != (new.get("cause") or None):
            result.changed_causes.append((cell, old, new))
    result.removed = [(cell, baseline[cell]) for cell in sorted(set(baseline) - set(current))]
    return result


# ----------------------------------------------------------------------------------------------------- model
def build_model(loaded: Loaded, the_diff: Diff | None = None, now: float | None = None,
                bench: list[dict] | None = None) -> dict:
    """The aggregated report, as matrix.json stores it (documented in :data:`JSON_DOC`); ``bench`` is what
    :func:`load_bench` read (benchmark runs shown beside the matrix), if any."""
    now = time.time() if now is None else now
    rows = loaded.rows
    subjects = {}
    for r in rows:
        subjects.setdefault(r["subject"], {"subject": r["subject"], "library": r["library"], "spec": r["spec"]})
    transforms = sorted({r["transform"] for r in rows}, key=transform_sort_key)
    cells = []
    for (subject, transform), members in group(rows, "subject", "transform").items():
        entry = {"subject": subject, "library": members[0]["library"], "spec": members[0]["spec"],
                 "transform": transform, **aggregate(members), "by_device_dtype": {}}
        for (device, dtype), part in sorted(group(members, "device", "dtype").items()):
            agg = aggregate(part)
            entry["by_device_dtype"][f"{device}/{dtype}"] = {k: agg[k] for k in ("counts", "worst", "n_pass",
                                                                                 "n_total")}
        cells.append(entry)
    libraries = {}
    for (library,), members in sorted(group(rows, "library").items()):
        agg = aggregate(members)
        libraries[library] = {"counts": agg["counts"], "n_pass": agg["n_pass"], "n_total": agg["n_total"],
                              "pass_rate": round(agg["n_pass"] / agg["n_total"], 4) if agg["n_total"] else None,
                              "subjects": sorted({r["subject"] for r in members})}
    envs: dict[str, int] = {}
    env_table = []
    checks = []
    for r in rows:
        key = r["env_key"]
        if key not in envs:
            envs[key] = len(env_table)
            env_table.append(r["env"])
        check = {k: v for k, v in r.items() if k not in ("env", "env_key", "id")}
        check["cell"] = r["id"]
        check["env_index"] = envs[key]
        checks.append(check)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "doc": JSON_DOC,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "sources": loaded.sources,
        "n_records_read": loaded.n_records,
        "worst_first": list(WORST_FIRST),
        "subjects": sorted(subjects.values(), key=lambda s: (s["library"], s["spec"], natural_key(s["subject"]))),
        "transforms": transforms,
        "devices": sorted({r["device"] for r in rows}),
        "dtypes": sorted({r["dtype"] for r in rows}),
        "summary": aggregate(rows),
        "libraries": libraries,
        "causes": cause_summary(rows),
        "runs": runs_summary(rows, now),
        "cells": sorted(cells, key=lambda c: (c["library"], c["spec"], natural_key(c["subject"]),
                                              transform_sort_key(c["transform"]))),
        "checks": checks,
        "envs": env_table,
        "problems": [{"path": p.path, "line": p.line, "reason": p.reason} for p in loaded.problems],
        "diff": the_diff.to_json() if the_diff is not None else None,
        "bench": bench or [],
        "agreement": agreement(rows),
    }


#: The transform whose cells compare a subject on CUDA with the same subject, parameters and input on CPU.
AGREEMENT_TRANSFORM = "cpu_vs_cuda"


def agreement(rows: Iterable[dict]) -> list[dict]:
    """CPU/CUDA agreement per subject (from the ``cpu_vs_cuda`` cells): the worst outcome, the largest error seen
    and, for a disagreement, its cause and message; disagreements first, then by library and subject."""
    out = []
    for (subject,), members in group([r for r in rows if r["transform"] == AGREEMENT_TRANSFORM], "subject").items():
        errors = [r["max_abs_err"] for r in members if isinstance(r.get("max_abs_err"), (int, float))]
        rel = [r["max_rel_err"] for r in members if isinstance(r.get("max_rel_err"), (int, float))]
        bad = [r for r in members if r["outcome"] in BAD or r["outcome"] == "xfail"]
        first = bad[0] if bad else None
        out.append({"subject": subject, "library": members[0]["library"], "worst": worst(r["outcome"] for r in members),
                    "checks": {r["check"]: r["outcome"] for r in members},
                    "max_abs_err": max(errors) if errors else None, "max_rel_err": max(rel) if rel else None,
                    "cause": first.get("cause") if first else None,
                    "message": (first.get("message") or "")[:300] if first else None})
    rank = {o: i for i, o in enumerate(WORST_FIRST)}
    return sorted(out, key=lambda a: (rank.get(a["worst"], len(rank)), a["library"], natural_key(a["subject"])))


# ------------------------------------------------------------------------------------------------- benchmarks
def load_bench(paths: Iterable[Path | str], problems: list[Problem]) -> list[dict]:
    """The benchmark runs (``python -m conformance.bench``) to show: per file its device, profile, start and, per
    library, the measured cases as recorded. An unreadable file is a problem, not an error."""
    from .bench.gate import load as load_results

    shown = []
    for path in paths:
        try:
            data = load_results(path)
        except (OSError, ValueError) as exc:
            problems.append(Problem(str(path), 0, f"benchmark results not shown: {exc}"))
            continue
        libraries: dict[str, list[dict]] = defaultdict(list)
        for case_id, entry in sorted(data["entries"].items(), key=lambda kv: natural_key(kv[0])):
            numbers = {k: entry.get(k) for k in ("ratio", "subject_s", "reference_s", "mem_subject",
                                                 "mem_reference")}
            libraries[str(entry.get("library", "unknown"))].append(
                {"case": case_id, "subject": str(entry.get("subject", case_id.split("|")[0])),
                 "size": str(entry.get("size", "")), "mode": str(entry.get("mode", "")),
                 "against": str(entry.get("against", "spec")),
                 **{k: v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None
                    for k, v in numbers.items()}})
        shown.append({"source": str(path), "device": str(data.get("device", "?")),
                      "profile": str(data.get("profile", "?")), "started": str(data.get("started", "")),
                      "runs": data.get("runs", 1), "libraries": dict(sorted(libraries.items())),
                      "skipped": dict(sorted(data["skipped"].items()))})
    return shown


JSON_DOC = """matrix.json: the compatibility matrix, aggregated from recorded cells (latest record per cell wins).
schema_version: layout version. generated: UTC time of rendering. sources: the result paths read.
worst_first: outcome order used for aggregation (the worst outcome present wins).
subjects: [{subject, library, spec}]; transforms: column order; devices, dtypes: coordinates present.
summary: counts over every check. libraries: {library: {counts, n_pass, n_total, pass_rate, subjects}}.
cells: one per subject x transform over all devices/dtypes: {subject, library, spec, transform,
  counts: {outcome: n}, worst, n_pass, n_total (skips excluded), causes: {cause: n},
  by_device_dtype: {"<device>/<dtype>": {counts, worst, n_pass, n_total}}}.
causes: [{cause, total (checks), matrix_cells (subject x transform), by_library, by_outcome}].
runs: [{run, cells, started, age_s, age, stale, devices, torch, suite_sha, n_envs}].
checks: the raw per-check records (schema of conformance.results) with env replaced by env_index into envs,
  plus cell = "subject|transform|check|device|dtype".
problems: [{path, line, reason}] for lines that could not be read.
diff: null, or {against, regressions, fixes, changed_causes, changed_outcomes: [{cell, old, new}],
  new: [{cell, new}], removed: [{cell, old}]} where old/new = {outcome, cause}.
bench: benchmark runs shown beside the matrix (python -m conformance.bench): [{source, device, profile, started,
  runs, libraries: {library: [{case, subject, size, mode, against ("spec" or "eager"), ratio (subject time /
  reference time, interleaved median), subject_s, reference_s (median seconds per call), mem_subject,
  mem_reference (peak bytes of one forward+backward, or null)}]}, skipped: {case: reason}}].
agreement: CPU/CUDA agreement per subject from the cpu_vs_cuda cells, disagreements first: [{subject, library,
  worst, checks: {check: outcome}, max_abs_err, max_rel_err (largest over its checks, or null), cause, message}]."""


def error_size(value: float | None) -> str:
    """An error size as both reports print it: three significant digits, empty when there is none."""
    return "" if value is None else f"{value:.3g}"
