"""The report's data side: read recorded cells, merge runs, aggregate, diff against a baseline.

Everything here works on the records written by :mod:`conformance.records.io`; no outcome is re-derived, the
recorded ``outcome`` and ``cause`` are counted as they are. The renderers (:mod:`conformance.report.html`,
:mod:`conformance.report`) only format what :func:`build_model` returns.

Aggregation of one matrix cell (all checks, and dtypes/devices when those are not fixed, of one
subject x transform): the worst outcome wins, in the order of :data:`WORST_FIRST`; the count shown is
``n_pass/n_total`` where ``n_total`` excludes skips.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

from ..core.escape import cell_command
from ..core.settings import PROFILES
from ..records.expectations import implied, is_implied
from ..records.io import NO_DEVICE, TEXT_CAP, Problem, cell_key, iter_records, read_suite_files, record_files

#: Version of matrix.json's layout (bump on an incompatible change).
JSON_SCHEMA_VERSION = 1
#: Worst first: a matrix cell shows the first of these that any of its checks has.
WORST_FIRST = ("crash", "timeout", "fail", "xpass", "xfail", "pass", "skip")
BAD = frozenset({"fail", "crash", "timeout", "xpass"})
GOOD = frozenset({"pass", "xfail"})
#: Runs older than this are marked stale in the report.
STALE_AFTER_S = 7 * 24 * 3600

#: The longest coordinate, run id, time, cause, version or environment value kept from a record.
SHORT_CAP = 500
#: At most this many entries of a record's environment (and of its ``libraries``) are kept.
ENV_ITEMS_CAP = 100
#: The merge rules: per cell the record of the newest suite version wins (ties: the latest run), or the latest run.
NEWEST_SUITE, LATEST_RUN = "newest-suite-version", "latest-run"


def worst(outcomes: Iterable[str]) -> str:
    """The worst of ``outcomes`` by :data:`WORST_FIRST` (``"skip"`` for none)."""
    rank = {o: i for i, o in enumerate(WORST_FIRST)}
    return min(outcomes, key=lambda o: rank.get(o, 0), default="skip")


@functools.lru_cache(maxsize=None)
def natural_key(name: str) -> tuple:
    """``Layer2`` before ``Layer10``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


# ------------------------------------------------------------------------------------------------------ loading
def reproducer_code(path) -> str | None:
    """The text of a known failure's reproducer when ``path`` names a file under this checkout's reproducers/ (a
    record is data: its path is read only there), capped; else None."""
    from .. import SUITE_ROOT

    if not isinstance(path, str) or not path.startswith("reproducers/"):
        return None
    try:
        folder = (SUITE_ROOT / "reproducers").resolve()
        file = (SUITE_ROOT / path).resolve()
        if folder not in file.parents or not file.is_file():
            return None
        return cap(file.read_text(encoding="utf-8", errors="replace"), 3 * TEXT_CAP)
    except (OSError, ValueError):
        return None


def cap(value, limit: int = TEXT_CAP) -> str | None:
    """``value`` as text of at most ``limit`` characters (plus a note of how many were cut); None stays None."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        return text[:limit] + f"… [{len(text) - limit} more characters cut when loaded]"
    return text


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else None


def _scalar(value):
    """An environment value as the report keeps it: JSON scalars (finite numbers), anything else as capped text."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value if math.isfinite(value) else None
    return cap(value, SHORT_CAP)


def clean_env(env) -> dict:
    """A record's environment with every key and value capped (``libraries`` stays a mapping)."""
    if not isinstance(env, dict):
        return {}
    out = {}
    for key, value in itertools.islice(env.items(), ENV_ITEMS_CAP):
        key = cap(key, SHORT_CAP)
        if key == "libraries" and isinstance(value, dict):
            out[key] = {cap(k, SHORT_CAP): _scalar(v) for k, v in itertools.islice(value.items(), ENV_ITEMS_CAP)}
        else:
            out[key] = _scalar(value)
    return out


#: The fields of a loaded row: the record's, capped, plus ``id`` (the cell), ``env_key`` (the environment's
#: identity) and ``left_behind`` (what the transform left in the process, also appended to ``message``).
ROW_FIELDS = ("id", "subject", "library", "spec", "transform", "check", "device", "dtype", "outcome", "cause",
              "message", "max_abs_err", "max_rel_err", "atol", "rtol", "tie_excluded", "example", "reproduce",
              "known", "duration_s", "started", "run", "library_version", "env", "env_key", "left_behind")
