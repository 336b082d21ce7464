#!/usr/bin/env python
"""The experiment behind the benchmark gate against a baseline commit (docs/benchmarks.md, "The experiment"): how
often whole gate runs of an unchanged tree fail, with and without a concurrent CPU load, and how often a 25%
slowdown of one subject is caught.

    python scripts/gate-experiment.py collect --dir reports/bench/gate-runs --runs 30 --load none
    python scripts/gate-experiment.py collect --dir reports/bench/gate-runs --runs 30 --load pytest
    python scripts/gate-experiment.py collect --dir reports/bench/gate-runs --runs 3 --load none --slowed
    python scripts/gate-experiment.py analyse --dir reports/bench/gate-runs --trials 100 --out FILE.json
    python scripts/gate-experiment.py export --dir reports/bench/gate-runs --out reports/bench/gate-experiment-runs.json.gz
    python scripts/gate-experiment.py analyse --archive reports/bench/gate-experiment-runs.json.gz --trials 100

``collect`` runs ``python -m conformance.bench gate --profile quick`` (what ``./run test`` runs: the tree beside the
baseline commit) again and again and appends one line per run to ``DIR/index.jsonl`` (file, load, exit status, the
summary line, load averages, duration). ``--slowed`` passes ``--slowdown '*=0.25'``: every subject 25% slower in the
tree's rounds only, for the detection trials. ``--load pytest`` keeps ``python -m pytest suites/meta -n 1`` running
in a loop beside the run; ``--load external`` labels runs measured beside a load started elsewhere (e.g. a fresh
clone's ``./run test``); every run also records the load averages it saw, which ``analyse`` reports.

``analyse`` re-judges every run with the gate's own code (the verdict must equal the exit status recorded), counts
the failing runs of the unchanged tree with exact Clopper-Pearson bounds, and composes detection trials: in an
unchanged run, one subject's cases (both sides) are replaced by that subject's cases from a slowed run, and the
result is judged by the same procedure (with the gate's looks: the first k rounds of a run are what the gate had
seen after k, ``truncated``); a trial is caught when a case of that subject is a REGRESSION, and a
miss is either "not gated" (the gate says so) or a gated subject not rejected (a silent miss); detection is
also given per slowed run.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SLOWDOWN = 0.25


def _recorded_ratio_experiment():
    """scripts/bench-noise.py, the experiment of the recorded-ratio gate: its load, bounds and distance to rejection
    serve this one too."""
    spec = importlib.util.spec_from_file_location("bench_noise", ROOT / "scripts" / "bench-noise.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SHARED = _recorded_ratio_experiment()
from conformance.bench import ab, gate  # noqa: E402  (after ROOT is on the path)
Load, clopper_pearson, shift_to_reject = _SHARED.Load, _SHARED.clopper_pearson, _SHARED.shift_to_reject


def collect(args: argparse.Namespace) -> int:
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    prefix = f"{'slowed' if args.slowed else 'gate'}-{args.load}"
    done = len(list(out.glob(f"{prefix}-*.json")))
    for n in range(done, done + args.runs):
        target = out / f"{prefix}-{n:02d}.json"
        command = [sys.executable, "-m", "conformance.bench", "gate", "--profile", "quick", "--quiet",
                   "--out", str(target)]
        if args.slowed:
            command += ["--slowdown", f"*={SLOWDOWN}", "--no-memory"]
        with Load(args.load, out / "load.log"):
            before = os.getloadavg()
            started = time.time()
            run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            duration = time.time() - started
            after = os.getloadavg()
        summary = next((line for line in reversed(run.stdout.splitlines()) if line.startswith("conformance.bench")),
                       run.stderr.strip()[-300:])
        record = {"file": target.name, "slowed": args.slowed, "load": args.load, "rc": run.returncode,
                  "summary": summary, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                  "duration_s": round(duration, 1), "loadavg_before": [round(v, 2) for v in before],
                  "loadavg_after": [round(v, 2) for v in after]}
        with open(out / "index.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        print(f"{target.name}: rc {run.returncode}, {duration:.0f} s, load {before[0]:.2f} -> {after[0]:.2f}: "
              f"{summary}", flush=True)
        if run.returncode not in (0, 1):
            print(f"stopping: {run.stderr.strip()[-500:]}", file=sys.stderr)
            return 2
    return 0


# ------------------------------------------------------------------------------------------------------ analyse
def load_runs(args: argparse.Namespace) -> list[dict]:
    """Every run: its index line plus the document (``doc``)."""
    if args.archive:
        with gzip.open(args.archive, "rt", encoding="utf-8") as handle:
            return json.load(handle)["runs"]
    folder = Path(args.dir)
    runs = []
    for line in (folder / "index.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        path = folder / record["file"]
        if path.exists():
            runs.append({**record, "doc": json.loads(path.read_text(encoding="utf-8"))})
    return runs


def subject_of(case_id: str) -> str:
    return case_id.split("|")[0]


def composed(unchanged: dict, slowed: dict, subject: str) -> dict:
    """``unchanged`` with every case of ``subject`` (tree and baseline side) taken from ``slowed``."""
    doc = json.loads(json.dumps(unchanged))
    for side_new, side_old in ((doc, slowed), (doc["against"]["session"], slowed["against"]["session"])):
        for case_id in [c for c in side_new["entries"] if subject_of(c) == subject]:
            if case_id in side_old["entries"]:
                side_new["entries"][case_id] = side_old["entries"][case_id]
            else:
                del side_new["entries"][case_id]
    return doc


def trial(unchanged: dict, slowed: dict, subject: str) -> str:
    """One detection trial: "caught" when a case of ``subject`` is a REGRESSION, NOT_GATED when none of its cases
    was gated, else "missed". A REGRESSION of any other subject's case ends the experiment (a false alarm)."""
    verdict = verdict_of(composed(unchanged["doc"], slowed["doc"], subject))
    wrong = [r.id for r in verdict.rows if r.verdict == gate.REGRESSION and r.subject != subject]
    if wrong:
        raise SystemExit(f"a trial failed unslowed cases: {wrong}")
    mine = [r for r in verdict.rows if r.subject == subject]
    if any(r.verdict == gate.REGRESSION for r in mine):
        return "caught"
    return gate.NOT_GATED if all(r.verdict == gate.NOT_GATED for r in mine) else "missed"


