"""Known failures are strict in every repository that uses the plugin, not only in this suite's matrix: an entry
that covers no collected cell, or names no reproducer that exists, is an error of the session (``xpass``, an entry
that no longer fails, is the cell's own failure: conformance.runner).

A partial run (``-k``, ``-m``, ``--shard``, ``--resume``, test ids on the command line, or
``--conformance-partial``) collects only some cells of a subject: there an entry matching none of them is expected,
and only the reproducers are checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from . import SUITE_ROOT, registry
from .core.types import Cell, Known


def problems(cells: Iterable[Cell], *, rootpath: Path, partial: bool) -> list[str]:
    """One line per known-failure entry of the collected subjects that is stale or lacks its reproducer."""
    cells = list(cells)
    collected = {cell.transform for cell in cells}
    # a transform's own entries are stale only where that transform ran (a library's tests choose their columns)
    stale = [(owner, entry) for owner, entry in registry.unmatched_known(cells)
             if not owner.startswith("transform ") or owner.split(" ", 1)[1] in collected]
    found = [] if partial else [f"{owner}: {_describe(entry)} matches no collected cell (stale: remove it, or run "
                                "with --conformance-partial)" for owner, entry in stale]
    seen: set[tuple[str, Known]] = set()
    for sid in dict.fromkeys(cell.subject for cell in cells):
        subject = registry.subjects()[sid]
        # a subject's own entries name scripts of the repository that declares it; a transform's, of this suite
        owned = [(f"subject {sid}", entry, _root_of(sid, rootpath)) for entry in subject.known]
        # a transform's entries name this suite's scripts: checked in its checkout, where that transform ran
        for transform in registry.transforms().values() if (SUITE_ROOT / "reproducers").is_dir() else ():
            extra = transform.known(subject, registry.specs()[subject.spec]) \
                if transform.known and transform.id in collected else ()
            owned += [(f"transform {transform.id}", entry, SUITE_ROOT) for entry in extra]
        for owner, entry, root in owned:
            if (owner, entry) in seen or not registry.for_this_release(entry, subject):
                continue
            seen.add((owner, entry))
            if not entry.reproducer:
                found.append(f"{owner}: {_describe(entry)} names no reproducer (a standalone script that fails "
                             "while the failure is there)")
            elif not (root / entry.reproducer).is_file():
                found.append(f"{owner}: {_describe(entry)}: reproducer {entry.reproducer!r} is not a file under "
                             f"{root}")
    return found


def _root_of(subject_id: str, rootpath: Path) -> Path:
    """Where a subject's reproducer paths start: this suite's root for its own subjects, else the session's root."""
    return SUITE_ROOT if registry.declared_in_suite(subject_id) else rootpath


def _describe(entry: Known) -> str:
    return f"Known(transform={entry.transform!r}, check={entry.check!r}, cause={entry.cause!r})"