#: Row fields that matrix.json does not repeat per check (``env`` becomes ``env_index``).
NOT_IN_CHECKS = frozenset({"id", "env", "env_key", "left_behind"})


class Row:
    """One loaded cell record: read like a dict (``row["outcome"]``, ``row.get``), stored in slots (a report of a
    few hundred thousand cells holds one per cell)."""

    __slots__ = ROW_FIELDS

    def __init__(self, **values):
        for name in ROW_FIELDS:
            setattr(self, name, values.get(name))

    def __getitem__(self, key: str):
        try:
            return getattr(self, key)
        except (AttributeError, TypeError):
            raise KeyError(key) from None

    def __setitem__(self, key: str, value) -> None:
        setattr(self, key, value)

    def __contains__(self, key: str) -> bool:
        return key in ROW_FIELDS

    def get(self, key: str, default=None):
        return getattr(self, key, default) if key in ROW_FIELDS else default

    def keys(self) -> tuple[str, ...]:
        return ROW_FIELDS

    def items(self):
        return ((name, getattr(self, name)) for name in ROW_FIELDS)

    def __repr__(self) -> str:
        return f"Row({self.id!r}, {self.outcome!r})"


LEFT_BEHIND = "left behind in the worker process (undone before the next cell): "
#: how a cell's further findings (the record's ``also``) follow its first in the message
ALSO_FOUND = "also found: "


def left_behind(record) -> list[str]:
    """What the cell's transform left in process-wide state (conformance.core.isolation), as recorded."""
    if isinstance(record, Row):
        return list(record.left_behind or ())
    extra = record.get("extra")
    lines = extra.get("process_state_restored") if isinstance(extra, dict) else None
    return [str(line) for line in lines] if isinstance(lines, list) else []


def no_device_skip(record) -> bool:
    """A CUDA cell skipped for want of a GPU: it says nothing about the cell (see results.latest_by_cell)."""
    return record.get("outcome") == "skip" and record.get("message") == NO_DEVICE


# ------------------------------------------------------------------------------------------------- environments
def parse_environment(name: str | None) -> dict | None:
    """What an expectations environment name says: ``cpu-torch2.13`` -> {"device": "cpu", "torch": "2.13"}; a part
    the name does not state is None; None when it states neither."""
    name = name or ""
    device = re.match(r"(cpu|cuda)\b", name)
    torch = re.search(r"torch(\d+\.\d+)", name)
    if not device and not torch:
        return None
    return {"device": device.group(1) if device else None, "torch": torch.group(1) if torch else None}


def record_environment(env) -> dict:
    """The machine a record was made on, as an expectations name describes one: device kind (a machine with CUDA
    or without) and torch release; None where the record does not say."""
    env = env if isinstance(env, dict) else {}
    if "cuda" in env:
        device = "cuda" if env.get("cuda") else "cpu"
    elif isinstance(env.get("device_name"), str):
        device = "cpu" if env["device_name"] == "cpu" else "cuda"
    else:
        device = None
    torch = re.match(r"(\d+)\.(\d+)", str(env.get("torch") or ""))
    return {"device": device, "torch": f"{torch.group(1)}.{torch.group(2)}" if torch else None}


def in_environment(env, wanted: dict | None) -> bool:
    """Whether a record's environment is ``wanted`` (parse_environment); what either side does not state matches."""
    if wanted is None:
        return True
    got = record_environment(env)
    return all(wanted[k] is None or got[k] is None or wanted[k] == got[k] for k in ("device", "torch"))


def environment_label(env) -> str:
    got = record_environment(env)
    return f"{got['device'] or 'unknown device'} machine, torch {got['torch'] or 'unknown'}"


# ------------------------------------------------------------------------------------------------------ loading
@dataclass
class Loaded:
    """The merged input: one record per cell (chosen by ``merge_rule``), and what could not be read.

    ``per_source``: records read from each path given. ``suite_versions``: the suite versions the records come from
    (newest first). ``devices``: devices with a record other than a no-device skip. With an ``environment``,
    ``env_cells`` holds per cell the chosen record of that environment only ({"outcome", "cause"}) and
    ``left_out`` how many records of other environments it does not include, per environment.
    """

    rows: list[Row]
    problems: list[Problem]
    sources: list[str]
    n_records: int = 0
    per_source: dict[str, int] = field(default_factory=dict)
    #: records read from each directory holding record files (a run nested in a given directory is named here)
    per_directory: dict[str, int] = field(default_factory=dict)
    suite_versions: list[dict] = field(default_factory=list)
    merge_rule: str = NEWEST_SUITE
    devices: set[str] = field(default_factory=set)
    environment: str | None = None
    env_cells: dict[str, dict] | None = None
    left_out: dict[str, int] = field(default_factory=dict)
    #: the suite's description recorded beside the records (records.io.read_suite_files): column order, docs
    suite: dict = field(default_factory=lambda: {"order": {}, "transforms": {}, "checks": {}})

    @property
    def mixed_versions(self) -> bool:
        return len(self.suite_versions) > 1

    def transform_key(self, name: str) -> tuple:
        return transform_position(self.suite["order"], name)