def distances(doc: dict, verdict) -> dict[str, float]:
    """Per gated case, how much slower it would have had to be for Holm's first step to reject it."""
    threshold = verdict.alpha / max(1, verdict.gated)
    margin = math.log1p(verdict.margin)
    logs = {side: {c: [math.log(v) for vs in e["samples"].values() for v in vs] for c, e in d["entries"].items()}
            for side, d in (("tree", doc), ("base", doc["against"]["session"]))}
    return {r.id: shift_to_reject(logs["tree"][r.id], logs["base"][r.id], margin, threshold)
            for r in verdict.rows if r.p is not None}


def mean_load(doc: dict) -> float:
    """The mean 1-minute load average over the rounds of both sides."""
    values = [v[0] for d in (doc, doc["against"]["session"]) for s in d["sessions"].values() for v in s["load"]]
    return statistics.mean(values) if values else float("nan")


def truncated(doc: dict, rounds: int) -> dict:
    """What the gate had seen at the look after ``rounds`` rounds a side: every case's first rounds on both sides."""
    def side(d: dict) -> dict:
        entries = {c: {**e, "samples": {sid: values[:rounds] for sid, values in e["samples"].items()}}
                   for c, e in d["entries"].items()}
        return {**d, "entries": {c: e for c, e in entries.items() if any(e["samples"].values())}}

    return {**side(doc), "against": {**doc["against"], "session": side(doc["against"]["session"])}}


def as_planned(doc: dict, rounds: int) -> dict:
    """A run as a gate planned for ``rounds`` rounds a side would have measured it: its first rounds, and that plan
    in its sessions (``analyse --planned``)."""
    def planned(d: dict) -> dict:
        return {**d, "sessions": {sid: {**meta, "rounds_planned": rounds} for sid, meta in d["sessions"].items()}}

    cut = truncated(doc, rounds)
    return {**planned(cut), "against": {**cut["against"], "session": planned(cut["against"]["session"])}}


def verdict_of(doc: dict):
    """The gate's own verdict on a recorded A/B document, with the looks it would have taken: the verdict at the
    first look (``ab.MIN_ROUNDS`` rounds a side, then after every pair) that is decided, else at the last."""
    planned = ab.planned_rounds(doc)
    for rounds in range(min(ab.MIN_ROUNDS, planned), planned):
        verdict = ab.judge(truncated(doc, rounds), alpha=gate.ALPHA, detect=gate.DETECT, power=gate.POWER,
                           planned=planned)
        if verdict.decided:
            return verdict
    return ab.judge(doc, alpha=gate.ALPHA, detect=gate.DETECT, power=gate.POWER, planned=planned)


