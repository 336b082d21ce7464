"""What the kit ships and what it asks of a library that adopts it: distinctive top-level names, a wheel with the
kit and nothing else, minimal runtime dependencies (the rest behind extras), pytest 9's node ids under
``--dist loadgroup``, one output directory, and reproduce commands that work from any directory of the repo."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from functools import lru_cache
from pathlib import Path

import pytest

from conformance import libraries
from conformance.core.extras import EXTRA_OF_MODULE
from conformance.records.io import DEFAULT_DIR, iter_records

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DISTRIBUTION = PYPROJECT["project"]["name"]
#: Top-level names no distribution should ship: generic words that other projects ship or import.
NEVER_SHIPPED = ("kernels", "reference", "tests", "suites", "scripts", "experiments", "examples", "utils", "common")
#: What a user's environment gets at its top level from the wheel.
SHIPPED = {"conformance", "qsnn_reference", "qsnn_kernels"}


def normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def requirement_name(requirement: str) -> str:
    return normalized(re.match(r"[A-Za-z0-9_.-]+", requirement).group(0))


# ------------------------------------------------------------------------------------------------ the wheel
@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from a clone: the files git tracks or would track (ignored outputs left out)."""
    source, out = tmp_path_factory.mktemp("clone"), tmp_path_factory.mktemp("wheel")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True, timeout=60).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(out), str(source)], capture_output=True, text=True, timeout=180)
    assert built.returncode == 0, built.stderr[-2000:]
    return next(out.glob("*.whl"))


def top_level_names(wheel_path: Path) -> set[str]:
    """The import names a wheel puts at the top of site-packages (its dist-info and data directories aside)."""
    with zipfile.ZipFile(wheel_path) as archive:
        firsts = {name.split("/")[0] for name in archive.namelist()}
    return {first.removesuffix(".py") for first in firsts if not first.endswith((".dist-info", ".data"))}


@lru_cache(maxsize=None)
def installed_library_sources() -> tuple[tuple[str, Path], ...]:
    """(distribution, .py file) of every top-level package of the libraries the suite installs and of the
    dependencies they are declared with (conformance.libraries)."""
    wanted = set()
    for library in libraries.declared():
        wanted |= {normalized(library.distribution), *map(requirement_name, library.dependencies)}
    files = []
    for name, distributions in importlib.metadata.packages_distributions().items():
        owners = {normalized(d) for d in distributions} & wanted
        spec = importlib.util.find_spec(name) if owners and name.isidentifier() else None
        if spec is None:
            continue
        roots = list(spec.submodule_search_locations or ([spec.origin] if spec.origin else []))
        for root in map(Path, roots):
            found = root.rglob("*.py") if root.is_dir() else [root] if root.suffix == ".py" else []
            files += [(min(owners), path) for path in found]
    return tuple(files)


def libraries_importing(names: set[str]) -> dict[str, str]:
    """name -> the first installed library file that imports it at the top level (``import X`` / ``from X``)."""
    pattern = re.compile(rb"^\s*(?:import|from)\s+(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b",
                         re.MULTILINE)
    found: dict[str, str] = {}
    for distribution, path in installed_library_sources():
        text = path.read_bytes()
        if not any(name.encode() in text for name in names):
            continue  # cheap: most files name none of them
        for match in pattern.finditer(text):
            found.setdefault(match.group(1).decode(), f"{distribution} ({path})")
    return found


def naming_problems(names: set[str]) -> list[str]:
    """Why shipping these top-level names would break someone's environment (empty: they are distinctive)."""
    generic = sorted(names & set(NEVER_SHIPPED))
    problems = [f"{name!r} is a generic name no distribution should ship" for name in generic]
    others = importlib.metadata.packages_distributions()
    for name in sorted(names):
        foreign = sorted({d for d in others.get(name, ()) if normalized(d) != normalized(DISTRIBUTION)})
        if foreign:
            problems.append(f"{name!r} is also provided by {', '.join(foreign)}")
    problems += [f"{name!r} is imported by {where}" for name, where in sorted(libraries_importing(names).items())]
    return problems


def test_the_wheel_ships_the_kit_and_nothing_else(wheel):
    assert top_level_names(wheel) == SHIPPED
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert not [n for n in names if re.search(r"(^|/)(experiments|scripts|suites|reports|docs|examples)/", n)]
    assert "[pytest11]\nconformance.plugin = conformance.plugin" in entry_points


def test_every_shipped_name_is_distinctive(wheel):
    assert naming_problems(top_level_names(wheel)) == []


