"""The matrix across library releases: one nox session per environment, each in its own virtual environment.

    ./run history                         # every environment, one after another (records: reports/history/)
    ./run history -s "history(snntorch-0.9.4)" -- --shard 1/4        # one environment, one shard of it
    ./run history -l                      # the environments

An environment is the pinned set (constraints.txt, the libraries' declarations) with one library at an earlier
release it declares (``Library.history``); its session installs that set, runs the matrix of that library's
subjects (CPU) and writes one compressed record file ``reports/history/<environment>-<date>.jsonl.gz`` (or, with
``--shard i/n`` after ``--``, ``...-shard<i>of<n>.jsonl.gz``). ``python -m conformance.report`` reads that
directory into its history view beside the pinned releases' own records.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
HISTORY = ROOT / "reports" / "history"
nox.options.sessions = ["history"]
nox.options.reuse_existing_virtualenvs = True


def _environments() -> list[dict[str, str]]:
    """From the libraries' declarations (python -m conformance.libraries environments), read with this Python."""
    listed = subprocess.run([sys.executable, "-m", "conformance.libraries", "environments", "--json"], cwd=ROOT,
                            capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        raise SystemExit(f"noxfile: cannot list the environments: {listed.stderr.strip()[-500:]}")
    return json.loads(listed.stdout)


ENVIRONMENTS = {environment["name"]: environment for environment in _environments()}


@nox.session(venv_backend="venv")
@nox.parametrize("environment", sorted(ENVIRONMENTS), ids=sorted(ENVIRONMENTS))
def history(session: nox.Session, environment: str) -> None:
    """The matrix of one library at an earlier release."""
    chosen = ENVIRONMENTS[environment]
    session.install("-c", "constraints.txt", "-e", ".")
    session.run("bash", "scripts/install-libraries.sh", "--release", chosen["release"], "--no-source-builds",
                external=True)
    distribution, version = chosen["release"].split("==")
    session.run("python", "-c", "import importlib.metadata as m, torch; "
                "assert torch.__version__.startswith('2.13.0'), torch.__version__; "
                f"assert m.version({distribution!r}) == {version!r}, 'the release did not install'")
    shard = next((arg.split("=", 1)[1] if "=" in arg else session.posargs[i + 1]
                  for i, arg in enumerate(session.posargs) if arg == "--shard" or arg.startswith("--shard=")), None)
    with tempfile.TemporaryDirectory(prefix=f"history-{environment}-") as results:
        started = time.monotonic()
        session.run("python", "-m", "pytest", "suites/test_matrix.py", "-n", "auto", "--dist", "loadgroup", "-q",
                    "-p", "no:cacheprovider", "-k", f"{chosen['library']}. and cpu", "--results-dir", results,
                    *session.posargs, success_codes=[0, 1, 5])
        name = f"{environment}-{time.strftime('%Y%m%d')}" + (f"-shard{shard.replace('/', 'of')}" if shard else "")
        _keep(Path(results), environment, name, shard is None)
        session.log(f"{environment}: recorded in {time.monotonic() - started:.0f} s")


def _keep(results: Path, environment: str, name: str, whole: bool) -> None:
    """One gzip file of the run's records under reports/history (a whole run replaces the environment's older ones)."""
    HISTORY.mkdir(parents=True, exist_ok=True)
    if whole:
        for older in HISTORY.glob(f"{environment}-*.jsonl.gz"):
            older.unlink()
    target = HISTORY / f"{name}.jsonl.gz"
    with gzip.open(target, "wt", encoding="utf-8") as out:
        for part in sorted(results.glob("*.jsonl")):
            with part.open(encoding="utf-8") as records:
                shutil.copyfileobj(records, out)