def transform_position(order: dict[str, int], name: str) -> tuple:
    """Columns in the order of the transform table; a transform the suite's description does not know after them."""
    return (order.get(name, len(order)), name)


class _CappedProblems(list):
    """Problems whose reasons are capped as they are added (a reason can quote a huge record field)."""

    def append(self, problem: Problem) -> None:
        super().append(Problem(cap(problem.path, SHORT_CAP), problem.line, cap(problem.reason, SHORT_CAP)))


class _Loader:
    """One pass over the records, keeping per cell only the record that wins and only what the report uses."""

    def __init__(self, merge_rule: str, environment: str | None):
        self.merge_rule = merge_rule
        self.wanted = parse_environment(environment)
        self.strings: dict[str, str] = {}
        self.envs: dict[str, tuple[str, dict]] = {}
        self.raw_envs: dict[str, tuple[str, dict]] = {}
        self.knowns: dict[tuple, dict] = {}
        self.chosen: dict[str, tuple[tuple, Row]] = {}
        self.env_chosen: dict[str, tuple[tuple, dict]] = {}
        self.left_out: Counter = Counter()
        self.versions: dict[str | None, dict] = {}
        self.devices: set[str] = set()
        self.n_records = 0

    def intern(self, value, limit: int = SHORT_CAP) -> str | None:
        text = value if value.__class__ is str and len(value) <= limit else cap(value, limit)
        return None if text is None else self.strings.setdefault(text, text)

    def environment(self, env: dict) -> tuple[str, dict]:
        """(env_key, capped environment), one shared pair per distinct environment."""
        raw = json.dumps(env, sort_keys=True)
        small = len(raw) <= 8192  # a hostile environment is not kept as a lookup key
        known = self.raw_envs.get(raw) if small else None
        if known is None:
            clean = clean_env(env)
            key = json.dumps(clean, sort_keys=True)
            known = self.envs.setdefault(key, (key, clean))
            if small:
                self.raw_envs[raw] = known
        return known

    def rank(self, record: dict, env: dict) -> tuple:
        # A no-device skip never displaces a record of a run that had a GPU, whatever its suite version; then the
        # newer suite version (by its commit time; one without a time is older than one with); then the later run.
        present = not no_device_skip(record)
        started = self.intern(record.get("started")) or ""
        if self.merge_rule == LATEST_RUN:
            return (present, started)
        recorded = env.get("suite_time")
        suite_time = parse_time(recorded) if isinstance(recorded, str) and len(recorded) <= 64 else None
        return (present, suite_time is not None, suite_time or 0.0, started)

    def add(self, record: dict) -> None:
        self.n_records += 1
        env = record.get("env") if isinstance(record.get("env"), dict) else {}
        rank = self.rank(record, env)
        key = "|".join(self.intern(record[k]) for k in ("subject", "transform", "check", "device", "dtype"))
        sha = cap(env.get("suite_sha"), SHORT_CAP) if env.get("suite_sha") is not None else None
        version = self.versions.setdefault(sha, {"suite_sha": sha, "suite_time": None, "records": 0})
        version["records"] += 1
        if isinstance(env.get("suite_time"), str) and (version["suite_time"] or "") < env["suite_time"]:
            version["suite_time"] = cap(env["suite_time"], SHORT_CAP)
        if rank[0]:
            self.devices.add(self.intern(record["device"]))
        if self.wanted is not None:
            if in_environment(env, self.wanted):
                old = self.env_chosen.get(key)
                if old is None or rank >= old[0]:
                    self.env_chosen[key] = (rank, {"outcome": self.intern(record["outcome"]),
                                                   "cause": self.intern(record.get("cause")),
                                                   "implied": implied(record["outcome"], record.get("message"),
                                                                      record.get("known"))})
            else:
                self.left_out[environment_label(env)] += 1
        old = self.chosen.get(key)
        if old is None or rank >= old[0]:
            self.chosen[key] = (rank, self.row(record, key, env))

    def row(self, record: dict, key: str, env: dict) -> Row:
        intern = self.intern
        env_key, env_clean = self.environment(env)
        message = cap(record.get("message")) or ""
        extra = record.get("extra")
        lines = extra.get("process_state_restored") if isinstance(extra, dict) else None
        undone = tuple(cap(line) for line in lines[:20]) if isinstance(lines, list) else ()
        also = record.get("also")
        if isinstance(also, list) and also:  # the check's further findings, shown after the first
            found = "; ".join(f"[{cap(f.get('cause'), SHORT_CAP)}] {cap(f.get('message'))}" for f in also[:5]
                              if isinstance(f, dict))
            message = cap((message + "\n" if message else "") + ALSO_FOUND + found)
        if undone:  # shown with the message: a finding about the library/torch even when the cell itself passed
            message = cap((message + "\n" if message else "") + LEFT_BEHIND + "; ".join(undone))
        known = record.get("known")
        if isinstance(known, dict):
            entry = tuple(intern(known.get(k), TEXT_CAP) for k in ("reason", "link", "cause", "reproducer"))
            known = self.knowns.get(entry)
            if known is None:
                known = self.knowns[entry] = dict(zip(("reason", "link", "cause", "reproducer"), entry))
                known["reproducer_code"] = reproducer_code(known["reproducer"])
        else:
            known = None
        tie = record.get("tie_excluded")
        return Row(id=key, subject=intern(record["subject"]), transform=intern(record["transform"]),
                   check=intern(record["check"]), device=intern(record["device"]), dtype=intern(record["dtype"]),
                   outcome=intern(record["outcome"]), library=intern(record.get("library")) or "unknown",
                   spec=intern(record.get("spec")) or "unknown", cause=intern(record.get("cause")),
                   message=intern(message) if len(message) <= 200 else message,
                   max_abs_err=_number(record.get("max_abs_err")), max_rel_err=_number(record.get("max_rel_err")),
                   atol=_number(record.get("atol")), rtol=_number(record.get("rtol")),
                   tie_excluded=tie if isinstance(tie, int) and not isinstance(tie, bool) else 0,
                   example=cap(record.get("example")), reproduce=reproduce_command(key, env_clean), known=known,
                   duration_s=_number(record.get("duration_s")), started=intern(record.get("started")) or "",
                   run=intern(record.get("run")) or "unknown", library_version=intern(record.get("library_version")),
                   env=env_clean, env_key=env_key, left_behind=undone or None)


