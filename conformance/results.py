"""Cell records in and out: one JSON object per line, one file per writer process, flushed per cell.

A killed run loses nothing already written; a truncated last line is reported by the reader and skipped.
Any number of files (workers, machines, devices, torch versions) are read together and merged.

Record schema (``"schema": 1``), every key always present:
    schema, kind ("cell"), run, cell (the stable id), subject, library, spec, transform, check, device, dtype,
    outcome (one of types.OUTCOMES), cause (str or null), message (str), max_abs_err, max_rel_err (float or
    null), atol, rtol (float or null), tie_excluded (int: elements excused by the tie rule), example (str or
    null: the minimal failing example), reproduce (str), known (null or {"reason", "link", "cause"}),
    duration_s (float), started (ISO-8601 UTC), env ({python, torch, platform, device_name, cuda, suite_sha,
    libraries: {dist: version}, hypothesis_profile, suite_time (ISO-8601 UTC of the suite's commit, or null),
    suite_version (the installed distribution's version)}); optional: library_version (the subject's library),
    extra (dict).
Free text (message, example, known reason) is capped at ``TEXT_CAP`` characters where it is recorded.
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

SCHEMA = 1
#: The longest free text a record keeps (a library's error message can be megabytes).
TEXT_CAP = 4000
REQUIRED = ("subject", "transform", "check", "device", "dtype", "outcome")
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


def capped(text: str | None, limit: int = TEXT_CAP) -> str | None:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters cut]"


def make_record(*, run: str, cell, subject, result: CellResult, reproduce: str, env: dict) -> dict:
    known = None if result.known is None else {k: capped(v) if isinstance(v, str) else v
                                                for k, v in result.known.items()}
    library = subject.library if subject is not None else "unknown"
    return {
        "schema": SCHEMA,
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
            reason = _invalid(record)
            if reason:
                problems.append(Problem(str(path), number, reason))
                continue
            yield record
    except (EOFError, OSError) as exc:  # a truncated or corrupt .gz: keep what was read
        problems.append(Problem(str(path), number + 1, f"cannot read further: {exc}"))


def _invalid(record: Any) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get("kind", "cell") != "cell":
        return f"foreign record kind {record.get('kind')!r}"
    if record.get("schema") != SCHEMA:
        return f"unknown schema {record.get('schema')!r} (expected {SCHEMA})"
    missing = [k for k in REQUIRED if not isinstance(record.get(k), str)]
    if missing:
        return f"missing or non-string field(s) {missing}"
    from .types import OUTCOMES

    if record["outcome"] not in OUTCOMES:
        return f"unknown outcome {record['outcome']!r}"
    return None


def _expand(paths: Iterable[Path | str]) -> Iterator[Path]:
    for path in paths:
        path = Path(path)
        if path.is_dir():
            yield from sorted([*path.rglob("*.jsonl"), *path.rglob("*.jsonl.gz")])
        else:
            yield path


def cell_key(record: dict) -> str:
    return "|".join(record[k] for k in ("subject", "transform", "check", "device", "dtype"))


#: The skip message of a CUDA cell on a machine without a GPU (see conformance.runner.skip_reason).
NO_DEVICE = "no CUDA device on this machine"


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
LIBRARIES = ("torch", "snntorch", "spikingjelly", "norse", "sinabs", "bitorch", "bitorch_engine", "brevitas", "opacus",
             "bdpy", "hypothesis", "triton")


def environment() -> dict:
    """Where this process runs: recorded into every cell so merged reports keep the provenance."""
    global _ENV_CACHE
    if _ENV_CACHE is None:
        import importlib.metadata as md

        import torch

        libraries = {}
        for dist in LIBRARIES:
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
            "suite_sha": _git(["rev-parse", "--short=12", "HEAD"], dirty=True),
            "suite_time": _git(["log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ"]),
            "suite_version": library_version("qsnn-conformance"),
            "libraries": libraries,
            "hypothesis_profile": os.environ.get("CONFORMANCE_PROFILE", "ci"),
        }
    return _ENV_CACHE


def _git(arguments: list[str], *, dirty: bool = False) -> str | None:
    """A fact about the suite's own git checkout (None where it is installed without one)."""
    root = Path(__file__).resolve().parent.parent
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
