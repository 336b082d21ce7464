"""Cell records in and out: one JSON object per line, one file per writer process, flushed per cell.

A killed run loses nothing already written; a truncated last line is reported by the reader and skipped.
Any number of files (workers, machines, devices, torch versions) are read together and merged.

The record's fields and their types: :mod:`conformance.records.schema`. Free text (message, example, known reason)
is capped at ``TEXT_CAP`` characters where it is recorded.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from .. import SUITE_ROOT
from .schema import VERSION, Record, invalid, upgrade

#: The longest free text a record keeps (a library's error message can be megabytes), and a reader keeps of a
#: record written elsewhere.
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
    """Appends records to one file, each line written out at once so a killed process loses nothing written."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "ab", buffering=0)

    def write(self, record: dict) -> None:
        """Append ``record`` as one line; where the write fails (a full disk) the file is cut back to where it was,
        so no torn line is left, and the OSError is raised."""
        line = (json.dumps(record, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
        size = os.fstat(self._file.fileno()).st_size
        try:
            view = memoryview(line)
            while view:
                view = view[self._file.write(view):]
        except OSError:
            try:
                os.ftruncate(self._file.fileno(), size)
            except OSError:
                pass  # the write's own error is the one to report
            raise

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def unwritable(directory: Path | str) -> str | None:
    """Why records cannot be written into ``directory`` (one line), or None. Probed by creating and removing a file
    in it or, where it does not exist yet, in the nearest existing directory above it (nothing is left behind)."""
    existing = Path(directory).absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        return f"cannot create a file in {existing}: {_reason(exc)}"
    return None


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

    Any line that is not a usable record (truncated, not UTF-8, not JSON, nested deeper than ``MAX_DEPTH``, an
    integer too long to convert, a foreign or future record, a field of the wrong type) is appended to ``problems``
    (with file, line and reason) and skipped; an unreadable or corrupt file is one problem. Never raises for what a
    file holds.
    """
    problems = problems if problems is not None else []
    for path in _expand(paths):
        try:
            handle = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")
        except OSError as exc:
            problems.append(Problem(str(path), 0, f"cannot read: {_reason(exc)}"))
            continue
        with handle:
            yield from _records_of(handle, path, problems)


#: The deepest nesting of arrays and objects a record line may have (a record's own is 3).
MAX_DEPTH = 16
#: A JSON escape of half a surrogate pair: alone, its string cannot be written out as UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _records_of(handle, path: Path, problems: list[Problem]) -> Iterator[dict]:
    number = 0
    try:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record, reason = parse_line(line)
            if reason:
                problems.append(Problem(str(path), number, reason))
                continue
            yield record
    except (EOFError, OSError, zlib.error) as exc:  # a truncated or corrupt .gz, a failing disk: keep what was read
        problems.append(Problem(str(path), number + 1, f"cannot read further: {_reason(exc)}"))


def parse_line(line: bytes) -> tuple[dict | None, str | None]:
    """One line of a records file as (record, None), or (None, why it is not a usable record)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start}); binary data?"
    try:
        record = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg}); truncated write?"
    except ValueError as exc:  # NaN/Infinity, or an integer too long to convert
        return None, f"not JSON ({str(exc).split(':')[0]})"
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _deeper_than(record, MAX_DEPTH):
        return None, f"nested deeper than {MAX_DEPTH} levels"
    if _SURROGATE_ESCAPE.search(text) and not _encodable(record):
        return None, "a string with a lone surrogate (not encodable as UTF-8)"
    record = upgrade(record)
    return record, invalid(record)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")


def _deeper_than(value: Any, limit: int) -> bool:
    pending = [(value, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, (dict, list)):
            if depth > limit:
                return True
            pending.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return False


def _encodable(value: Any) -> bool:
    pending = [value]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


def _reason(exc: BaseException) -> str:
    """An exception as one short line (an OSError by its strerror)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return (text[0][:200] if text else type(exc).__name__)


def record_files(path: Path | str) -> list[Path]:
    """The record files a results path stands for: itself, or every ``*.jsonl``/``*.jsonl.gz`` below a directory."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    return sorted([*path.rglob("*.jsonl"), *path.rglob("*.jsonl.gz")])


def _expand(paths: Iterable[Path | str]) -> Iterator[Path]:
    for path in paths:
        yield from record_files(path)


#: The suite's description, written beside the records of a run: the transforms in table order and one docstring per
#: transform and check, so the report orders and explains its columns from what was recorded, without the framework.
SUITE_FILE = "suite.json"
#: The suite file's own version (not the records')
SUITE_SCHEMA = 1


def write_suite_file(directory: Path, description: dict) -> None:
    """Write ``description`` ({"transforms": [{"id", "doc"}], "checks": {name: doc}}) beside a run's records."""
    from ..core.fileio import atomic_write

    atomic_write(Path(directory) / SUITE_FILE, json.dumps({"kind": "conformance.suite", "schema": SUITE_SCHEMA,
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
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
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
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
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
    version = _distribution_version(name)
    if version is None and _declared_distribution(name):
        version = _distribution_version(_declared_distribution(name))
    if version is None:
        version = getattr(sys.modules.get(name), "__version__", None)
    return version if isinstance(version, str) else None


@functools.lru_cache(maxsize=None)
def _declared_distribution(name: str) -> str | None:
    """The distribution a declared library is installed as, where it is not the library's name (quanto:
    optimum-quanto), or None."""
    from ..libraries import declared

    return next((lib.distribution for lib in declared() if lib.name == name and lib.distribution != name), None)


@functools.lru_cache(maxsize=None)
def _distribution_version(name: str) -> str | None:
    """The installed distribution's version (looked up once per process: a lookup scans sys.path)."""
    import importlib.metadata as md

    try:
        return md.version(name)
    except (md.PackageNotFoundError, ValueError):
        return None


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