def reproduce_command(cell_id: str, env: dict) -> str:
    """The command that re-runs a cell, made from its id (and its run's profile when that is one of this suite's),
    never the record's own ``reproduce``: records come from other machines, and a pasted command must not run what a
    record planted. A subject a test suite registered also needs that suite's ``--load FILE``, which the failure
    text printed where the cell ran holds."""
    profile = env.get("hypothesis_profile")
    return cell_command(cell_id, profile=profile if profile in PROFILES else None)


def normalise(record: dict) -> Row:
    """One record as the report keeps it (every field present, of the expected type, capped)."""
    env = record.get("env") if isinstance(record.get("env"), dict) else {}
    return _Loader(NEWEST_SUITE, None).row(record, cell_key(record), env)


def row_order(r: Row, transform_key) -> tuple:
    return (r["library"], r["spec"], natural_key(r["subject"]), transform_key(r["transform"]), r["check"],
            r["device"], r["dtype"])


def load_records(paths: Iterable[Path | str], *, latest_run_wins: bool = False, environment: str | None = None) -> Loaded:
    """Read every record under ``paths`` in one streaming pass and keep per cell the record that wins: the newest
    suite version's (by ``env.suite_time``; a record without one is older), then the most recently started; with
    ``latest_run_wins`` only the most recently started. Either way a no-device CUDA skip never displaces a record of
    a run that had a GPU. With ``environment`` (an expectations name such as ``cpu-torch2.13``) the records of that
    environment are also chosen on their own (``Loaded.env_cells``), to be compared like with like."""
    paths = [str(p) for p in paths]
    problems = _CappedProblems()
    loader = _Loader(LATEST_RUN if latest_run_wins else NEWEST_SUITE, environment)
    per_source = {}
    per_directory: Counter = Counter()
    for path in paths:
        before = loader.n_records
        if not Path(path).exists():
            problems.append(Problem(path, 0, "no such file or directory"))
        else:
            for file in record_files(path):
                read_before = loader.n_records
                for record in iter_records([file], problems):
                    try:
                        loader.add(record)
                    except Exception as exc:  # a valid-looking record with unusable contents: report, keep going
                        problems.append(Problem(path, 0, f"unusable record {str(record)[:120]!r}: {exc}"))
                if loader.n_records > read_before:
                    per_directory[str(file.parent)] += loader.n_records - read_before
        per_source[path] = loader.n_records - before
    suite = read_suite_files([p for p in paths if Path(p).exists()])
    by_column = functools.partial(transform_position, suite["order"])
    rows = sorted((row for _, row in loader.chosen.values()), key=lambda row: row_order(row, by_column))
    shown = Counter(r["env"].get("suite_sha") for r in rows)
    versions = sorted(loader.versions.values(),
                      key=lambda v: (parse_time(v["suite_time"] or "") or float("-inf"), v["suite_sha"] or ""),
                      reverse=True)
    for version in versions:
        version["cells_shown"] = shown.get(version["suite_sha"], 0)
    return Loaded(rows=rows, problems=list(problems), sources=paths, n_records=loader.n_records,
                  per_source=per_source, per_directory=dict(sorted(per_directory.items())), suite_versions=versions, merge_rule=loader.merge_rule,
                  devices=loader.devices, environment=environment if loader.wanted is not None else None, suite=suite,
                  env_cells={k: v for k, (_, v) in loader.env_chosen.items()} if loader.wanted is not None else None,
                  left_out=dict(loader.left_out.most_common()))


