"""The fault experiment: a slice of the real matrix plus an unreliable library (by default a subject that kills its
process in every cell), published through the ``conformance.subjects`` entry point; the run is killed (SIGKILL of
the whole process group) part way and finished with ``--resume``. Prints the records per cell and the outcomes.

    python scripts/fault-experiment.py [-k 'snntorch or faulty'] [--faulty crash,hang_c] [--kill-after 90]

Hanging subjects cost the cell timeout in each of their ~120 cells: add them with a narrow ``-k``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.records.io import iter_records  # noqa: E402
from suites.test_faults import install_faulty_library  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="snntorch or faulty", help="pytest -k expression over the matrix")
    parser.add_argument("--kill-after", type=float, default=90.0, help="seconds before the process group is killed")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--faulty", default="crash", help="the unreliable subjects: crash, hang_py, hang_c, slow, fine")
    parser.add_argument("--cell-timeout", default="20")
    parser.add_argument("--out", type=Path, default=None, help="work directory (default: a temporary one)")
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="fault-experiment-"))
    work.mkdir(parents=True, exist_ok=True)
    site = install_faulty_library(work)
    results = work / "results"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "CONFORMANCE_", "FAULTY_"))}
    env.update(PYTHONPATH=f"{site}{os.pathsep}{ROOT}", FAULTY_SUBJECTS=args.faulty)
    command = [sys.executable, "-m", "pytest", str(ROOT / "suites" / "test_matrix.py"), "-p", "no:cacheprovider",
               "-q", "-n", args.workers, "--dist", "loadgroup", "--results-dir", str(results),
               "--cell-timeout", args.cell_timeout, "-k", args.k]
    started = time.monotonic()
    first = subprocess.Popen(command, cwd=work, env=env, stdout=open(work / "first.log", "w"),
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
        first.wait(timeout=args.kill_after)
        print(f"the first run ended by itself after {time.monotonic() - started:.0f} s (rc {first.returncode}); "
              "nothing to resume: use a shorter --kill-after")
    except subprocess.TimeoutExpired:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    before = Counter(r["cell"] for r in iter_records([results]))
    print(f"killed after {args.kill_after:.0f} s: {len(before)} cells recorded, {sum(before.values())} records")
    started = time.monotonic()
    resumed = subprocess.run([*command, "--resume"], cwd=work, env=env, capture_output=True, text=True)
    (work / "resume.log").write_text(resumed.stdout + resumed.stderr)
    records = list(iter_records([results]))
    per_cell = Counter(r["cell"] for r in records)
    outcomes = Counter(r["outcome"] for r in records)
    faulty = Counter((r["subject"].split("[")[0], r["outcome"]) for r in records if r["library"] == "faultylib")
    print(f"resume: rc {resumed.returncode} in {time.monotonic() - started:.0f} s; "
          f"{len(per_cell)} cells, {len(records)} records; records per cell: "
          f"{sorted(Counter(per_cell.values()).items())}")
    print(f"outcomes: {dict(outcomes)}")
    print(f"the unreliable library: {dict(faulty)}")
    print("summary lines:", *[line for line in resumed.stdout.splitlines() if line.startswith("conformance:")],
          sep="\n  ")
    print(f"logs and records in {work}")
    return 0 if max(per_cell.values()) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