def analyse(args: argparse.Namespace) -> int:
    runs = load_runs(args)
    for run in runs:
        run["recorded_rounds"] = ab.planned_rounds(run["doc"])
        if args.planned is not None and args.planned < run["recorded_rounds"]:
            run["doc"] = as_planned(run["doc"], args.planned)
    unchanged = [r for r in runs if not r["slowed"]]
    slowed = [r for r in runs if r["slowed"]]
    report: dict = {"runs": [], "conditions": {}, "detection": {}}
    per_case: dict[str, list[float]] = {}
    for run in unchanged:
        verdict = verdict_of(run["doc"])
        status = 1 if verdict.failed else 3 if not verdict.gated else 0
        changes = [abs(math.log(r.new / r.old)) for r in verdict.rows if r.old and r.new]
        distance = distances(run["doc"], verdict)
        for case_id, value in distance.items():
            per_case.setdefault(case_id, []).append(value)
        closest = min(distance, key=distance.get)
        report["runs"].append({"file": run["file"], "load": run["load"], "rc": run["rc"],
                               "mean_load": round(mean_load(run["doc"]), 2), "gated": verdict.gated,
                               "not_gated": sum(r.verdict == gate.NOT_GATED for r in verdict.rows),
                               "median_abs_change": round(statistics.median(changes), 4),
                               "largest_change": round(max(changes), 4),
                               "smallest_p": min((r.p for r in verdict.rows if r.p is not None), default=None),
                               "closest": [closest, round(math.expm1(distance[closest]), 4)],
                               "duration_s": run["duration_s"], "status": status, "rounds": verdict.rounds,
                               "planned": verdict.planned, "recorded_rounds": run["recorded_rounds"]})
    by_condition: dict[str, list[dict]] = {}
    for row in report["runs"]:
        by_condition.setdefault(row["load"], []).append(row)
    by_condition["all"] = report["runs"]
    for condition, rows in by_condition.items():
        failed = sum(r["status"] == 1 for r in rows)
        report["conditions"][condition] = {
            "rounds": [min(r["rounds"] for r in rows), statistics.mean(r["rounds"] for r in rows),
                       max(r["rounds"] for r in rows)],
            # the rounds are nearly all of a run's time: the recorded run's time scaled to the rounds a side it needed
            "estimated_s": statistics.median(r["duration_s"] * r["rounds"] / r["recorded_rounds"] for r in rows),
            "runs": len(rows), "failed": failed, "upper95": round(clopper_pearson(failed, len(rows))[1], 4),
            "mean_load": [min(r["mean_load"] for r in rows), max(r["mean_load"] for r in rows)],
            "gated": [min(r["gated"] for r in rows), max(r["gated"] for r in rows)],
            "median_duration_s": statistics.median(r["duration_s"] for r in rows)}
    # Design estimate: each case's distance to rejection over the runs taken as normal, P(distance < 0) summed over
    # the cases (a union bound on the chance that a run fails)
    from statistics import NormalDist

    terms = {c: NormalDist(statistics.mean(v), statistics.stdev(v)).cdf(0.0) for c, v in per_case.items()
             if len(v) >= 3 and statistics.stdev(v) > 0}
    report["design_estimate"] = {"per_run": sum(terms.values()),
                                 "largest": sorted(terms.items(), key=lambda kv: -kv[1])[:3]}
    if slowed and unchanged:
        rng = random.Random(args.seed)
        subjects = sorted({subject_of(c) for r in unchanged for c in r["doc"]["entries"]})
        caught = 0
        misses: dict[str, int] = {}
        not_gated = 0
        for _ in range(args.trials):
            base, slow, subject = rng.choice(unchanged), rng.choice(slowed), rng.choice(subjects)
            outcome = trial(base, slow, subject)
            caught += outcome == "caught"
            not_gated += outcome == gate.NOT_GATED
            if outcome != "caught":
                misses[subject] = misses.get(subject, 0) + 1
        lower = clopper_pearson(caught, args.trials)[0]
        every: dict[str, list[int]] = {}
        by_slowed_run = {}
        pairs = [(subject, b) for subject in subjects for b in unchanged[:args.exhaustive]]
        for s in slowed:
            outcomes = []
            for subject, b in pairs:
                outcome = trial(b, s, subject)
                outcomes.append(outcome)
                tally = every.setdefault(subject, [0, 0])
                tally[0] += outcome == "caught"
                tally[1] += 1
            by_slowed_run[s["file"]] = {"mean_load": round(mean_load(s["doc"]), 2), "pairs": len(outcomes),
                                        "caught": outcomes.count("caught"),
                                        "not_gated": outcomes.count(gate.NOT_GATED)}
        report["detection"] = {"trials": args.trials, "caught": caught, "lower95": round(lower, 4),
                               "misses": misses, "misses_not_gated": not_gated, "every_subject": every,
                               "by_slowed_run": by_slowed_run, "slowed_runs": [r["file"] for r in slowed]}
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    for condition, row in report["conditions"].items():
        print(f"{condition}: {row['runs']} runs, {row['failed']} failed (95% upper bound {row['upper95']:.1%}), "
              f"mean load {row['mean_load'][0]:.2f}-{row['mean_load'][1]:.2f}, gated {row['gated'][0]}-"
              f"{row['gated'][1]}, median {row['median_duration_s']:.0f} s; sequential: rounds a side "
              f"{row['rounds'][0]}-{row['rounds'][2]} (mean {row['rounds'][1]:.2f}), "
              f"about {row['estimated_s']:.0f} s")
    print(f"closest to failing: " + ", ".join(f"{r['file']} {r['closest'][1]:+.1%}" for r in report["runs"]))
    print(f"design estimate: {report['design_estimate']['per_run']:.1e} false alarms per run; largest terms "
          + ", ".join(f"{c} {p:.1e}" for c, p in report["design_estimate"]["largest"]))
    if report["detection"]:
        d = report["detection"]
        total = [sum(v[0] for v in d["every_subject"].values()), sum(v[1] for v in d["every_subject"].values())]
        print(f"detection: {d['caught']} of {d['trials']} trials (95% lower bound {d['lower95']:.1%}); every subject "
              f"against every slowed run: {total[0]} of {total[1]}; misses {d['misses']} ({d['misses_not_gated']} "
              f"not gated)")
        for name, row in d["by_slowed_run"].items():
            print(f"  {name} (mean load {row['mean_load']:.2f}): {row['caught']} of {row['pairs']} caught, "
                  f"{row['not_gated']} of the misses not gated")
    return 0


