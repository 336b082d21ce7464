"""The small examples of a session's rounds: drawn by the first round of each code, read by the rest.

Every round of one code draws the same small examples (hypothesis, derandomized, its pool of source constants
emptied: :func:`conformance.bench.cases.draw_small_example`), and drawing them was about a tenth of a round's
work outside the timing. The rounds of a session (``run``, ``gate``) share them through a file in the session's
temporary folder (``rounds.SHARED_EXAMPLES``), named by the identity of the code that drew them
(:func:`code_identity`), so that the tree's rounds and the baseline commit's never read each other's. A round reads
the examples it finds there and draws, and adds, the others. What is timed does not change: the same tensors bit for
bit (``suites/bench/test_examples.py``), grown and built as before, in a fresh process per round.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterable

import torch

from ..core.types import Example
from . import cases
from .ab import CODE_PATHS, code_root
from .cases import Case, Skip


def code_identity(root: Path | None = None) -> str:
    """A digest of the code a round runs (every file under ``root``'s ``CODE_PATHS``, byte for byte, with its path)
    and of the Python, torch and hypothesis it runs with: what a drawn example can depend on."""
    import hypothesis

    root = root or code_root()
    digest = hashlib.sha256(f"{sys.version}|{torch.__version__}|{hypothesis.__version__}".encode())
    for name in CODE_PATHS:
        top = root / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()
                                                  and "__pycache__" not in p.relative_to(root).parts)
        for path in files:
            digest.update(b"\0" + path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def _key(case: Case, device: str) -> tuple[str, object, object] | None:
    """The key of a case's small example, with its subject and spec; None when the case cannot run here (its build
    reports why) or has no benchmark size."""
    try:
        subject, spec = cases.runnable(case, device)
    except Skip:
        return None
    if cases.family_of(spec.id) is None:
        return None
    return f"{subject.id}|{spec.id}", subject, spec


def prepare(case_list: Iterable[Case], device: str, shared: Path | None = None,
            identity: str | None = None) -> dict[str, int]:
    """Give every case of ``case_list`` its small example before any is timed: read from ``shared`` (the session's
    folder) where an earlier round of the same code (``identity``, default :func:`code_identity`) left it, else
    drawn; the examples drawn here are added to that file. Returns how many were read and drawn. A draw that fails
    is left to the case's build, which reports it."""
    wanted = {}
    for case in case_list:
        found = _key(case, device)
        if found is not None:
            wanted.setdefault(found[0], found[1:])
    path = shared / f"examples-{identity or code_identity()}.pt" if shared is not None else None
    stored = read(path) if path is not None else {}
    counts = {"read": 0, "drawn": 0}
    for key, (subject, spec) in wanted.items():
        if key in stored:
            cases.keep_small_example(subject, spec, stored[key])
            counts["read"] += 1
            continue
        try:
            stored[key] = cases.small_example(subject, spec)
        except Exception:  # noqa: BLE001 - drawn again, and reported, by the case's build
            continue
        counts["drawn"] += 1
    if path is not None and counts["drawn"]:
        write(path, stored)
    return counts


def read(path: Path) -> dict[str, Example]:
    """The examples of a shared file; none when it is missing or unreadable (they are drawn again)."""
    try:
        data = torch.load(path, weights_only=True)
        return {key: Example(value["x"], dict(value["params"]), dict(value["hyper"])) for key, value in data.items()}
    except Exception:  # noqa: BLE001 - a missing, partial or foreign file costs a draw, nothing else
        return {}


def write(path: Path, examples: dict[str, Example]) -> None:
    """Replace the shared file at once (rounds running beside each other read it whole or not at all)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {key: {"x": ex.x, "params": dict(ex.params), "hyper": dict(ex.hyper)} for key, ex in examples.items()}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            torch.save(data, handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
