"""The fault experiment: a slice of the real matrix plus an unreliable library published through the
``conformance.subjects`` entry point, in one of three scenarios:

- ``kill`` (default): by default a subject that kills its process in every cell; the run is killed (SIGKILL of the
  whole process group) part way and finished with ``--resume``. Prints the records per cell and the outcomes.
- ``hang``: workers die in several orders under ``-n 2 --dist loadgroup`` (exit, segfault, a hang in C) while the
  other worker has already been told to shut down; each run must end on its own within ``--limit`` seconds.
- ``concurrent``: two runs started into one results directory at once, then two ``--resume`` at once after the
  survivor was killed; one of each pair must stop at once and every cell must be recorded once.

    python scripts/fault-experiment.py [-k 'snntorch or faulty'] [--faulty crash,hang_c] [--kill-after 90]
    python scripts/fault-experiment.py --scenario hang [--limit 300]
    python scripts/fault-experiment.py --scenario concurrent [-k 'faulty and cpu and float32 and not compile']

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
from suites.test_faults_runs import PLAIN_IDS, TWO_CHECKS  # noqa: E402

#: Three groups of two cells each: the first and third go to one worker, which the first group's first cell ends
#: once the other worker has been told to shut down (suites/test_faults_runs.py).
DEATH_ORDERS = ("crash,slow,fine", "exit,fine,slow", "segfault,fine,hang_c", "hang_c,fine,exit", "segfault,hang_c,exit")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="snntorch or faulty", help="pytest -k expression over the matrix")
    parser.add_argument("--kill-after", type=float, default=90.0, help="seconds before the process group is killed")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--faulty", default="crash", help="the unreliable subjects: crash, hang_py, hang_c, slow, fine")
    parser.add_argument("--cell-timeout", default="20")
    parser.add_argument("--out", type=Path, default=None, help="work directory (default: a temporary one)")
    parser.add_argument("--scenario", choices=("kill", "hang", "concurrent"), default="kill")
    parser.add_argument("--limit", type=float, default=300.0, help="hang: seconds before a run counts as hung")
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="fault-experiment-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.scenario == "hang":
        return hang(work, args)
    site = install_faulty_library(work)
    results = work / "results"
    env = _environment(site, args.faulty)
    command = _command(results, args)
    if args.scenario == "concurrent":
        return concurrent(work, command, env, results)
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


def _environment(site: Path, faulty: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "CONFORMANCE_", "FAULTY_"))}
    env.update(PYTHONPATH=f"{site}{os.pathsep}{ROOT}", FAULTY_SUBJECTS=faulty)
    return env


def _command(results: Path, args) -> list[str]:
    return [sys.executable, "-m", "pytest", str(ROOT / "suites" / "test_matrix.py"), "-p", "no:cacheprovider",
            "-q", "-n", args.workers, "--dist", "loadgroup", "--results-dir", str(results),
            "--cell-timeout", args.cell_timeout, "-k", args.k]


def _records(results: Path) -> Counter:
    return Counter(r["cell"] for r in iter_records([results]))


def hang(work: Path, args) -> int:
    """Each order of DEATH_ORDERS once: did the run end by itself, in how long, with how many records per cell."""
    hung = 0
    for number, order in enumerate(DEATH_ORDERS):
        where = work / f"hang-{number}"
        site = install_faulty_library(where, PLAIN_IDS)
        args.k, args.cell_timeout = TWO_CHECKS, "1"
        command = _command(where / "results", args)
        started = time.monotonic()
        run = subprocess.Popen(command, cwd=where, env=_environment(site, order), stdout=open(where / "run.log", "w"),
                               stderr=subprocess.STDOUT, start_new_session=True)
        try:
            run.wait(timeout=args.limit)
            ended = f"ended by itself in {time.monotonic() - started:.0f} s (rc {run.returncode})"
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            hung += 1
            ended = f"HUNG: killed after {args.limit:.0f} s"
        counts = _records(where / "results")
        print(f"{order:24s} {ended}; {len(counts)} of 6 cells recorded, records per cell "
              f"{sorted(Counter(counts.values()).items())}", flush=True)
    print(f"{hung} of {len(DEATH_ORDERS)} runs hung; logs in {work}")
    return 1 if hung else 0


def concurrent(work: Path, command: list[str], env: dict, results: Path) -> int:
    """Two runs into one directory at once, the one that runs killed part way, then two --resume at once."""
    env = {**env, "FAULTY_SLOW_S": env.get("FAULTY_SLOW_S", "0.5")}
    refused, survivor = _pair(command, env, work, "runs")
    while survivor.poll() is None and len(_records(results)) < 20:
        time.sleep(0.5)
    if survivor.poll() is None:
        os.killpg(survivor.pid, signal.SIGKILL)
        survivor.wait()
    print(f"  the one that ran was killed with {len(_records(results))} cells recorded", flush=True)
    refused, survivor = _pair([*command, "--resume"], env, work, "resumes")
    survivor.wait()
    counts = _records(results)
    duplicates = sum(n - 1 for n in counts.values())
    print(f"  the --resume that ran: rc {survivor.returncode}; {len(counts)} cells, {sum(counts.values())} records, "
          f"{duplicates} cell(s) recorded twice or more")
    print(f"logs and records in {work}")
    return 1 if duplicates or refused.returncode != 4 else 0


def _pair(command: list[str], env: dict, work: Path, what: str) -> tuple[subprocess.Popen, subprocess.Popen]:
    """Start ``command`` twice at once; wait for the first to end, print how; return (that one, the other)."""
    started = time.monotonic()
    runs = [subprocess.Popen(command, cwd=work, env=env, stdout=open(work / f"{what}-{n}.log", "w"),
                             stderr=open(work / f"{what}-{n}.err", "w"), start_new_session=True) for n in range(2)]
    while all(run.poll() is None for run in runs):
        time.sleep(0.2)
    first = next(run for run in runs if run.poll() is not None)
    lines = (work / f"{what}-{runs.index(first)}.err").read_text().strip().splitlines()
    print(f"two {what} at once: one ended after {time.monotonic() - started:.1f} s with rc {first.returncode} and "
          f"{len(lines)} line(s) on stderr: {lines[-1] if lines else ''}", flush=True)
    return first, next(run for run in runs if run is not first)


if __name__ == "__main__":
    sys.exit(main())
