"""``python -m conformance.bench run|gate|accept``: see :mod:`conformance.bench` and docs/benchmarks.md.

    python -m conformance.bench run --profile quick --out reports/bench/latest-cpu.json   # one session of rounds
    python -m conformance.bench gate --profile quick   # the tree beside the baseline commit; exit 1 if slower
    python -m conformance.bench gate --against HEAD~1   # beside another commit
    python -m conformance.bench gate --results reports/bench/latest-cpu.json   # judge a recorded session
    python -m conformance.bench accept --commit HEAD    # the gate's baseline is now the code of HEAD
    python -m conformance.bench accept --results s1.json s2.json --baseline reports/bench/baseline-cpu.json --add

Exit status: 0 pass; 1 a regression (gate); 2 usage error or unreadable file; 3 (gate) no case could be judged
on this machine against this baseline (the table says why per case).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import NoReturn, Sequence

from . import ab, gate, rounds
from .cases import PROFILES

BENCH_DIR = Path("reports") / "bench"
NOTHING_GATED = 3  # exit status of a gate that could judge no case (scripts/test.sh reports it, does not fail)
#: Blocks per round and seconds per timed sample, per profile (docs/benchmarks.md).
SETTINGS = {"quick": {"repeats": gate.REPEATS, "sample_s": gate.SAMPLE_S},
            "full": {"repeats": gate.REPEATS, "sample_s": 2 * gate.SAMPLE_S}}


class UsageError(Exception):
    """Bad usage: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        raise UsageError(f"{message} (see {self.prog} --help)")


def default_baseline(device: str) -> Path:
    """One baseline per device, for every machine of that device kind (docs/benchmarks.md)."""
    return BENCH_DIR / f"baseline-{device}.json"


def default_latest(device: str) -> Path:
    return BENCH_DIR / f"latest-{device}.json"


