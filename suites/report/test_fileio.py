"""conformance.core.fileio: atomic writes, importable without the rest of the project (conformance.bench uses it)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from conformance.core import fileio
from conformance.core.fileio import atomic_write, atomic_write_many


def test_fileio_imports_nothing_of_the_project():
    tree = ast.parse(Path(fileio.__file__).read_text(encoding="utf-8"))
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert imported and not [m for m in imported if m.startswith("conformance") or m == ""], imported
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level], "relative import"


def test_a_failure_in_any_content_leaves_every_target_as_it_was(tmp_path):
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    atomic_write(first, "old a")
    atomic_write(second, "old b")

    def broken():
        yield "partial"
        raise RuntimeError("renderer failed")

    with pytest.raises(RuntimeError):
        atomic_write_many({first: "new a", second: broken()})
    assert first.read_text() == "old a" and second.read_text() == "old b"
    assert sorted(os.listdir(tmp_path)) == ["a.md", "b.md"]
    atomic_write_many({first: "new a", tmp_path / "sub" / "c.md": iter(["c", "c"])})
    assert first.read_text() == "new a" and (tmp_path / "sub" / "c.md").read_text() == "cc"
    assert oct(first.stat().st_mode & 0o777) == "0o644"
