"""The history view: each library release's outcome per subject x transform, and the release where it changed.

The pinned release's cells are the matrix's own rows; earlier releases' come from their environments' records
(``reports/history/``, written by ``noxfile.py``), read apart from the matrix so that they never displace a cell of
the pinned release. A release's status of a cell is what its check found, whether or not a known failure excuses
it: ``passes`` (pass, xpass), ``fails`` (fail, xfail, crash, timeout) or ``skip``; a subject x transform fails in a
release when any of its checks (dtypes) fails there, and it changed when its status or its causes did.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable

from ..records.io import Problem, iter_records
from .data import Row, age_of, group, human_age, normalise

#: Where the history's environments keep their records (checked in, like reports/cuda).
HISTORY_DIR = Path("reports") / "history"
STATUS = {"pass": "passes", "xpass": "passes", "fail": "fails", "xfail": "fails", "crash": "fails",
          "timeout": "fails", "skip": "skip"}


def version_key(version: str) -> tuple:
    """Releases in order: 0.0.0.0.14 < 0.9.4 < 1.0.0 < 1.0.0.post1 (numbers compared as numbers)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"[.\-+]", version))


def load_history(paths: Iterable[Path | str], problems: list[Problem]) -> list[Row]:
    """The latest record of every cell of every library release under ``paths``."""
    latest: dict[tuple[str, str], Row] = {}
    for path in map(Path, paths):
        if not path.exists():
            continue
        for record in iter_records([path], problems):
            try:
                row = normalise(record)
            except Exception as exc:  # noqa: BLE001 - an unusable record is a problem to show, not a crash
                problems.append(Problem(str(path), 0, f"unusable record: {exc}"))
                continue
            key = (row["library_version"] or "", row["id"])
            if key not in latest or row["started"] >= latest[key]["started"]:
                latest[key] = row
    return list(latest.values())


def _summary(rows: list[Row]) -> dict:
    statuses = [STATUS.get(r["outcome"], "fails") for r in rows]
    status = "fails" if "fails" in statuses else "passes" if "passes" in statuses else "skip"
    failing = [r for r, s in zip(rows, statuses) if s == "fails"]
    return {"status": status, "causes": sorted({r["cause"] or "unknown" for r in failing}),
            "n_fails": len(failing), "n_total": sum(s != "skip" for s in statuses)}


def build_history(matrix_rows: list[Row], history_rows: list[Row], now: float) -> dict:
    """matrix.json's ``history``: {library: {releases, pinned, environments, rows, changes}} for every library with
    records of a release other than its pinned one (empty when there are none). A release whose every cell failed
    to build its subject is listed (its environment's ``unusable``) but not compared cell by cell."""
    by_library: dict[str, dict[str, dict[str, Row]]] = defaultdict(lambda: defaultdict(dict))
    for row in history_rows:
        if row["library_version"]:  # without one the library was not installed: skips, of no release
            by_library[row["library"]][row["library_version"]][row["id"]] = row
    view = {}
    for library, releases in sorted(by_library.items()):
        # the devices the earlier releases ran on (a CPU machine's no-device CUDA skips are no evidence)
        devices = {r["device"] for cells in releases.values() for r in cells.values() if r["outcome"] != "skip"}
        pinned = {r["id"]: r for r in matrix_rows if r["library"] == library and r["device"] in devices}
        pinned_versions = sorted({r["library_version"] or "unknown" for r in pinned.values()})
        environments = [_environment(library, version, cells, now) for version, cells in releases.items()]
        for environment in environments:
            if environment["unusable"]:  # listed with its one cause, not compared cell by cell
                del releases[environment["version"]]
        for row in pinned.values():
            releases.setdefault(row["library_version"] or "unknown", {})[row["id"]] = row
        ordered = sorted(releases, key=version_key)
        if len(ordered) < 2 and not any(e["unusable"] for e in environments):
            continue  # nothing but the pinned release
        rows, changes = [], []
        grouped = {version: group(releases[version].values(), "subject", "transform") for version in ordered}
        for subject, transform in sorted({pair for pairs in grouped.values() for pair in pairs}):
            by_release = {version: _summary(grouped[version][(subject, transform)]) for version in ordered
                          if (subject, transform) in grouped[version]}
            seen = list(by_release)  # in release order
            changed_in = []
            for old, new in zip(seen, seen[1:]):
                before, after = by_release[old], by_release[new]
                if (before["status"], before["causes"]) != (after["status"], after["causes"]):
                    changed_in.append(new)
                    changes.append({"subject": subject, "transform": transform, "from": old, "to": new,
                                    "before": before, "after": after, "kind": _kind(before["status"], after["status"])})
            rows.append({"subject": subject, "transform": transform, "by_release": by_release,
                         "changed_in": changed_in})
        view[library] = {"releases": ordered, "pinned": pinned_versions, "environments": environments,
                         "rows": rows, "changes": changes}
    return view


