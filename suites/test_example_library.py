"""The library author's path, end to end (issue 40's acceptance test): the kit and the example library
``examples/signlib`` are installed into a fresh venv, and signlib's own tests run there with plain ``pytest``:
its subjects come from its ``conformance.subjects`` entry point, its known failure is xfailed, and the bug planted
behind ``SIGNLIB_PLANTED_BUG=1`` is reported with its cause, minimal example and a reproduce command that works.

Nothing is downloaded: the fresh venv sees this suite's installed packages (torch, pytest, hypothesis, setuptools)
through a ``.pth`` line placed after its own site-packages, and both packages are built from copies, offline.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "signlib"
#: What the kit's build needs of the repository (everything else: the suite's own data and tools).
KIT_SKIPPED = {".git", ".venv", ".nox", ".cache", ".hypothesis", ".whl", "build", "reports", "suites", "examples",
               "docs", "experiments", "reproducers", "scripts"}
TIMEOUT_S = 300

pytestmark = pytest.mark.xdist_group("example_library")  # one venv per worker: both tests on the same one


def _site_packages(python: Path) -> Path:
    found = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True, check=True, timeout=60)
    return Path(found.stdout.strip())


def _clean_env(venv: Path, **extra: str) -> dict[str, str]:
    """This process's environment without the suite's own run (its results directory, run id, xdist worker, venv)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("CONFORMANCE_", "PYTEST_", "PYTHON")) and key != "VIRTUAL_ENV"}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", CONFORMANCE_PROFILE="ci", **extra)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """A fresh venv holding the kit and signlib (copies built offline), and a copy of signlib's repository."""
    where = tmp_path_factory.mktemp("adopt")
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # after the venv's own site-packages: what it installs comes first, torch and the test tools from the suite's
    (_site_packages(python) / "_suite_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    kit = where / "kit"
    shutil.copytree(ROOT, kit, ignore=lambda folder, names: [
        n for n in names if (Path(folder) == ROOT and n in KIT_SKIPPED) or n == "__pycache__" or n.endswith(
            ".egg-info")])
    library = where / "signlib"
    shutil.copytree(EXAMPLE, library, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "reports",
                                                                    ".pytest_cache", ".hypothesis", ".cache"))
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation",
                           "--no-deps", str(kit), str(library)], cwd=where, env=_clean_env(venv),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {"venv": venv, "python": python, "library": library}


def _records(folder: Path) -> dict[str, dict]:
    found = {}
    for path in folder.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("kind", "cell") == "cell" and "cell" in record:
                found[record["cell"]] = record
    return found


def test_the_example_library_runs_the_kit_with_plain_pytest(installed):
    """The whole of signlib's tests, the planted bug switched on: the entry point's subjects run, the declared known
    failure is xfailed, and the only failures are the planted bug's cells, each with cause, example and command."""
    library, venv = installed["library"], installed["venv"]
    env = _clean_env(venv, SIGNLIB_PLANTED_BUG="1")
    done = subprocess.run([str(installed["python"]), "-m", "pytest", "-q"], cwd=library, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-4000:]
    records = _records(library)
    assert {cell.split("|")[0] for cell in records} == {"signlib.SignSTE", "signlib.LIF", "signlib.MultiStepLIF"}
    xfailed = {cell for cell, record in records.items() if record["outcome"] == "xfail"}
    assert xfailed and all(cell.startswith("signlib.SignSTE|vmap|") for cell in xfailed), xfailed
    failed = {cell for cell, record in records.items() if record["outcome"] not in ("pass", "skip", "xfail")}
    assert failed and all(cell.startswith("signlib.MultiStepLIF|eager|") for cell in failed), failed
    assert {records[cell]["cause"] for cell in failed} == {"forward-mismatch"}
    planted = "signlib.MultiStepLIF|eager|forward_matches_spec|cpu|float32"
    assert planted in failed
    report = output[output.index(f"[{planted}]"):]
    assert "[forward-mismatch] output vs spec" in report and "minimal example: Example(" in report, report[:3000]
    command = re.search(r"^reproduce: (.+)$", report, re.M).group(1)
    assert shlex.split(command)[-1] == planted and "--load tests/test_conformance.py" in command
    again = subprocess.run(["bash", "-c", command], cwd=library, env=env, capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    assert again.returncode == 1 and '"cause": "forward-mismatch"' in again.stdout, again.stdout + again.stderr


def test_the_example_library_s_reproducer_fails_as_it_says(installed):
    """The known failure's standalone script (signlib and torch only) fails with the line it expects."""
    script = installed["library"] / "reproducers" / "sign_ste_vmap.py"
    expect = re.search(r"^# expect: (.+)$", script.read_text(encoding="utf-8"), re.M).group(1)
    done = subprocess.run([str(installed["python"]), str(script)], cwd=installed["library"],
                          env=_clean_env(installed["venv"]), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode != 0 and expect in done.stderr.strip().splitlines()[-1], done.stderr[-2000:]