def versions_note(loaded: Loaded) -> str | None:
    """One sentence when the records come from more than one suite version (None otherwise)."""
    if not loaded.mixed_versions:
        return None
    listed = ", ".join(f"{v['suite_sha'] or 'unknown sha'} ({v['suite_time'] or 'no commit time'}; "
                       f"{v['records']} records, {v['cells_shown']} shown)" for v in loaded.suite_versions[:10])
    more = f" and {len(loaded.suite_versions) - 10} more" if len(loaded.suite_versions) > 10 else ""
    rule = ("the most recently started record of each cell is shown (--latest-run-wins)"
            if loaded.merge_rule == LATEST_RUN else
            "each cell shows the record of the newest suite version (by commit time; --latest-run-wins shows the "
            "most recent run instead)")
    return f"the records come from {len(loaded.suite_versions)} suite versions: {listed}{more}; {rule}"


# ----------------------------------------------------------------------------------------------- aggregation
def aggregate(rows: Iterable[dict]) -> dict:
    """Counts per outcome, the worst outcome, ``n_pass/n_total`` (skips excluded) and causes of ``rows``."""
    rows = rows_list(rows)  # read twice below: a generator would give no causes
    counts = Counter(r["outcome"] for r in rows)
    causes = Counter(r["cause"] for r in rows if r["cause"] and r["outcome"] != "pass")
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


def age_of(rows: Iterable[dict], now: float) -> tuple[float | None, bool]:
    """Seconds since the earliest start among ``rows`` (None when none has a readable time), and whether that is
    stale (older than STALE_AFTER_S)."""
    times = [t for t in (parse_time(r["started"]) for r in rows) if t is not None]
    age = now - min(times) if times else None
    return age, age is not None and age > STALE_AFTER_S


