"""Writing files so that a reader never sees half of one. No project imports: anything may use it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable


def atomic_write(path: Path | str, content: str | Iterable[str]) -> None:
    """Write ``content`` to ``path`` through a temporary file in the same directory and ``os.replace``.

    Readers see the old file or the complete new one; on any error nothing is left behind.
    """
    atomic_write_many({path: content})


def atomic_write_many(files: dict[Path | str, str | Iterable[str]]) -> None:
    """Write every file to a temporary file first and replace the targets only when all were written: a failure
    while producing any content (``content`` may be a generator) leaves every target as it was."""
    written: list[tuple[str, Path]] = []
    try:
        for path, content in files.items():
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            written.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                for chunk in [content] if isinstance(content, str) else content:
                    handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; reports are meant to be read by others
    except BaseException:
        for tmp, _ in written:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        raise
    for tmp, path in written:
        os.replace(tmp, path)