def _kind(before: str, after: str) -> str:
    if before == "fails" and after == "passes":
        return "fixed"
    if before == "passes" and after == "fails":
        return "broken"
    return "changed"


def _unusable(cells: dict[str, Row]) -> dict | None:
    """{cause, message} when every cell that ran in a release failed to build its subject with one error (the
    release cannot be used here at all, e.g. it does not import), else None."""
    ran = [r for r in cells.values() if r["outcome"] != "skip"]
    causes = {r["cause"] for r in ran}
    if not ran or causes != {"build-failed"} or any(STATUS.get(r["outcome"]) != "fails" for r in ran):
        return None
    messages = sorted({next((line for line in r["message"].splitlines() if line.startswith("[build]")),
                            r["message"].split("\n", 1)[0])[:300] for r in ran})
    return {"cause": "build-failed", "message": messages[0] if len(messages) == 1 else
            f"{messages[0]} (and {len(messages) - 1} other message(s))"}


def _environment(library: str, version: str, cells: dict[str, Row], now: float) -> dict:
    age, stale = age_of(cells.values(), now)
    shas = sorted({str(r["env"].get("suite_sha")) for r in cells.values()})
    return {"name": f"{library}-{version}", "version": version, "cells": len(cells), "unusable": _unusable(cells),
            "recorded": min((r["started"] for r in cells.values()), default=""), "age": human_age(age),
            "stale": stale, "suite_sha": ", ".join(shas),
            "torch": ", ".join(sorted({str(r["env"].get("torch")) for r in cells.values()}))}


# ------------------------------------------------------------------------------------- shown by both reports
#: the outcome whose symbol shows a status
STATUS_SYMBOL = {"passes": "pass", "fails": "fail", "skip": "skip"}


def history_status(summary: dict | None, *, code: Callable[[str], str], text: Callable[[str], str],
                   symbols: dict[str, str]) -> str:
    """One release's status of a subject x transform, as both reports print it (escaped with ``code``/``text``;
    ``symbols``: the reports' outcome symbols)."""
    if summary is None:
        return "not recorded"
    shown = f"{symbols[STATUS_SYMBOL[summary['status']]]} {text(summary['status'])}"
    if summary["status"] == "fails":
        shown += f" {summary['n_fails']}/{summary['n_total']} ({', '.join(code(c) for c in summary['causes'])})"
    return shown


def history_counts(library: dict) -> str:
    kinds = [change["kind"] for change in library["changes"]]
    changed = sum(bool(row["changed_in"]) for row in library["rows"])
    return (f"{changed} of {len(library['rows'])} subject × transform cells changed between releases "
            f"({kinds.count('fixed')} fixed, {kinds.count('broken')} broken, {kinds.count('changed')} changed "
            "otherwise)")


def environment_line(environment: dict, *, code: Callable[[str], str], text: Callable[[str], str],
                     age: bool = True) -> str:
    """One recorded environment, as both reports and the library pages print it (escaped with ``code``/``text``;
    without its age where the text is kept, as the library pages are)."""
    when = f" ({text(environment['age'])}{', stale' if environment['stale'] else ''})" if age else ""
    line = (f"{text(environment['version'])}: {environment['cells']} cells recorded {text(environment['recorded'])}"
            f"{when} by suite {code(environment['suite_sha'])}, torch {text(environment['torch'])}")
    if environment["unusable"]:
        line += (f"; unusable here, every cell failed to build its subject ({code(environment['unusable']['cause'])}):"
                 f" {text(environment['unusable']['message'])}")
    return line
