"""Cell records in and out: one JSON object per line, one file per writer process, flushed per cell.

A killed run loses nothing already written; a truncated last line is reported by the reader and skipped.
Any number of files (workers, machines, devices, torch versions) are read together and merged.

The record's fields and their types: :mod:`conformance.records.schema`. Free text (message, example, known reason)
is capped at ``TEXT_CAP`` characters where it is recorded.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from .. import SUITE_ROOT
from .schema import VERSION, Record, invalid

#: The longest free text a record keeps (a library's error message can be megabytes).
TEXT_CAP = 4000
DEFAULT_DIR = Path("reports") / "results"


@dataclass
class CellResult:
    """What running one cell produced, before it is written out."""

    outcome: str
    cause: str | None = None
    message: str = ""
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    atol: float | None = None
    rtol: float | None = None
    tie_excluded: int = 0
    example: str | None = None
    known: dict | None = None
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    #: the check's further findings besides the first (``{"cause", "message"}``), e.g. what a transform that raised
    #: left in the module
    also: list[dict[str, str]] = field(default_factory=list)


def capped(text: str | None, limit: int = TEXT_CAP) -> str | None:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters cut]"


def make_record(*, run: str, cell, subject, result: CellResult, reproduce: str, env: dict) -> Record:
    known = None if result.known is None else {k: capped(v) if isinstance(v, str) else v
                                                for k, v in result.known.items()}
    library = subject.library if subject is not None else "unknown"
    return {
        "schema": VERSION,
        "kind": "cell",
        "run": run,
        "cell": cell.id,
        "subject": cell.subject,
        "library": library,
        "library_version": library_version(library),
        "spec": subject.spec if subject is not None else "unknown",
        "transform": cell.transform,
        "check": cell.check,
        "device": cell.device,
        "dtype": cell.dtype,
        "outcome": result.outcome,
        "cause": result.cause,
        "message": capped(result.message),
        "max_abs_err": _finite_or_none(result.max_abs_err),
        "max_rel_err": _finite_or_none(result.max_rel_err),
        "atol": result.atol,
        "rtol": result.rtol,
        "tie_excluded": result.tie_excluded,
        "example": capped(result.example),
        "reproduce": reproduce,
        "known": known,
        "duration_s": round(result.duration_s, 4),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "env": env,
        **({"extra": result.extra} if result.extra else {}),
        **({"also": [{"cause": f["cause"], "message": capped(f["message"])} for f in result.also]}
           if result.also else {}),
    }


def _finite_or_none(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    if value != value:  # NaN is not valid JSON
        return None
    if value in (float("inf"), float("-inf")):
        return 1e308 if value > 0 else -1e308
    return value


class RecordWriter:
    """Appends records to one file, flushing after each so a killed process loses nothing written."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8", buffering=1)

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


@dataclass(frozen=True)
class Problem:
    """A line the reader could not use, with where it came from."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def iter_records(paths: Iterable[Path | str], problems: list[Problem] | None = None) -> Iterator[dict]:
    """Every valid cell record in ``paths`` (files or directories searched for ``*.jsonl`` and ``*.jsonl.gz``, the
    form in which checked-in runs such as ``reports/cuda/`` are stored).

    Malformed, truncated or foreign lines are appended to ``problems`` (with file and line) and skipped.
    """
    problems = problems if problems is not None else []
    for path in _expand(paths):
        try:
            handle = gzip.open(path, "rt", encoding="utf-8", errors="replace") if path.suffix == ".gz" \
                else open(path, encoding="utf-8", errors="replace")
        except OSError as exc:
            problems.append(Problem(str(path), 0, f"cannot read: {exc}"))
            continue
        with handle:
            yield from _records_of(handle, path, problems)


def _records_of(handle, path: Path, problems: list[Problem]) -> Iterator[dict]:
    number = 0
    try:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(Problem(str(path), number, f"not JSON ({exc.msg}); truncated write?"))
                continue
            reason = invalid(record)
            if reason:
                problems.append(Problem(str(path), number, reason))
                continue
            yield record
    except (EOFError, OSError) as exc:  # a truncated or corrupt .gz: keep what was read
        problems.append(Problem(str(path), number + 1, f"cannot read further: {exc}"))


def _expand(paths: Iterable[Path | str]) -> Iterator[Path]:
    for path in paths:
        path = Path(path)
        if path.is_dir():
            yield from sorted([*path.rglob("*.jsonl"), *path.rglob("*.jsonl.gz")])
        else:
            yield path


#: The suite's description, written beside the records of a run: the transforms in table order and one docstring per
#: transform and check, so the report orders and explains its columns from what was recorded, without the framework.
SUITE_FILE = "suite.json"


def write_suite_file(directory: Path, description: dict) -> None:
    """Write ``description`` ({"transforms": [{"id", "doc"}], "checks": {name: doc}}) beside a run's records."""
    from ..core.fileio import atomic_write

    atomic_write(Path(directory) / SUITE_FILE, json.dumps({"kind": "conformance.suite", "schema": VERSION,
                                                         **description}, sort_keys=True) + "\n")


def _suite_files(paths: Iterable[Path | str]) -> Iterator[Path]:
    """Where the suite descriptions of the runs under ``paths`` would be (each may not exist)."""
    for path in map(Path, paths):
        if path.is_dir():
            yield path / SUITE_FILE
            yield from path.rglob(f"*/{SUITE_FILE}")
        else:
            yield path.parent / SUITE_FILE


