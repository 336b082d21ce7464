"""``python -m conformance.bench run|gate|accept``: see :mod:`conformance.bench` and docs/benchmarks.md.

    python -m conformance.bench run --profile quick --out reports/bench/latest-cpu.json
    python -m conformance.bench gate --profile quick           # exit 1 when a ratio regressed past the threshold
    python -m conformance.bench gate --results reports/bench/latest-cpu.json   # judge a recorded run, no measuring
    python -m conformance.bench accept --results run1.json run2.json run3.json  # their median is the new baseline

Exit status: 0 ok; 1 a confirmed regression (gate); 2 usage error or unreadable file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Sequence

from . import gate
from .cases import PROFILES

BENCH_DIR = Path("reports") / "bench"
#: Repeats and seconds per sample of each profile, chosen from the noise experiment (docs/benchmarks.md).
SETTINGS = {"quick": {"repeats": gate.REPEATS, "builds": gate.BUILDS, "sample_s": gate.SAMPLE_S},
            "full": {"repeats": gate.REPEATS, "builds": gate.BUILDS, "sample_s": 2 * gate.SAMPLE_S}}


def default_baseline(device: str) -> Path:
    """The baseline for this device; on the CPU, the one recorded on this CPU model when there is one.

    Subject/spec ratios are machine-independent only to a point: on an Intel Xeon host bitorch's swish sign ran at
    0.32x its spec against 0.23x on the AMD EPYC of baseline-cpu.json, with the same code (the landed suite and this
    one). A ratio is compared with one measured on the same kind of CPU when such a baseline is checked in.
    """
    if device == "cpu":
        from .timing import _cpu_model

        slug = re.sub(r"[^a-z0-9]+", "-", _cpu_model().lower()).strip("-")
        specific = BENCH_DIR / f"baseline-cpu-{slug}.json"
        if slug and specific.exists():
            return specific
    return BENCH_DIR / f"baseline-{device}.json"


def default_latest(device: str) -> Path:
    return BENCH_DIR / f"latest-{device}.json"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m conformance.bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    def measuring(p: argparse.ArgumentParser) -> None:
        p.add_argument("--profile", choices=PROFILES, default="quick",
                       help="quick: one size per family (CI); full: every size and compiled/eager (releases)")
        p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
        p.add_argument("--subjects", action="append", metavar="GLOB",
                       help="only subjects matching this fnmatch pattern (repeatable)")
        p.add_argument("--repeats", type=int, default=None,
                       help="interleaved blocks (subject, spec, spec, subject) per build (default: profile's)")
        p.add_argument("--builds", type=int, default=None, help="fresh builds per case (default: profile's)")
        p.add_argument("--sample-s", type=float, default=None, help="seconds per timed sample (default: profile's)")
        p.add_argument("--threads", type=int, default=1, help="torch CPU threads (the baseline is recorded with 1)")
        p.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
        p.add_argument("--slowdown", action="append", default=[], metavar="GLOB=FRACTION",
                       help="experiments only: make matching subjects FRACTION slower (e.g. 'norse.*=0.25')")
        p.add_argument("--quiet", action="store_true", help="no per-case progress lines")

    run = commands.add_parser("run", help="measure and write the results JSON")
    measuring(run)
    run.add_argument("--out", type=Path, default=None, help="results file (default reports/bench/latest-DEVICE.json)")
    run.add_argument("--cases", nargs="+", default=None, metavar="ID",
                     help="only these case ids (subject|size|mode); the gate confirms suspects this way")

    check = commands.add_parser("gate", help="measure (or read --results), compare with the baseline, exit 1 on a "
                                             "confirmed regression")
    measuring(check)
    check.add_argument("--results", type=Path, default=None, help="judge this recorded run instead of measuring")
    check.add_argument("--baseline", type=Path, default=None, help="default reports/bench/baseline-DEVICE.json")
    check.add_argument("--out", type=Path, default=None, help="where the measured results go (default latest)")
    check.add_argument("--threshold", type=float, default=gate.THRESHOLD,
                       help=f"fail when a ratio grows by more than this fraction (default {gate.THRESHOLD:g})")
    check.add_argument("--no-confirm", action="store_true",
                       help="fail on the first measurement; by default a case over the threshold is measured again "
                            "and fails only when the second measurement is over it too")

    accept = commands.add_parser("accept", help="write the baseline from recorded runs (median ratio per case)")
    accept.add_argument("--results", type=Path, nargs="+", default=None,
                        help="runs to merge (default reports/bench/latest-DEVICE.json)")
    accept.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    accept.add_argument("--baseline", type=Path, default=None, help="default reports/bench/baseline-DEVICE.json")
    return parser.parse_args(argv)


def _slowdowns(specs: Sequence[str]) -> dict[str, float]:
    out = {}
    for spec in specs:
        pattern, _, fraction = spec.rpartition("=")
        if not pattern:
            raise SystemExit(f"--slowdown wants GLOB=FRACTION, got {spec!r}")
        out[pattern] = float(fraction)
    return out


def measure(args: argparse.Namespace, only: Sequence[str] | None = None, checkpoint=None) -> dict:
    """Run the profile (or only the case ids in ``only``) with the command line's settings; ``checkpoint`` as in
    :func:`conformance.bench.timing.run`."""
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    from .cases import cases, parse_id
    from .timing import run

    torch.set_num_threads(args.threads)
    settings = SETTINGS[args.profile]
    chosen = [parse_id(i) for i in only] if only is not None else cases(args.profile, args.subjects, args.device)
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    return run(chosen, profile=args.profile, device=args.device,
               repeats=args.repeats or settings["repeats"], builds=args.builds or settings["builds"],
               sample_s=args.sample_s or settings["sample_s"],
               slowdown=_slowdowns(args.slowdown), memory=not args.no_memory, progress=progress,
               checkpoint=checkpoint)


def measure_in_fresh_process(args: argparse.Namespace, case_ids: Sequence[str]) -> dict:
    """Measure ``case_ids`` again in a new Python process with the same settings.

    Where a process's tensors land in memory moves some ratios by 10-20% for the whole life of the process (fresh
    builds inside it sample only part of that spread): in-process confirmation turned two such shifts into false
    regressions in three gate runs of an unchanged tree (docs/benchmarks.md). A fresh process samples the layout
    anew, so a confirmed regression is one that two independent processes both show."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="conformance-bench-") as tmp:
        out = Path(tmp) / "confirmation.json"
        command = [sys.executable, "-m", "conformance.bench", "run", "--profile", args.profile, "--device",
                   args.device, "--threads", str(args.threads), "--quiet", "--out", str(out), "--cases", *case_ids]
        for flag, value in (("--repeats", args.repeats), ("--builds", args.builds), ("--sample-s", args.sample_s)):
            if value:
                command += [flag, str(value)]
        if args.no_memory:
            command.append("--no-memory")
        for slow in args.slowdown:
            command += ["--slowdown", slow]
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[-300:]}")
        return gate.load(out)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "accept":
        paths = args.results or [default_latest(args.device)]
        try:
            runs = [gate.load(p) for p in paths]
        except (OSError, ValueError) as error:
            print(f"conformance.bench: {error}", file=sys.stderr)
            return 2
        target = args.baseline or default_baseline(args.device)
        gate.write(target, gate.merge(runs))
        print(f"conformance.bench: wrote {target} from {len(runs)} run(s)")
        return 0
    if args.command == "run":
        out = args.out or default_latest(args.device)
        # written after every case too: a run stopped by a time limit keeps what it measured ("complete": false)
        results = measure(args, only=args.cases, checkpoint=lambda partial: gate.write(out, partial))
        gate.write(out, results)
        print(f"conformance.bench: {len(results['entries'])} cases measured, {len(results['skipped'])} skipped "
              f"in {results['duration_s']:.0f} s; wrote {out}")
        return 0
    baseline_path = args.baseline or default_baseline(args.device)
    try:
        baseline = gate.load(baseline_path)
        if args.results is not None:
            results = gate.load(args.results)
        else:
            results = measure(args)
            gate.write(args.out or default_latest(args.device), results)
    except (OSError, ValueError) as error:
        print(f"conformance.bench: {error}", file=sys.stderr)
        return 2
    rows = gate.compare(baseline, results, threshold=args.threshold)
    suspects = [row.id for row in rows if row.verdict == gate.SUSPECT]
    confirmation = None
    if suspects and not args.no_confirm and args.results is None:
        print(f"conformance.bench: {len(suspects)} case(s) over the threshold; measuring them again in a fresh "
              "process", file=sys.stderr)
        try:
            confirmation = measure_in_fresh_process(args, suspects)
        except (OSError, ValueError, RuntimeError) as error:
            print(f"conformance.bench: the confirmation run failed ({error}); measuring in this process",
                  file=sys.stderr)
            confirmation = measure(args, only=suspects)
    rows = gate.confirm(rows, confirmation, threshold=args.threshold, required=not args.no_confirm
                        and args.results is None)
    print(gate.table(rows))
    print(gate.summary(rows, threshold=args.threshold, baseline=str(baseline_path)))
    return 1 if any(row.verdict == gate.REGRESSION for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