def runs_summary(rows: list[dict], now: float) -> list[dict]:
    """One entry per run that still provides a cell after merging: when, where, and how old."""
    runs = []
    for (run,), members in sorted(group(rows, "run").items()):
        envs = {r["env_key"] for r in members}
        env = members[0]["env"]
        age, stale = age_of(members, now)
        runs.append({"run": run, "cells": len(members), "started": min(r["started"] for r in members),
                     "age_s": None if age is None else round(age), "age": human_age(age), "stale": stale,
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
    #: the expectations' environment when only its records were compared, and what was left out per environment
    environment: str | None = None
    left_out: dict[str, int] = field(default_factory=dict)
    compared: int = 0

    def shows(self, env) -> bool:
        """Whether a row of ``env`` was part of the comparison (a marked cell must be the compared record)."""
        return in_environment(env, parse_environment(self.environment)) if self.environment else True

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
                "removed": [{"cell": c, "old": o} for c, o in self.removed],
                "environment": self.environment, "compared": self.compared, "left_out": self.left_out,
                "left_out_note": left_out_note(self.environment, self.left_out)}


def load_baseline(path: Path | str, problems: list[Problem]) -> dict[str, dict]:
    """cell id -> {"outcome", "cause"} from an expectations JSON file or a results file/directory.

    Raises :class:`conformance.records.expectations.ExpectationsError` for an unusable expectations file and
    FileNotFoundError for a missing path."""
    from ..records import expectations

    path = Path(path)
    if path.suffix == ".json" and not path.is_dir():  # sparse: an implied cell is not listed (diff's ``sparse``)
        return {cell: {"outcome": v["outcome"], "cause": v.get("cause")}
                for cell, v in expectations.read(path)["cells"].items()}
    if not path.exists():
        raise FileNotFoundError(f"--diff-against {path}: no such file or directory")
    baseline = load_records([path])
    problems.extend(Problem(p.path, p.line, "baseline: " + p.reason) for p in baseline.problems)
    return {r["id"]: {"outcome": r["outcome"], "cause": r["cause"]} for r in baseline.rows}


def diff(baseline: dict[str, dict], rows: Iterable[dict] | dict[str, dict], against: str = "", *,
         environment: str | None = None, left_out: dict[str, int] | None = None, sparse: bool = False) -> Diff:
    """Classify every cell against ``baseline``; ``rows`` are report rows or cell id -> {"outcome", "cause",
    "implied"}.

    regression: pass/xfail -> fail/crash/timeout/xpass; fix: fail/crash/timeout -> pass; changed cause: same
    outcome, other cause; changed outcome: any other outcome change (e.g. pass -> skip, fail -> xfail).
    ``environment`` and ``left_out`` record that only that environment's records were compared. With ``sparse``
    (an expectations file) a cell the baseline does not list is as expected when its outcome is implied.
    """
    result = Diff(against=against, environment=environment, left_out=dict(left_out or {}))
    current = rows if isinstance(rows, dict) else {r["id"]: {"outcome": r["outcome"], "cause": r["cause"],
                                                             "implied": is_implied(r)} for r in rows}
    result.compared = len(current)
    for cell in sorted(current):
        new = current[cell]
        old = baseline.get(cell)
        if old is None and sparse and new.get("implied"):
            continue
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


def left_out_note(environment: str | None, left_out: dict[str, int]) -> str | None:
    """What a comparison with the expectations of ``environment`` did not include (None when nothing)."""
    if not environment or not left_out:
        return None
    parts = ", ".join(f"{n} of a {label}" for label, n in itertools.islice(left_out.items(), 10))
    more = f" and {len(left_out) - 10} more environments" if len(left_out) > 10 else ""
    return (f"compared only records of environment {environment}; left out {sum(left_out.values())} record(s) "
            f"of other environments ({parts}{more})")


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
    transforms = sorted({r["transform"] for r in rows}, key=loaded.transform_key)
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
                              "subjects": sorted({r["subject"] for r in members}),
                              "by_transform": pass_counts(members, "transform", loaded.transform_key)}
    per_transform = {}
    for (transform,), members in sorted(group(rows, "transform").items(), key=lambda kv: loaded.transform_key(kv[0][0])):
        agg = aggregate(members)
        per_transform[transform] = {"counts": agg["counts"], "n_pass": agg["n_pass"], "n_total": agg["n_total"],
                                    "pass_rate": round(agg["n_pass"] / agg["n_total"], 4) if agg["n_total"] else None,
                                    "by_library": pass_counts(members, "library", natural_key)}
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "doc": JSON_DOC,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "sources": loaded.sources,
        "sources_read": [{"path": path, "records": n} for path, n in loaded.per_directory.items()],
        "not_included": [],
        "rates_over": RATES_OVER,
        "torch_by_device": torch_by_device(rows),
        "n_records_read": loaded.n_records,
        "worst_first": list(WORST_FIRST),
        "subjects": sorted(subjects.values(), key=lambda s: (s["library"], s["spec"], natural_key(s["subject"]))),
        "transforms": transforms,
        "devices": sorted({r["device"] for r in rows}),
        "dtypes": sorted({r["dtype"] for r in rows}),
        "summary": aggregate(rows),
        "libraries": libraries,
        "transforms_summary": per_transform,
        "descriptions": descriptions(loaded, transforms, sorted({r["check"] for r in rows})),
        "suite_versions": loaded.suite_versions,
        "mixed_suite_versions": versions_note(loaded),
        "merge_rule": loaded.merge_rule,
        "causes": cause_summary(rows),
        "runs": runs_summary(rows, now),
        "cells": sorted(cells, key=lambda c: (c["library"], c["spec"], natural_key(c["subject"]),
                                              loaded.transform_key(c["transform"]))),
        "envs": [env for _, env in env_index(rows).values()],
        "problems": [{"path": p.path, "line": p.line, "reason": p.reason} for p in loaded.problems],
        "diff": the_diff.to_json() if the_diff is not None else None,
        "bench": bench or [],
        "agreement": agreement(rows),
        "exchange": exchange_tables(cells, transforms),
    }