def read_suite_files(paths: Iterable[Path | str]) -> dict:
    """The suite descriptions found under ``paths``, merged (the most recently written first): {"order":
    {transform: position}, "transforms": {transform: doc}, "checks": {check: doc}}; empty where none is found."""
    found = [c for c in _suite_files(paths) if c.is_file()]
    merged: dict = {"order": {}, "transforms": {}, "checks": {}}
    for candidate in sorted(set(found), key=lambda c: c.stat().st_mtime, reverse=True):
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
            transforms = [(str(t["id"]), str(t.get("doc") or "")) for t in data["transforms"]]
            checks = {str(k): str(v or "") for k, v in dict(data["checks"]).items()}
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a suite description: the columns fall back to names
        for name, doc in transforms:
            merged["order"].setdefault(name, len(merged["order"]))
            merged["transforms"].setdefault(name, doc)
        for name, doc in checks.items():
            merged["checks"].setdefault(name, doc)
    return merged


def missing_shards(paths: Iterable[Path | str]) -> list[str]:
    """The shards absent from sharded runs found under ``paths`` (each run's ``suite.json`` names its shard, "i/n",
    and environment): e.g. ["3/4 of cpu-torch2.13"] when shards 1, 2 and 4 of four are present."""
    seen: dict[tuple[str, int], set[int]] = {}
    for candidate in _suite_files(paths):
        try:
            shard = json.loads(candidate.read_text(encoding="utf-8"))["shard"]
            index, count = (int(v) for v in str(shard["part"]).split("/"))
            environment = str(shard["environment"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # no suite file, or a run that is not a shard
        seen.setdefault((environment, count), set()).add(index)
    return [f"{i}/{count} of {environment}" for (environment, count), present in sorted(seen.items())
            for i in range(1, count + 1) if i not in present]


def cell_key(record: dict) -> str:
    return "|".join(record[k] for k in ("subject", "transform", "check", "device", "dtype"))


#: The skip message of a CUDA cell on a machine without a GPU (see conformance.runner.skip_reason).
NO_DEVICE = "no CUDA device on this machine"
#: How the skip message of a cell inapplicable by design begins (the reason follows).
NOT_APPLICABLE = "not applicable: "


def _merge_rank(record: dict) -> tuple[bool, str]:
    # A CUDA cell skipped for want of a GPU says nothing about the cell: it never hides a record from a GPU run,
    # however much newer it is (a CPU run after the checked-in GPU run must not blank the CUDA columns).
    absent = record.get("outcome") == "skip" and record.get("message") == NO_DEVICE
    return (not absent, record.get("started", ""))


def latest_by_cell(records: Iterable[dict]) -> dict[str, dict]:
    """One record per cell coordinate: the most recently started wins (runs merged in any order), except that
    a CUDA cell skipped for want of a GPU never displaces a record of a run that had one."""
    chosen: dict[str, dict] = {}
    for record in records:
        key = cell_key(record)
        old = chosen.get(key)
        if old is None or _merge_rank(record) >= _merge_rank(old):
            chosen[key] = record
    return chosen


def library_version(name: str) -> str | None:
    """The installed version of the library a subject belongs to (its distribution, or the imported module's
    ``__version__`` for one that is on the path without metadata), or None."""
    import importlib.metadata as md

    try:
        return md.version(name)
    except (md.PackageNotFoundError, ValueError):
        pass
    version = getattr(sys.modules.get(name), "__version__", None)
    return version if isinstance(version, str) else None


_ENV_CACHE: dict | None = None
#: The suite's own tools whose versions every record names, besides the declared libraries.
TOOLS = ("torch", "hypothesis")


def environment() -> dict:
    """Where this process runs: recorded into every cell so merged reports keep the provenance."""
    global _ENV_CACHE
    if _ENV_CACHE is None:
        import importlib.metadata as md

        import torch

        from ..libraries import distributions

        libraries = {}
        for dist in (*TOOLS, *distributions()):
            try:
                libraries[dist] = md.version(dist)
            except md.PackageNotFoundError:
                pass
        cuda = torch.version.cuda if torch.cuda.is_available() else None
        _ENV_CACHE = {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "platform": f"{sys.platform}-{platform.machine()}",
            "cpu": platform.processor() or platform.machine(),
            "device_name": torch.cuda.get_device_name(0) if cuda else "cpu",
            "cuda": cuda,
            # a device machine's copy of the tree may carry stale git metadata: its run script names the commit
            "suite_sha": os.environ.get("CONFORMANCE_SUITE_SHA")
            or _git(["rev-parse", "--short=12", "HEAD"], dirty=True),
            "suite_time": os.environ.get("CONFORMANCE_SUITE_TIME")
            or _git(["log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ"]),
            "suite_version": library_version("qsnn-conformance"),
            "libraries": libraries,
            "hypothesis_profile": os.environ.get("CONFORMANCE_PROFILE", "ci"),
        }
    return _ENV_CACHE


def _git(arguments: list[str], *, dirty: bool = False) -> str | None:
    """A fact about the suite's own git checkout (None where it is installed without one)."""
    root = SUITE_ROOT
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", *arguments], cwd=root, capture_output=True, text=True, timeout=5,
                             env={**os.environ, "TZ": "UTC"})
        value = out.stdout.strip()
        if value and dirty and subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                               capture_output=True, text=True, timeout=5).stdout.strip():
            value += "-dirty"
    except (OSError, subprocess.TimeoutExpired):
        return None
    return value or None
