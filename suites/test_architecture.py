"""The layout's promises, tested: no import circle (imports inside functions count), dependencies point down
(qsnn_reference/ imports torch only; the records and the report do not import the framework's heart), and a new library,
transform or check is one module plus the expectations of its cells.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conformance", "qsnn_reference", "qsnn_kernels")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every project module ``name`` imports, at module level or inside a function, resolved to the module (a
    ``from package import name`` that names a submodule counts as importing that submodule)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


#: Modules that import every module of a package by discovery (pkgutil + importlib, which ``ast`` cannot see).
DISCOVERS = {"conformance.transforms": ("conformance.transforms.",), "conformance.checks": ("conformance.checks.",),
             "conformance.registry": ("conformance.subjects.",),
             "conformance.libraries": ("conformance.subjects.", "conformance.transforms.")}


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    for name, prefixes in DISCOVERS.items():
        graph[name] |= {m for m in known if m.startswith(prefixes)}
    return graph


def test_the_discovery_edges_name_modules_that_discover():
    """DISCOVERS must stay true: each of those modules imports its packages' modules with importlib."""
    for name in DISCOVERS:
        source = modules()[name].read_text(encoding="utf-8")
        assert "pkgutil.iter_modules" in source and "importlib.import_module" in source, name


def test_no_import_circle_not_even_inside_functions():
    found = cycles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_sees_a_circle_through_a_function_level_import(tmp_path):
    """The test above can fail: two modules that import each other, one of them inside a function."""
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n")
    known = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    assert cycles(graph) == [["a", "b"]]


def test_dependencies_point_down():
    graph = import_graph()
    for name, targets in graph.items():
        if name.startswith("qsnn_reference"):
            assert all(t.startswith("qsnn_reference") for t in targets), (name, targets)
        if name.startswith(("conformance.core", "conformance.records")):
            above = [t for t in targets if t.startswith(("conformance.checks", "conformance.transforms",
                                                         "conformance.registry", "conformance.runner",
                                                         "conformance.subjects", "conformance.report",
                                                         "conformance.plugin", "conformance.bench"))]
            assert not above, (name, above)


# ----------------------------------------------------------------------------------------- the three recipes
TOY_LIBRARY = '''\
"""toylib: a sign function with a straight-through gradient, as a library would ship it."""

import torch

from ..core.types import Library, Subject
from .reference import SpecModule

LIBRARY = Library("toylib", "toylib", "0.1")


def build(example):
    from qsnn_reference import quant

    return SpecModule(quant.sign_ste, {}, example.hyper)


def subjects():
    yield Subject(id="toylib.Sign", spec="quant.sign_ste", build=build, library=LIBRARY.name,
                  fixed={"zero_value": 1.0})
'''

TOY_TRANSFORM = '''\
"""A toy transform: the module called through a lambda wrapper."""

from .harness import FORWARD_GRAD, Context, Transform, TransformRun, build, eager, run_forward_backward

ORDER = 95


def wrapped(ctx: Context) -> TransformRun:
    """The module called through a plain Python wrapper computes what the module computes."""
    module = build(ctx)
    result = run_forward_backward(ctx, lambda x: module(x), module, name="wrapped")
    result.against = eager(ctx)
    return result


TRANSFORMS = (Transform("wrapped", wrapped, FORWARD_GRAD),)
'''

TOY_CHECK = '''\
"""A toy check: the output is finite."""

import torch

from ..core.causes import CheckFailed
from .harness import Check


def check_output_finite(ctx, out, truth, transform: str) -> int:
    """Every output element is finite."""
    if out.y is not None and out.y.is_floating_point() and not torch.isfinite(out.y).all():
        raise CheckFailed("forward-mismatch", "non-finite output")
    return 0


CHECKS = (Check("output_finite", check_output_finite, applies_to=("eager", "wrapped")),)
'''


def test_a_library_a_transform_and_a_check_are_one_module_each(tmp_path):
    """The CONTRIBUTING recipes, followed on a copy of the suite: each adds one file, and the registry, the cells,
    the set-up's library list and a run of the new cells pick them up with no other file touched."""
    copy = tmp_path / "suite"

    def not_the_suite(folder: str, names: list[str]) -> set[str]:
        """Environments, caches and records (.venv, .nox, .cache, ... at the top: gigabytes), reports, docs."""
        top = Path(folder) == ROOT
        return {n for n in names if n == "__pycache__" or top and (n in ("reports", "docs") or n.startswith(".")
                                                                     and n not in (".ci", ".github", ".gitignore"))}

    shutil.copytree(ROOT, copy, ignore=not_the_suite)
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    (copy / "conformance" / "subjects" / "toylib.py").write_text(TOY_LIBRARY)
    (copy / "conformance" / "transforms" / "wrapped.py").write_text(TOY_TRANSFORM)
    (copy / "conformance" / "checks" / "finite.py").write_text(TOY_CHECK)
    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    touched = sorted(str(p) for p in set(after) | set(before) if before.get(p) != after.get(p))
    assert touched == ["conformance/checks/finite.py", "conformance/subjects/toylib.py",
                       "conformance/transforms/wrapped.py"]
    probe = textwrap.dedent("""
        from conformance import registry, libraries
        from conformance.core.types import Cell
        from conformance.runner import run_cell
        cells = {c.id for c in registry.cells(["toylib.Sign"], devices=["cpu"])}
        assert "toylib.Sign|wrapped|preserves_forward|cpu|float32" in cells, sorted(cells)
        assert "toylib.Sign|eager|output_finite|cpu|float32" in cells
        assert "toylib.Sign|wrapped|output_finite|cpu|float32" in cells
        assert "toylib==0.1" in [lib.requirement for lib in libraries.declared()]
        for cell in ("toylib.Sign|wrapped|preserves_grad|cpu|float32", "toylib.Sign|eager|output_finite|cpu|float32",
                     "toylib.Sign|eager|forward_matches_spec|cpu|float32"):
            result = run_cell(registry.parse_cell_id(cell))
            assert result.outcome == "pass", (cell, result.outcome, result.message)
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE_", "PYTEST_XDIST"))}
    done = subprocess.run([sys.executable, "-c", probe], cwd=copy, capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": str(copy)})
    assert done.stdout.strip().endswith("ok"), done.stdout[-2000:] + done.stderr[-3000:]


def test_the_report_the_expectations_and_the_plugin_load_without_torch():
    """Rendering records, checking expectations and a pytest session without cells never import torch (the report
    renders merged CI artifacts anywhere; a plugin loaded by every session stays light)."""
    probe = ("import sys; import conformance.report.cli, conformance.expectations, conformance.report.libdocs, "
             "conformance.plugin; print(sorted(m for m in ('torch', 'hypothesis', 'numpy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