def compact(doc: dict) -> dict:
    """What ``analyse`` reads of a gate's document: per side the round ratios per case and the load per round."""
    def side(d: dict) -> dict:
        return {"entries": {c: {"samples": {"r": [v for vs in e["samples"].values() for v in vs]},
                                **({"against": e["against"]} if "against" in e else {})}
                            for c, e in d["entries"].items()},
                "sessions": {"r": {"load": [v for s in d["sessions"].values() for v in s["load"]]}},
                "attempted": d.get("attempted", []), "skipped": d.get("skipped", {})}

    return {**side(doc), "against": {"commit": doc["against"]["commit"], "session": side(doc["against"]["session"])}}


def export(args: argparse.Namespace) -> int:
    runs = [{**{k: v for k, v in run.items() if k != "doc"}, "doc": compact(run["doc"])} for run in load_runs(args)]
    with gzip.open(args.out, "wt", encoding="utf-8") as handle:
        json.dump({"kind": "conformance.bench.gate-experiment", "runs": runs}, handle, separators=(",", ":"))
    print(f"wrote {args.out}: {len(runs)} runs")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("collect")
    c.add_argument("--dir", required=True)
    c.add_argument("--runs", type=int, default=1)
    c.add_argument("--load", choices=("none", "pytest", "external"), default="none")
    c.add_argument("--slowed", action="store_true")
    for name in ("analyse", "export"):
        p = commands.add_parser(name)
        p.add_argument("--dir")
        p.add_argument("--archive")
        p.add_argument("--out")
        p.add_argument("--trials", type=int, default=100)
        p.add_argument("--exhaustive", type=int, default=10, help="unchanged runs used for every subject x slowed run")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--planned", type=int, help="judge each run as a gate planned for this many rounds a side "
                                                   "(its first rounds; default: what it was planned for)")
    args = parser.parse_args()
    if args.command in ("analyse", "export") and not (args.dir or args.archive):
        parser.error("give --dir or --archive")
    return {"collect": collect, "analyse": analyse, "export": export}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
