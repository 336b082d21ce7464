"""Writing files so that a reader never sees half of one. No project imports: anything may use it."""

from __future__ import annotations

import errno
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
    while producing or writing any content (``content`` may be a generator; a full disk) leaves every target as it
    was, and no temporary file is left behind, whatever fails."""
    written: list[tuple[str | None, Path]] = []
    made: list[Path] = []  # directories this call created, removed again on failure
    try:
        for target in map(Path, files):
            if target.is_dir():  # found before any target is replaced
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
        for path, content in files.items():
            path = Path(path)
            missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            made += missing
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            written.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                for chunk in [content] if isinstance(content, str) else content:
                    handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; reports are meant to be read by others
        for number, (tmp, path) in enumerate(written):
            os.replace(tmp, path)  # fails where the target cannot be replaced (a directory, no permission)
            written[number] = (None, path)
    except BaseException:
        _remove([tmp for tmp, _ in written if tmp is not None], made)
        raise


def _remove(temporaries: list[str], directories: list[Path]) -> None:
    """Undo a failed write: its temporary files, then the directories it created (deepest first)."""
    for tmp in temporaries:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    for directory in sorted(set(directories), key=lambda d: len(d.parts), reverse=True):
        try:
            directory.rmdir()
        except OSError:  # not empty: something else wrote there meanwhile
            pass