RATES_OVER = ("every check recorded (matrix.json has no filter; the HTML page's rates follow its filters): "
              "libraries[..].by_transform and transforms_summary[..].by_library give the rates of any transform "
              "or library selection")


def pass_counts(rows: list[Row], key: str, order) -> dict[str, dict]:
    """Per value of ``key``: {n_pass, n_total} (skips excluded) over ``rows``, the pieces a filtered rate adds up."""
    return {value: {"n_pass": agg["n_pass"], "n_total": agg["n_total"]}
            for (value,), agg in sorted(((k, aggregate(v)) for k, v in group(rows, key).items()),
                                        key=lambda kv: order(kv[0][0]))}


def torch_by_device(rows: Iterable[Row]) -> dict[str, list[str]]:
    """The torch releases (major.minor) each device's records were made with: CUDA and CPU columns can differ by it."""
    seen: dict[str, set[str]] = defaultdict(set)
    for r in {(r["device"], r["env_key"]): r for r in rows}.values():
        seen[r["device"]].add(record_environment(r["env"])["torch"] or "unknown")
    return {device: sorted(releases, key=natural_key) for device, releases in sorted(seen.items())}


def torch_label(model: dict, device: str) -> str:
    """`` (torch 2.11)`` after a device's name when the records shown come from more than one torch release, else
    nothing: where two columns differ by release, the release is named beside each."""
    by_device = model.get("torch_by_device") or {}
    if len({t for releases in by_device.values() for t in releases}) < 2 or not by_device.get(device):
        return ""
    return f" (torch {', '.join(by_device[device])})"


#: the report's cross-framework tables: format -> the prefix of its transforms' ids
EXCHANGE_FORMATS = {"nir": "nir_"}


def exchange_tables(cells: list[dict], transforms: list[str]) -> dict:
    """Per exchange format: the subjects exported through it (rows: the exporting library's network) and its
    columns (its own semantics, the round trip, each importing library), each cell's worst outcome and causes."""
    tables = {}
    for fmt, prefix in EXCHANGE_FORMATS.items():
        columns = [t for t in transforms if t.startswith(prefix)]
        by_subject: dict[str, dict] = {}
        for cell in cells:
            if cell["transform"] in columns and cell["n_total"]:
                row = by_subject.setdefault(cell["subject"], {"subject": cell["subject"], "library": cell["library"],
                                                              "cells": {}})
                row["cells"][cell["transform"]] = {"worst": cell["worst"], "causes": cell["causes"]}
        if by_subject:
            tables[fmt] = {"columns": columns,
                           "rows": sorted(by_subject.values(), key=lambda r: (r["library"], natural_key(r["subject"])))}
    return tables


def env_index(rows: Iterable[Row]) -> dict[str, tuple[int, dict]]:
    """env_key -> (index, environment), in the order the rows first use them."""
    index: dict[str, tuple[int, dict]] = {}
    for r in rows:
        if r["env_key"] not in index:
            index[r["env_key"]] = (len(index), r["env"])
    return index


def matrix_json(model: dict, rows: list[Row]) -> Iterator[str]:
    """matrix.json in pieces: the model, then ``checks`` (one entry per row, streamed: never all in memory)."""
    from ..core.escape import json_text

    index = env_index(rows)
    yield json_text(model)[:-1] + ',"checks":['
    for start in range(0, len(rows), 2000):
        batch = []
        for r in rows[start:start + 2000]:
            check = {"schema": 1, "kind": "cell", "cell": r["id"]}
            check.update((k, v) for k, v in r.items() if k not in NOT_IN_CHECKS)
            check["env_index"] = index[r["env_key"]][0]
            batch.append(check)
        yield ("," if start else "") + json_text(batch)[1:-1]
    yield "]}\n"