def test_the_old_layout_is_refused(tmp_path):
    """A wheel with the top-level packages this project shipped before (kernels, reference) fails the naming check."""
    old = tmp_path / "qsnn_conformance-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(old, "w") as archive:
        for name in ("conformance/__init__.py", "kernels/__init__.py", "reference/__init__.py",
                     "qsnn_conformance-0.0.1.dist-info/METADATA"):
            archive.writestr(name, "")
    problems = naming_problems(top_level_names(old))
    assert any(p.startswith("'kernels' is a generic name") for p in problems), problems
    assert any(p.startswith("'reference' is a generic name") for p in problems), problems


def test_a_name_another_distribution_provides_or_a_library_imports_is_refused():
    """The two other rules catch real names: hypothesis is another distribution's, torch is what the libraries
    under test import."""
    assert "'hypothesis' is also provided by hypothesis" in naming_problems({"hypothesis"})
    assert "torch" in libraries_importing({"torch", "qsnn_kernels"})
    assert "qsnn_kernels" not in libraries_importing({"torch", "qsnn_kernels"})


# ------------------------------------------------------------------------------------------ dependencies
def distributions_closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install, their requirements included (extras' requirements left out)."""
    seen, todo = set(), [requirement_name(r) for r in requirements]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            needed = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [requirement_name(r) for r in needed if "extra ==" not in r.replace('"', "").replace("'", "")]
    return seen


#: Modules that stand for a missing optional tool in the import test below.
BLOCKER = textwrap.dedent("""
    import importlib.abc, json, sys
    class Missing(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked")
    BLOCKED = set(json.loads(sys.argv[1]))
    sys.meta_path.insert(0, Missing())
""")


def test_the_kit_runs_on_its_runtime_dependencies_alone():
    """`import conformance`, its pytest plugin, conformance.api and the subjects load with every module outside the
    declared runtime dependencies (and what they require) blocked, and each declared dependency is used."""
    declared = PYPROJECT["project"]["dependencies"]
    allowed = distributions_closure(declared) | {normalized(DISTRIBUTION)}
    owners = importlib.metadata.packages_distributions()
    blocked = sorted({name for name, ds in owners.items() if not {normalized(d) for d in ds} & allowed}
                     - set(sys.stdlib_module_names))
    code = BLOCKER + textwrap.dedent("""
        import conformance, conformance.plugin, conformance.api, conformance.cell
        import conformance.report.markdown, conformance.expectations, conformance.bench.gate
        from conformance import registry
        registry.subjects()
        print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
    """)
    done = subprocess.run([sys.executable, "-c", code, json.dumps(blocked)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert set(EXTRA_OF_MODULE) <= set(blocked)
    loaded = {normalized(d) for name in json.loads(done.stdout) for d in owners.get(name, ())}
    assert {requirement_name(r) for r in declared} <= loaded


def test_each_optional_module_is_behind_the_extra_that_names_it():
    extras = {name: {requirement_name(r) for r in requirements}
              for name, requirements in PYPROJECT["project"]["optional-dependencies"].items()}
    owners = importlib.metadata.packages_distributions()
    for module, extra in EXTRA_OF_MODULE.items():
        assert {normalized(d) for d in owners.get(module, ())} & extras[extra], (module, extra)
    assert set(EXTRA_OF_MODULE.values()) == set(extras) - {"all"}
    assert PYPROJECT["project"]["optional-dependencies"]["all"] == [
        f"{DISTRIBUTION}[{','.join(name for name in extras if name != 'all')}]"]


def test_a_missing_optional_tool_is_one_line_naming_its_extra():
    code = BLOCKER + "from conformance.core.extras import tabulate\ntabulate([[1]])\n"
    done = subprocess.run([sys.executable, "-c", code, json.dumps(["tabulate"])], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "conformance: tabulate is not installed; install it with pip install 'qsnn-conformance[report]'"]


def test_the_suite_setup_installs_the_extras_its_own_tools_use():
    """scripts/setup.sh installs every extra except those whose packages all come pinned from install-libraries.sh
    (the libraries' declarations)."""
    pinned = {normalized(d) for d in libraries.distributions()}
    extras = PYPROJECT["project"]["optional-dependencies"]
    needed = {name for name, rs in extras.items() if name != "all" and not {requirement_name(r) for r in rs} <= pinned}
    installed = re.search(r'-c constraints\.txt -e "\.\[([a-z,]+)\]"', (ROOT / "scripts" / "setup.sh").read_text())
    assert installed and set(installed.group(1).split(",")) == needed


# --------------------------------------------------------------------------------------- pytest 9 and xdist
class StructuredId:
    """pytest 9.2's NodeId in miniature: the item's node id is derived from it."""

    def __init__(self, text: str):
        self.text = text

    @classmethod
    def parse(cls, text: str) -> StructuredId:
        return cls(text)

    def __str__(self) -> str:
        return self.text


class Pytest92Item:
    """An item as pytest 9.2 keeps it: assigning ``_nodeid`` (what xdist 3.8 does) changes nothing."""

    def __init__(self, nodeid: str, groups: list[str]):
        self._id = StructuredId(nodeid)
        self.marks = [pytest.mark.xdist_group(g).mark for g in groups]

    @property
    def nodeid(self) -> str:
        return str(self._id)

    def iter_markers(self, name: str):
        return (mark for mark in self.marks if mark.name == name)


def test_xdist_groups_are_tagged_where_pytest_9_2_keeps_node_ids():
    from conformance import xdist_groups

    tagged, plain = Pytest92Item("t.py::test[a]", ["s|eager", "s|eager"]), Pytest92Item("t.py::test[b]", [])
    tagged._nodeid = "t.py::test[a]@s|eager"  # what xdist assigns, lost on pytest 9.2
    xdist_groups.pytest_collection_modifyitems(None, [tagged, plain])
    assert (tagged.nodeid, plain.nodeid) == ("t.py::test[a]@s|eager", "t.py::test[b]")
    xdist_groups.pytest_collection_modifyitems(None, [tagged])  # already tagged (pytest 8, or xdist fixed): kept
    assert tagged.nodeid == "t.py::test[a]@s|eager"


def test_loadgroup_keeps_each_group_on_one_worker(tmp_path):
    """A real run under --dist loadgroup: every test of a group on one worker, each id tagged once."""
    (tmp_path / "test_groups.py").write_text(textwrap.dedent("""
        import os, pytest
        @pytest.mark.parametrize("i", [pytest.param(i, marks=pytest.mark.xdist_group(f"g{i % 2}")) for i in range(6)])
        def test_worker(i):
            print(f"RAN {i} ON {os.environ['PYTEST_XDIST_WORKER']}")
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "CONFORMANCE_"))}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "conformance.plugin",
                           "-n", "2", "--dist", "loadgroup", "-v", "-rA", "test_groups.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    workers = dict(re.findall(r"RAN (\d) ON (gw\d)", done.stdout))
    assert len(workers) == 6 and all(len({workers[str(i)] for i in range(g, 6, 2)}) == 1 for g in (0, 1)), workers
    assert re.search(r"test_worker\[0\]@g0\b", done.stdout) and "@g0@g0" not in done.stdout


# ---------------------------------------------------------------------------------------------- output
def test_this_repo_records_where_its_report_reads():
    assert PYPROJECT["tool"]["pytest"]["ini_options"]["conformance_results_dir"] == DEFAULT_DIR.as_posix()


USER_TEST = '''
from conformance.api import Subject, check_cell, parametrize_with_checks
from conformance.subjects.reference import SpecModule
from qsnn_reference import quant

SIGN = Subject(id="mylib.Sign", spec="quant.sign_ste", library="mylib", fixed={"zero_value": 1.0},
               build=lambda example: SpecModule(quant.sign_ste, {}, example.hyper))


@parametrize_with_checks([SIGN], transforms=["eager"])
def test_conformance(cell, record_cell):
    check_cell(cell, record=record_cell)
'''


def test_output_goes_to_the_configured_directory_and_the_reproduce_command_works_from_any_directory(tmp_path):
    """A library's repo whose pytest.ini moves the kit's directory to `out`: records land there (a `.gitignore` of
    `*` beside them), nothing else appears at its root, and the recorded reproduce command, run from a directory
    below the rootdir, loads the test file named relative to the rootdir."""
    root = tmp_path / "mylib"
    (root / "tests" / "deeper").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\nconformance_dir = out\n")
    (root / "tests" / "test_mylib.py").write_text(USER_TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "CONFORMANCE_", "TORCHINDUCTOR_"))}
    env["PYTHONPATH"] = str(ROOT)
    before = set(os.listdir(root))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_mylib.py",
                           "-k", "forward_matches_spec and cpu and float32"], cwd=root / "tests", env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:]
    assert set(os.listdir(root)) - before <= {"out", ".hypothesis", ".benchmarks"}
    assert (root / "out" / ".gitignore").read_text().splitlines()[-1] == "*"
    [record] = iter_records([root / "out" / "results"])
    command = record["reproduce"]
    assert " --load tests/test_mylib.py " in command, command
    again = subprocess.run(command.replace("python", sys.executable, 1), shell=True, cwd=root / "tests" / "deeper",
                           env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout[:again.stdout.rindex("}") + 1])["outcome"] == "pass"


def test_a_column_whose_extra_is_missing_skips_naming_the_extra(monkeypatch):
    from conformance import registry, runner

    cell = next(c for c in registry.cells(["reference.quant.sign_ste"]) if c.transform == "onnx")
    monkeypatch.setattr(registry, "missing_requirement", lambda names: "onnxruntime")
    assert runner.skip_reason(cell) == ("optional library 'onnxruntime' is not installed "
                                        "(pip install 'qsnn-conformance[onnx]')")
