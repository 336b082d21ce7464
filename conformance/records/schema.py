"""The cell record: one JSON object per line, the only thing the report and the expectations read. This module is
its one description, used by the writer (``io.make_record``), the reader's validator (``invalid``) and the report.

Version 2: every field of ``Record`` is written, ``extra`` and ``also`` only when not empty. Version 1 was the same
record before those fields were all there (``library_version``, ``extra``, ``also`` and ``env``'s ``suite_time`` and
``suite_version`` came in under it): ``upgrade`` reads it as version 2, filling what it lacks with None. Any other
version is refused.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

VERSION = 2
#: The versions ``upgrade`` reads.
READABLE = (1, 2)
OUTCOMES = ("pass", "fail", "xfail", "xpass", "skip", "crash", "timeout")


class Environment(TypedDict, total=False):
    """Where the record was made: merged reports keep the provenance of every cell."""

    python: str
    torch: str
    platform: str
    cpu: str
    device_name: str  # "cpu" on a machine without CUDA
    cuda: str | None  # the CUDA version torch was built with, where a GPU is present
    suite_sha: str | None  # the suite's git commit (with "-dirty" for local changes)
    suite_time: str | None  # ISO-8601 UTC commit time: which of two suite versions is newer
    suite_version: str | None  # the installed distribution's version
    libraries: dict[str, str]  # distribution -> version of every library the suite can test
    hypothesis_profile: str


class KnownRecord(TypedDict):
    """The known failure a cell matched (conformance.core.types.Known, as recorded)."""

    reason: str
    link: str
    cause: str | None
    reproducer: NotRequired[str]  # path from the suite's root of the standalone script that shows it


class Also(TypedDict):
    """One further finding of a cell (its cause and message), beside the one that decided its outcome."""

    cause: str
    message: str | None


class Record(TypedDict):
    schema: int  # VERSION
    kind: str  # "cell"
    run: str
    cell: str  # the stable id, "subject|transform|check|device|dtype"
    subject: str
    library: str
    library_version: str | None
    spec: str
    transform: str
    check: str
    device: str
    dtype: str
    outcome: str  # one of OUTCOMES
    cause: str | None  # from conformance.core.causes
    message: str
    max_abs_err: float | None
    max_rel_err: float | None
    atol: float | None
    rtol: float | None
    tie_excluded: int  # output elements excused by the tie rule
    example: str | None  # the minimal failing example
    reproduce: str  # the command that runs this cell alone
    known: KnownRecord | None
    duration_s: float
    started: str  # ISO-8601 UTC
    env: Environment
    extra: NotRequired[dict[str, Any]]  # what a transform adds (e.g. graph breaks); written only when not empty
    also: NotRequired[list[Also]]  # further findings of the same cell besides ``cause``; only when not empty


#: The coordinates and verdict: a record without any of them as a string is not a cell record.
REQUIRED = ("subject", "transform", "check", "device", "dtype", "outcome")
_NUMBER = (int, float)
#: Optional fields and the types they may hold when present (None allowed for each).
_TYPES: dict[str, tuple[type, ...]] = {
    "run": (str,), "cell": (str,), "library": (str,), "library_version": (str,), "spec": (str,),
    "cause": (str,), "message": (str,), "example": (str,), "reproduce": (str,), "started": (str,),
    "max_abs_err": _NUMBER, "max_rel_err": _NUMBER, "atol": _NUMBER, "rtol": _NUMBER, "duration_s": _NUMBER,
    "tie_excluded": (int,), "known": (dict,), "env": (dict,), "extra": (dict,), "also": (list,),
}
#: Numbers beyond this are no measurement (a float overflows, a report cannot print them): the record is broken.
LARGEST = 1e308
_NUMERIC = [k for k, kinds in _TYPES.items() if kinds in (_NUMBER, (int,))]


def upgrade(record: Any) -> Any:
    """``record`` as this version writes it, where it is of a version ``READABLE`` lists (a copy; anything else is
    returned as it is, for ``invalid`` to say what is wrong)."""
    if not isinstance(record, dict) or record.get("schema") != 1:
        return record
    upgraded = {**record, "schema": VERSION, "library_version": record.get("library_version")}
    if isinstance(record.get("env"), dict):
        upgraded["env"] = {"suite_time": None, "suite_version": None, **record["env"]}
    return upgraded


def invalid(record: Any) -> str | None:
    """Why ``record`` is not a usable cell record of this version (one line), or None."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get("kind", "cell") != "cell":
        return f"foreign record kind {record.get('kind')!r}"
    if record.get("schema") != VERSION:
        return f"unknown schema {record.get('schema')!r} (this version reads {' and '.join(map(str, READABLE))})"
    missing = [k for k in REQUIRED if not isinstance(record.get(k), str)]
    if missing:
        return f"missing or non-string field(s) {missing}"
    if record["outcome"] not in OUTCOMES:
        return f"unknown outcome {record['outcome']!r}"
    wrong = [k for k, kinds in _TYPES.items()
             if record.get(k) is not None and (not isinstance(record[k], kinds) or isinstance(record[k], bool))]
    if wrong:
        return f"field(s) of the wrong type: {wrong}"
    huge = [k for k in _NUMERIC if not -LARGEST <= (record.get(k) or 0) <= LARGEST]
    if huge:
        return f"field(s) not a finite number: {huge}"
    if any(not isinstance(finding, dict) for finding in record.get("also") or ()):
        return "field 'also' is not a list of objects"
    return None