def describe(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    paragraph = " ".join((doc or "").strip().split("\n\n", 1)[0].split())
    return re.split(r"(?<=[.!?])\s+(?=[A-Z(])", paragraph, maxsplit=1)[0]


def descriptions(loaded: Loaded, transforms: Iterable[str], checks: Iterable[str]) -> dict[str, dict[str, str]]:
    """One line per transform and check: the first sentence of its definition's docstring, as the suite's description
    recorded beside the records says it; a name it does not know has none."""
    known = loaded.suite
    return {"transforms": {t: describe(known["transforms"].get(t, "")) for t in transforms},
            "checks": {c: describe(known["checks"].get(c, "")) for c in checks}}


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
    from ..bench.gate import load as load_results

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


JSON_DOC = """matrix.json: the compatibility matrix, aggregated from recorded cells (one record per cell: merge_rule).
schema_version: layout version. generated: UTC time of rendering. sources: the result paths read.
worst_first: outcome order used for aggregation (the worst outcome present wins).
subjects: [{subject, library, spec}]; transforms: column order; devices, dtypes: coordinates present.
summary: counts over every check. libraries: {library: {counts, n_pass, n_total, pass_rate, subjects,
  by_transform: {transform: {n_pass, n_total}}}}. transforms_summary: {transform: {counts, n_pass, n_total,
  pass_rate, by_library: {library: {n_pass, n_total}}}}. rates_over: what those rates count (every check).
sources_read: [{path, records}] per directory holding record files (a nested run directory is named).
not_included: [{path, what, include}]: default sources this report did not read, and how to include them.
torch_by_device: {device: [torch release (major.minor)]} of the records shown.
descriptions: {transforms: {transform: one line}, checks: {check: one line}}, from their definitions' docstrings
  ("" for a name this suite does not define).
suite_versions: [{suite_sha, suite_time (commit time, or null), records (read), cells_shown}], newest first.
mixed_suite_versions: null, or a sentence saying the records come from several suite versions and which wins.
merge_rule: "newest-suite-version" (per cell the newest suite version's record, then the latest run) or
  "latest-run" (--latest-run-wins); either way a no-device CUDA skip never displaces a GPU run's record.
cells: one per subject x transform over all devices/dtypes: {subject, library, spec, transform,
  counts: {outcome: n}, worst, n_pass, n_total (skips excluded), causes: {cause: n},
  by_device_dtype: {"<device>/<dtype>": {counts, worst, n_pass, n_total}}}.
causes: [{cause, total (checks), matrix_cells (subject x transform), by_library, by_outcome}].
exchange: {format ("nir"): {columns: its transforms (the format's own semantics, the round trip, nir_to:<library>),
  rows: [{subject, library, cells: {transform: {worst, causes}}}]}}: the cross-framework table (rows export,
  columns import), subjects with at least one cell that ran.
runs: [{run, cells, started, age_s, age, stale, devices, torch, suite_sha, n_envs}].
checks (last key): the per-check records (schema of conformance.records.io) as loaded: free text capped at 4000
  characters, other strings at 500, extra not kept (what a cell left in the process is appended to message);
  env replaced by env_index into envs, plus cell = "subject|transform|check|device|dtype".
problems: [{path, line, reason}] for lines that could not be read.
diff: null, or {against, regressions, fixes, changed_causes, changed_outcomes: [{cell, old, new}],
  new: [{cell, new}], removed: [{cell, old}], environment (the expectations' environment when only its records
  were compared, else null), compared (cells compared), left_out ({environment: records not compared}),
  left_out_note} where old/new = {outcome, cause}.
bench: benchmark runs shown beside the matrix (python -m conformance.bench): [{source, device, profile, started,
  runs, libraries: {library: [{case, subject, size, mode, against ("spec" or "eager"), ratio (subject time /
  reference time, interleaved median), subject_s, reference_s (median seconds per call), mem_subject,
  mem_reference (peak bytes of one forward+backward, or null)}]}, skipped: {case: reason}}].
agreement: CPU/CUDA agreement per subject from the cpu_vs_cuda cells, disagreements first: [{subject, library,
  worst, checks: {check: outcome}, max_abs_err, max_rel_err (largest over its checks, or null), cause, message}].
history: outcomes across library releases (conformance.report.history; the pinned release from these cells, earlier
  ones from reports/history): {library: {releases (oldest first), pinned, environments: [{name, version, cells,
  recorded, age, stale, suite_sha, torch}], rows: [{subject, transform, by_release: {release: {status ("passes",
  "fails" or "skip", known failures included), causes, n_fails, n_total}}, changed_in: [release]}], changes:
  [{subject, transform, from, to, before, after, kind ("fixed", "broken" or "changed")}]}}."""


def error_size(value: float | None) -> str:
    """An error size as both reports print it: three significant digits, empty when there is none."""
    return "" if value is None else f"{value:.3g}"
