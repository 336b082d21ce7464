#!/usr/bin/env python
"""The noise experiment behind the benchmark gate's repeats and threshold (docs/benchmarks.md).

    python scripts/bench-noise.py collect --unchanged 14 --slowed 8 --dir reports/bench/noise
    python scripts/bench-noise.py analyse --dir reports/bench/noise

``collect`` runs the quick profile again and again in fresh processes on this (shared, noisy) machine: unchanged
runs, and runs where every subject is made 25% slower by ``--slowdown '*=0.25'`` (each case is then one trial
of "a real 25% slowdown of one subject"). The runs alternate, so both kinds see the same spread of load.

``analyse`` replays the gate offline for several repeat counts (each run's first r repeats) and thresholds: the
baseline is the median of ``--baseline-runs`` other unchanged runs (as ``accept`` makes it), a case over the
threshold is confirmed by a further independent run of the same kind. It reports the spread of the ratios, the
false alarms of whole gates on unchanged runs (any case failing fails the gate) and the detection rate of the
slowed cases: counted, and (for false alarms rarer than a few runs can show) estimated from the per-case rates of
exceeding the threshold, pooled or per case, and from a normal model of each case's log-ratio noise.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SLOWDOWN = 0.25


def collect(args: argparse.Namespace) -> int:
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = []
    for i in range(max(args.unchanged, args.slowed)):
        if i < args.unchanged:
            plan.append(("unchanged", i))
        if i < args.slowed:
            plan.append(("slowed", i))
    for kind, i in plan:
        target = out / f"{kind}-{i:02d}.json"
        if target.exists():
            continue
        command = [sys.executable, "-m", "conformance.bench", "run", "--profile", "quick", "--repeats",
                   str(args.repeats), "--builds", str(args.builds), "--no-memory", "--quiet", "--out", str(target)]
        if kind == "slowed":
            command += ["--slowdown", f"*={SLOWDOWN}"]
        started = time.monotonic()
        subprocess.run(command, check=True)
        print(f"{target}: {time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.2f}", flush=True)
    return 0


def _ratios(run: dict, repeats: int) -> dict[str, float]:
    return {case_id: statistics.median(entry["ratios"][:repeats]) for case_id, entry in run["entries"].items()}


def _norm_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def analyse(args: argparse.Namespace) -> int:
    runs = {kind: [json.load(open(p)) for p in sorted(glob.glob(str(Path(args.dir) / f"{kind}-*.json")))]
            for kind in ("unchanged", "slowed")}
    unchanged, slowed = runs["unchanged"], runs["slowed"]
    n_base = args.baseline_runs
    if len(unchanged) < n_base + 2 or len(slowed) < 2:
        raise SystemExit(f"need at least {n_base + 2} unchanged and 2 slowed runs, have {len(unchanged)}/{len(slowed)}")
    max_repeats = min(len(e["ratios"]) for run in unchanged + slowed for e in run["entries"].values())
    repeats_grid = [r for r in args.repeats_grid if r <= max_repeats]
    thresholds = [t / 100 for t in range(args.t_min, args.t_max + 1)]
    lines = [f"runs: {len(unchanged)} unchanged, {len(slowed)} slowed by {SLOWDOWN:.0%}; "
             f"{len(unchanged[0]['entries'])} cases per run; baseline = median of {n_base} unchanged runs; "
             f"a case over the threshold is confirmed by a further independent run.",
             f"run durations: {', '.join(str(round(r['duration_s'])) for r in unchanged + slowed)} s", ""]
    report = {"repeats": {}}
    for repeats in repeats_grid:
        u = [_ratios(run, repeats) for run in unchanged]
        s = [_ratios(run, repeats) for run in slowed]
        cases = sorted(set.intersection(*(set(r) for r in u + s)))
        n = len(u)
        # Each unchanged run i is judged against the median of the n_base runs after it (cyclically) and confirmed
        # by the run after those: every run plays every role, none judges itself.
        def baseline_for(i: int) -> dict[str, float]:
            members = [u[(i + k) % n] for k in range(1, n_base + 1)]
            return {c: statistics.median(m[c] for m in members) for c in cases}

        bases = [baseline_for(i) for i in range(n)]
        logs = {c: [math.log(u[i][c] / bases[i][c]) for i in range(n)] for c in cases}
        spread = {c: 1.4826 * statistics.median(abs(v - statistics.median(vals)) for v in vals)
                  for c, vals in logs.items()}
        sd = {c: statistics.pstdev(vals) for c, vals in logs.items()}
        all_logs = sorted(abs(v) for vals in logs.values() for v in vals)
        q = lambda p: all_logs[min(len(all_logs) - 1, int(p * len(all_logs)))]
        entry = {"cases": len(cases), "sd_median": statistics.median(sd.values()), "sd_max": max(sd.values()),
                 "sd_worst_case": max(sd, key=sd.get), "robust_median": statistics.median(spread.values()),
                 "abs_change_q50": math.exp(q(0.5)) - 1, "abs_change_q95": math.exp(q(0.95)) - 1,
                 "abs_change_q99": math.exp(q(0.99)) - 1, "abs_change_max": math.exp(all_logs[-1]) - 1,
                 "thresholds": {}}
        for t in thresholds:
            limit = math.log(1 + t)
            over_u = [{c for c in cases if math.log(u[i][c] / bases[i][c]) > limit} for i in range(n)]
            first_stage_gates = sum(1 for o in over_u if o)
            alarms = sum(1 for i in range(n) if over_u[i] & over_u[(i + n_base + 1) % n])
            comparisons = n * len(cases)
            first_stage_rate = sum(len(o) for o in over_u) / comparisons
            # slowed run j against the baseline of unchanged run j (cyclic), confirmed by slowed run j+1
            m = len(s)
            over_s = [{c for c in cases if math.log(s[j][c] / bases[j % n][c]) > limit} for j in range(m)]
            detected = sum(len(over_s[j] & over_s[(j + 1) % m]) for j in range(m))
            per_case = {c: sum(1 for j in range(m) if c in over_s[j] and c in over_s[(j + 1) % m]) / m for c in cases}
            # Rare-event estimates (a gate of ~100 cases must fail less than 1 time in 100, below what a few runs
            # can show directly), each assuming the confirming measurement is independent of the first:
            # pooled: every case exceeds as often as all cases together did; per case: each its own rate.
            pooled_gate_alarm = 1 - (1 - first_stage_rate ** 2) ** len(cases)
            per_case_gate_alarm = 1 - math.prod(1 - (sum(1 for o in over_u if c in o) / n) ** 2 for c in cases)
            # normal model per case: sd of (new - baseline) log-ratio, one run confirmed by an independent one
            model_gate_alarm = 1 - math.prod(1 - _norm_sf(limit / sd[c]) ** 2 for c in cases if sd[c] > 0)
            model_detect = [_norm_sf((limit - math.log(1 + SLOWDOWN)) / sd[c]) ** 2 for c in cases if sd[c] > 0]
            entry["thresholds"][f"{t:.2f}"] = {
                "first_stage_case_rate": first_stage_rate, "first_stage_gate_fails": first_stage_gates,
                "confirmed_gate_alarms": alarms, "gates": n, "detected": detected / (m * len(cases)),
                "worst_case_detection": min(per_case.values()), "worst_case": min(per_case, key=per_case.get),
                "pooled_gate_alarm": pooled_gate_alarm, "per_case_gate_alarm": per_case_gate_alarm,
                "model_gate_alarm": model_gate_alarm, "model_detect_mean": statistics.mean(model_detect),
                "model_detect_min": min(model_detect)}
        report["repeats"][repeats] = entry
        lines.append(f"repeats {repeats}: |change| of a case vs its baseline: median {entry['abs_change_q50']:.1%}, "
                     f"95% {entry['abs_change_q95']:.1%}, 99% {entry['abs_change_q99']:.1%}, max "
                     f"{entry['abs_change_max']:.1%}; sd of log ratio per case: median {entry['sd_median']:.3f}, max "
                     f"{entry['sd_max']:.3f} ({entry['sd_worst_case']})")
        lines.append(f"  {'T':>5} {'case>T':>7} {'gates>T':>8} {'confirmed':>9} {'pooled est':>10} "
                     f"{'per-case est':>12} {'normal model':>12} {'detected':>8} {'worst case':>10} "
                     f"{'model det min':>13}")
        for t, v in entry["thresholds"].items():
            lines.append(f"  {t:>5} {v['first_stage_case_rate']:7.2%} {v['first_stage_gate_fails']:>4}/{n:<3} "
                         f"{v['confirmed_gate_alarms']:>5}/{n:<3} {v['pooled_gate_alarm']:10.2%} "
                         f"{v['per_case_gate_alarm']:12.2%} {v['model_gate_alarm']:12.2%} {v['detected']:8.1%} "
                         f"{v['worst_case_detection']:10.1%} {v['model_detect_min']:13.1%}")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
        Path(args.out).with_suffix(".txt").write_text(text + "\n")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("collect")
    c.add_argument("--unchanged", type=int, default=10)
    c.add_argument("--slowed", type=int, default=6)
    c.add_argument("--repeats", type=int, default=3, help="blocks per build")
    c.add_argument("--builds", type=int, default=3)
    c.add_argument("--dir", default="reports/bench/noise")
    a = commands.add_parser("analyse")
    a.add_argument("--dir", default="reports/bench/noise")
    a.add_argument("--baseline-runs", type=int, default=5)
    a.add_argument("--repeats-grid", type=int, nargs="+", default=[3, 6, 9],
                   help="blocks kept per case (the first ones: with 3 blocks a build, 3 6 9 = 1 2 3 builds)")
    a.add_argument("--t-min", type=int, default=6, help="smallest threshold, percent")
    a.add_argument("--t-max", type=int, default=20, help="largest threshold, percent")
    a.add_argument("--out", default=None, help="also write the numbers here (JSON, and .txt beside it)")
    args = parser.parse_args(argv)
    return collect(args) if args.command == "collect" else analyse(args)


if __name__ == "__main__":
    sys.exit(main())