def default_jobs(device: str) -> int:
    """Rounds at a time: one per core up to two on the CPU (each round uses one thread); one on cuda."""
    return 1 if device == "cuda" else max(1, min(2, os.cpu_count() or 1))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = Parser(prog="python -m conformance.bench", description=__doc__.split("\n\n")[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def positive_int(text: str) -> int:
        value = int(text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
        return value

    def measuring(p: argparse.ArgumentParser, *, in_process: bool = False) -> None:
        p.add_argument("--profile", choices=PROFILES, default="quick",
                       help="quick: one size per family (CI); full: every size and compiled/eager (releases)")
        p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
        p.add_argument("--subjects", action="append", metavar="GLOB",
                       help="only subjects matching this fnmatch pattern (repeatable)")
        p.add_argument("--repeats", type=positive_int, default=None,
                       help="interleaved blocks (subject, spec, spec, subject) per case and round (default: profile's)")
        p.add_argument("--sample-s", type=float, default=None, help="seconds per timed sample (default: profile's)")
        p.add_argument("--threads", type=positive_int, default=1,
                       help="torch CPU threads (the baseline is recorded with 1)")
        p.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
        p.add_argument("--slowdown", action="append", default=[], metavar="GLOB=FRACTION",
                       help="experiments only: make matching subjects FRACTION slower (e.g. 'norse.*=0.25')")
        p.add_argument("--quiet", action="store_true", help="no progress lines")
        p.add_argument("--cases", nargs="+", default=None, metavar="ID", help="only these case ids (subject|size|mode)")
        if not in_process:
            p.add_argument("--rounds", type=positive_int, default=None,
                           help=f"fresh processes, each measuring every case once (default {gate.ROUNDS})")
            p.add_argument("--jobs", type=positive_int, default=None,
                           help="rounds at a time (default: 2 on a CPU with 2 or more cores, 1 on cuda)")
            p.add_argument("--seed", type=int, default=None, help="seed of the rounds' case orders (default random)")

    run = commands.add_parser("run", help="measure one session of rounds and write it")
    measuring(run)
    run.add_argument("--out", type=Path, default=None, help="results file (default reports/bench/latest-DEVICE.json)")

    one = commands.add_parser("round", help="(internal) measure every case once in this process")
    measuring(one, in_process=True)
    one.add_argument("--out", type=Path, required=True)
    one.add_argument("--order-seed", type=int, default=None)
    one.add_argument("--builds", type=positive_int, default=1, help="fresh builds per case (default 1)")

    check = commands.add_parser("gate", help="measure a session (or read --results), compare it with the baseline, "
                                             "exit 1 on a regression")
    measuring(check)
    check.add_argument("--results", type=Path, default=None, help="judge this recorded session instead of measuring")
    check.add_argument("--against", default=None, metavar="REV",
                       help=f"measure this commit's code beside the tree (default: the commit in {ab.COMMIT_FILE})")
    check.add_argument("--baseline", type=Path, default=None,
                       help="judge against this file of recorded ratios instead of a commit measured beside the tree "
                            "(reports/bench/baseline-DEVICE.json: used where the baseline commit is unavailable)")
    check.add_argument("--out", type=Path, default=None, help="where the measured session goes (default latest)")
    check.add_argument("--alpha", type=float, default=gate.ALPHA,
                       help=f"family-wise false-alarm rate of one gate run (default {gate.ALPHA:g})")
    check.add_argument("--detect", type=float, default=gate.DETECT, metavar="FRACTION",
                       help=f"the slowdown a gated case must be caught at in --power of runs; a case too noisy for "
                            f"it is not gated (default {gate.DETECT:g})")
    check.add_argument("--power", type=float, default=gate.POWER, metavar="SHARE",
                       help=f"with a baseline commit: the share of simulated runs in which a subject's cases must "
                            f"catch --detect for it to be gated (default {gate.POWER:g}; 0 gates every case)")

    accept = commands.add_parser("accept", help="move the gate's baseline commit (--commit), or write the recorded "
                                                "ratios from sessions (all samples pooled)")
    accept.add_argument("--commit", default=None, metavar="REV",
                        help=f"write this commit (resolved to its full id) into {ab.COMMIT_FILE}")
    accept.add_argument("--results", type=Path, nargs="+", default=None,
                        help="sessions to pool (default reports/bench/latest-DEVICE.json)")
    accept.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    accept.add_argument("--baseline", type=Path, default=None, help="default reports/bench/baseline-DEVICE.json")
    accept.add_argument("--add", action="store_true",
                        help="keep the baseline's sessions and add these (another machine, more sessions); "
                             "without it the baseline is made from these results alone")
    accept.add_argument("--replace-cases", action="store_true",
                        help="with --add: first drop the baseline's samples (of every machine) of the cases these "
                             "results measured, to accept a wanted change of their speed")
    args = parser.parse_args(argv)
    if getattr(args, "sample_s", None) is not None and not 0 < args.sample_s < 10:
        parser.error(f"--sample-s must be between 0 and 10 seconds, got {args.sample_s:g}")
    if getattr(args, "alpha", None) is not None and not 0 < args.alpha < 1:
        parser.error(f"--alpha must be between 0 and 1, got {args.alpha:g}")
    if getattr(args, "power", None) is not None and not 0 <= args.power <= 1:
        parser.error(f"--power must be between 0 and 1, got {args.power:g}")
    if getattr(args, "detect", None) is not None and not 0 < args.detect <= 10:
        parser.error(f"--detect must be above 0 and at most 10, got {args.detect:g}")
    return args


def _slowdowns(specs: Sequence[str]) -> dict[str, float]:
    out = {}
    for spec in specs:
        pattern, _, fraction = spec.rpartition("=")
        try:
            value = float(fraction)
        except ValueError:
            value = float("nan")
        if not pattern or not 0 <= value < 100:
            raise UsageError(f"--slowdown wants GLOB=FRACTION with FRACTION >= 0, got {spec!r}")
        out[pattern] = value
    return out


def chosen_cases(args: argparse.Namespace) -> list:
    """The cases a command measures; an empty choice is a usage error naming what would have matched."""
    from .cases import cases, parse_id

    everything = cases(args.profile, None, args.device)
    if getattr(args, "cases", None):
        known = {c.id for c in everything}
        unknown = [i for i in args.cases if i not in known]
        if unknown:
            raise UsageError(f"--cases {unknown[0]!r} is not a case of the {args.profile} profile on {args.device} "
                             f"(ids are subject|size|mode, e.g. {everything[0].id!r})" if everything else
                             f"--cases: the {args.profile} profile has no cases on {args.device}")
        return [parse_id(i) for i in args.cases]
    chosen = cases(args.profile, args.subjects, args.device)
    if not chosen:
        libraries = sorted({c.subject.split(".", 1)[0] for c in everything})
        what = " ".join(repr(p) for p in args.subjects or ())
        raise UsageError(f"--subjects {what} matches none of the {len({c.subject for c in everything})} subjects of "
                         f"the {args.profile} profile on {args.device}; valid: a subject id or glob such as "
                         + ", ".join(f"'{lib}.*'" for lib in libraries))
    return chosen


def measure_round(args: argparse.Namespace) -> dict:
    """One process measuring every chosen case once (the ``round`` command)."""
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    from .timing import run

    torch.set_num_threads(args.threads)
    settings = SETTINGS[args.profile]
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    return run(chosen_cases(args), profile=args.profile, device=args.device,
               repeats=args.repeats or settings["repeats"], builds=args.builds,
               sample_s=args.sample_s or settings["sample_s"], slowdown=_slowdowns(args.slowdown),
               memory=not args.no_memory, progress=progress, order_seed=args.order_seed)


def session_inputs(args: argparse.Namespace) -> tuple[list, list[str] | None, object]:
    """What a measured session takes from the command line: the chosen cases, their ids when the command line
    narrowed them (else None: the rounds choose the same themselves), and the progress printer (None when quiet)."""
    chosen = chosen_cases(args)
    _slowdowns(args.slowdown)
    filtered = bool(args.subjects) or bool(getattr(args, "cases", None))
    progress = None if args.quiet else (lambda line: print(f"conformance.bench: {line}", file=sys.stderr,
                                                           flush=True))
    return chosen, [c.id for c in chosen] if filtered else None, progress


def measure_session(args: argparse.Namespace, checkpoint=None) -> dict:
    """``rounds`` fresh processes with the command line's settings (see :mod:`conformance.bench.rounds`)."""
    chosen, case_ids, progress = session_inputs(args)
    settings = SETTINGS[args.profile]
    return rounds.measure(profile=args.profile, device=args.device, rounds=args.rounds or gate.ROUNDS,
                          jobs=args.jobs or default_jobs(args.device), repeats=args.repeats or settings["repeats"],
                          sample_s=args.sample_s or settings["sample_s"], threads=args.threads,
                          attempted=[c.id for c in chosen], case_ids=case_ids,
                          slowdown=args.slowdown, memory=not args.no_memory, seed=args.seed, progress=progress,
                          checkpoint=checkpoint)


def accept_commit(args: argparse.Namespace) -> int:
    if args.results or args.add or args.replace_cases or args.baseline:
        raise UsageError("--commit moves the baseline commit; it takes no --results, --add, --replace-cases or "
                         "--baseline")
    commit = ab.resolve(args.commit)
    gate.write(ab.COMMIT_FILE, {"kind": "conformance.bench.gate-commit", "commit": commit,
                                "accepted": time.strftime("%Y-%m-%d", time.gmtime()),
                                "what": "the code the benchmark gate measures beside the tree (docs/benchmarks.md)"})
    print(f"conformance.bench: wrote {ab.COMMIT_FILE}: the gate now measures commit {commit[:12]} beside the tree")
    return 0


def accept(args: argparse.Namespace) -> int:
    if args.commit is not None:
        return accept_commit(args)
    target = args.baseline or default_baseline(args.device)
    paths = args.results or [default_latest(args.device)]
    docs = [gate.load(p) for p in paths]
    if args.replace_cases and not args.add:
        raise UsageError("--replace-cases works with --add (it replaces cases inside the existing baseline)")
    if args.add and target.exists():
        kept = gate.load(target)
        if args.replace_cases:
            kept = gate.without_cases(kept, {c for doc in docs for c in doc["entries"]})
        docs.insert(0, kept)
    merged = gate.merge(docs)
    if merged["device"] != args.device:
        raise UsageError(f"the results are of device {merged['device']!r}, not --device {args.device!r}")
    gate.write(target, merged)
    machines = sorted({s["machine"] for s in merged["sessions"].values()})
    print(f"conformance.bench: wrote {target}: {len(merged['entries'])} cases, {len(merged['sessions'])} sessions "
          f"({', '.join(machines)})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        if args.command == "accept":
            return accept(args)
        if args.command == "round":
            results = measure_round(args)
            gate.write(args.out, results)
            return 0
        if args.command == "run":
            out = args.out or default_latest(args.device)
            # written after every round: a run stopped by a time limit keeps its rounds ("complete": false)
            results = measure_session(args, checkpoint=lambda partial: gate.write(out, partial))
            gate.write(out, results)
            session = next(iter(results["sessions"].values()))
            print(f"conformance.bench: {session['rounds']} rounds of {len(results['entries'])} cases "
                  f"({len(results['skipped'])} skipped) in {session['duration_s']:.0f} s; wrote {out}")
            return 0
        return run_gate(args)
    except UsageError as error:
        print(f"conformance.bench: error: {error}", file=sys.stderr)
        return 2
    except (OSError, ValueError, RuntimeError) as error:
        print(f"conformance.bench: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2


def baseline_commit(args: argparse.Namespace) -> tuple[str | None, str]:
    """The commit the gate measures beside the tree, or None with the reason when it judges against recorded ratios
    instead (--baseline given, or no usable baseline commit without --against)."""
    if args.baseline is not None:
        return None, ""
    if args.against is not None:
        return ab.resolve(args.against), ""
    if not ab.COMMIT_FILE.exists():
        return None, f"no {ab.COMMIT_FILE} here"
    recorded = ab.read_commit_file(ab.COMMIT_FILE)["commit"]
    try:
        return ab.resolve(recorded), ""
    except ValueError as error:
        return None, str(error)


def run_gate(args: argparse.Namespace) -> int:
    if args.baseline is not None and args.against is not None:
        raise UsageError("--against measures a commit, --baseline reads recorded ratios: give one of them")
    # a named file that cannot be read is the first thing to say
    baseline = gate.load(args.baseline) if args.baseline is not None else None
    if args.results is not None:
        results = gate.load(args.results)
        if ab.is_ab(results):
            ab.check_against(results, args.results)
            return report_ab(args, results)
    else:
        commit, why_not = baseline_commit(args)
        if commit is not None:
            return report_ab(args, measure_ab(args, commit))
        if why_not:
            print(f"conformance.bench: {why_not}: judging against the recorded ratios of "
                  f"{args.baseline or default_baseline(args.device)} instead", file=sys.stderr)
    baseline_path = args.baseline or default_baseline(args.device)
    baseline = baseline or gate.load(baseline_path)
    if args.results is None:
        if baseline["device"] != args.device:
            raise UsageError(f"{baseline_path} is a {baseline['device']} baseline, not {args.device}")
        results = measure_session(args)
        gate.write(args.out or default_latest(args.device), results)
    verdict = gate.judge_session(baseline, results, alpha=args.alpha, detect=args.detect)
    return report(verdict, gate.summary(verdict, baseline=str(baseline_path)))


def measure_ab(args: argparse.Namespace, commit: str) -> dict:
    """The tree and ``commit``'s code measured side by side (:mod:`conformance.bench.ab`), written after every pair
    of rounds to --out (default latest), so that a run stopped by a time limit keeps its rounds."""
    chosen, case_ids, progress = session_inputs(args)
    if progress:
        progress(f"measuring commit {commit[:12]} beside the tree: {args.rounds or ab.ROUNDS} rounds a side, "
                 f"{len(chosen)} cases")
    out = args.out or default_latest(args.device)

    def decided(partial: dict) -> bool:
        verdict = ab.judge(partial, alpha=args.alpha, detect=args.detect, power=args.power)
        if verdict.decided and progress:
            progress(f"decided after {verdict.rounds} of {verdict.planned} rounds a side: no gated case can be "
                     f"rejected any more")
        return verdict.decided

    results = ab.measure(profile=args.profile, device=args.device, rounds=args.rounds or ab.ROUNDS,
                         jobs=args.jobs or default_jobs(args.device), repeats=args.repeats or ab.REPEATS,
                         sample_s=args.sample_s or ab.SAMPLE_S * SETTINGS[args.profile]["sample_s"] / gate.SAMPLE_S,
                         threads=args.threads,
                         attempted=[c.id for c in chosen], baseline_dir=ab.baseline_code(commit, ab.default_cache()),
                         commit=commit, case_ids=case_ids,
                         slowdown=args.slowdown, memory=not args.no_memory, seed=args.seed, progress=progress,
                         checkpoint=lambda partial: gate.write(out, partial), decided=decided)
    gate.write(out, results)
    return results


def report_ab(args: argparse.Namespace, results: dict) -> int:
    verdict = ab.judge(results, alpha=args.alpha, detect=args.detect, power=args.power)
    return report(verdict, ab.summary(verdict), remedy="more rounds: --rounds")


def report(verdict, summary: str, remedy: str = "on a machine the baseline lacks, add a session of it: run, then "
                                                "accept --add") -> int:
    """Print a verdict (table, notes, summary line); the gate's exit status."""
    print(gate.table(verdict))
    if gate.notes(verdict):
        print(gate.notes(verdict))
    print(summary)
    why_nothing = gate.nothing_gated(verdict)
    if why_nothing:
        print(f"conformance.bench: {why_nothing} ({remedy})", file=sys.stderr)
        return NOTHING_GATED
    return 1 if verdict.failed else 0


def stop_on_sigterm() -> None:
    """SIGTERM (a cancelled CI job, ``timeout``) ends a run as Ctrl-C does: its rounds are stopped and its temporary
    folder removed; what it wrote to its file so far stays."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


if __name__ == "__main__":
    stop_on_sigterm()
    sys.exit(main())
