#!/usr/bin/env python
"""The experiment behind the benchmark gate (docs/benchmarks.md): false alarms of whole gate runs on an unchanged
tree, with and without a concurrent CPU load, and detection of a 25% slowdown of one subject.

    python scripts/bench-noise.py collect --dir reports/bench/noise --what gate --sessions 30 --load none
    python scripts/bench-noise.py collect --dir reports/bench/noise --what gate --sessions 30 --load pytest
    python scripts/bench-noise.py collect --dir reports/bench/noise --what slowed --sessions 10 --load none
    python scripts/bench-noise.py export --dir reports/bench/noise --out reports/bench/noise-experiment-sessions.json
    python scripts/bench-noise.py analyse --dir reports/bench/noise --out reports/bench/noise-experiment.json

``collect`` runs complete sessions one after another and appends one line per session to ``DIR/index.jsonl``
(file, what, load, exit status, the gate's summary line, load averages before and after, duration):

- ``--what gate``: ``python -m conformance.bench gate --profile quick`` as CI runs it (the session it measured is
  kept as ``DIR/gate-<load>-NN.json``); its exit status is the verdict.
- ``--what baseline``: ``run`` sessions to pool into the baseline (``accept``), never judged by the experiment.
- ``--what slowed``: ``run --slowdown '*=0.25'``: every subject 25% slower (``timing.slowed`` spins for a quarter
  of each call's time), for the detection trials.

``--load pytest`` keeps ``python -m pytest suites/meta -n 1`` running in a loop beside the session (about one of
the two cores busy, on top of whatever else the shared machine runs); ``--load none`` adds nothing;
``--load external`` adds nothing either and labels sessions measured beside a load started elsewhere (a fresh
clone's ``./run report`` and ``./run test``: pytest on both cores).

``analyse`` re-judges every recorded session against the baseline with the gate's own code (the verdict must equal
the exit status the gate returned), counts false alarms with exact Clopper-Pearson bounds, composes detection
trials (one subject's samples in an unchanged session replaced by its samples from a slowed session, then judged
by the same procedure), and estimates the false-alarm rate per gate run from the design (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
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


# ------------------------------------------------------------------------------------------------------ collect
class Load:
    """A concurrent CPU load: a pytest run of the spec meta-tests (one xdist worker), restarted until stopped."""

    def __init__(self, kind: str, log: Path):
        self.kind, self.log, self.process = kind, log, None

    def __enter__(self):
        if self.kind == "pytest":
            loop = ("while true; do python -m pytest suites/meta -n 1 -p no:cacheprovider -q "
                    "--results-dir /tmp/conformance-bench-noise-load >/dev/null 2>&1; done")
            self.process = subprocess.Popen(["bash", "-c", loop], cwd=ROOT, start_new_session=True,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(10)  # let it reach its steady state
        return self

    def __exit__(self, *exc):
        if self.process is not None:
            os.killpg(self.process.pid, 15)  # the loop and its pytest, which share its process group
            self.process.wait()


def collect(args: argparse.Namespace) -> int:
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    index = out / "index.jsonl"
    prefix = f"{args.what}-{args.load}"
    done = len(list(out.glob(f"{prefix}-*.json")))
    for n in range(done, done + args.sessions):
        target = out / f"{prefix}-{n:02d}.json"
        command = [sys.executable, "-m", "conformance.bench", "gate" if args.what == "gate" else "run",
                   "--profile", "quick", "--quiet", "--out", str(target)]
        if args.what != "gate":
            command.append("--no-memory")
        if args.what == "slowed":
            command += ["--slowdown", f"*={SLOWDOWN}"]
        if args.baseline and args.what == "gate":
            command += ["--baseline", args.baseline]
        command += args.extra
        with Load(args.load, out / "load.log"):
            before = os.getloadavg()
            started = time.time()
            done_run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            duration = time.time() - started
            after = os.getloadavg()
        summary = next((line for line in reversed(done_run.stdout.splitlines()) if line.startswith(
            "conformance.bench")), done_run.stderr.strip()[-300:])
        if args.what == "gate":
            (out / f"{prefix}-{n:02d}.txt").write_text(done_run.stdout + done_run.stderr)
        record = {"file": target.name, "what": args.what, "load": args.load, "rc": done_run.returncode,
                  "summary": summary, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                  "duration_s": round(duration, 1), "loadavg_before": [round(v, 2) for v in before],
                  "loadavg_after": [round(v, 2) for v in after]}
        with open(index, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        print(f"{target.name}: rc {done_run.returncode}, {duration:.0f} s, load {before[0]:.2f} -> {after[0]:.2f}: "
              f"{summary}", flush=True)
        if done_run.returncode not in (0, 1):
            print(f"stopping: {done_run.stderr.strip()[-500:]}", file=sys.stderr)
            return 2
    return 0


# ------------------------------------------------------------------------------------------------------ analyse
def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact one-sided bounds for a binomial rate from k of n: (lower, upper), each at ``confidence``."""
    from scipy.stats import beta

    lower = 0.0 if k == 0 else float(beta.ppf(1 - confidence, k, n - k + 1))
    upper = 1.0 if k == n else float(beta.ppf(confidence, k + 1, n - k))
    return lower, upper


def shift_to_reject(x: list[float], reference: list[float], margin: float, threshold_p: float) -> float:
    """The smallest log shift added to every round of a case that makes its p-value at most ``threshold_p``
    (negative: it is rejected already). U counts pairs with x + shift - margin > y, so it reaches u at the u-th
    smallest of the differences y + margin - x (the shift must exceed it)."""
    from conformance.bench.stats import _u_tail

    tail = _u_tail(len(x), len(reference))
    needed = next(u for u in range(len(tail)) if tail[u] <= threshold_p)
    differences = sorted(y + margin - v for v in x for y in reference)
    return differences[needed - 1] if needed > 0 else float("-inf")


def judged(baseline: dict, session: dict, gate) -> dict:
    """The gate's verdict on a session plus, per gated case, its shift to rejection at Holm's first step."""
    verdict = gate.judge_session(baseline, session)
    threshold = verdict.alpha / max(1, verdict.gated)
    now = {c: [math.log(v) for values in e["samples"].values() for v in values]
           for c, e in session["entries"].items()}
    shifts = {}
    for row in verdict.rows:
        if row.p is not None:
            shifts[row.id] = shift_to_reject(now[row.id], row.model.samples, row.model.margin, threshold)
    return {"verdict": verdict, "shifts": shifts}


def compose(session: dict, slowed: dict, subject: str) -> dict:
    """``session`` with the samples of ``subject``'s cases taken from ``slowed`` (a session with it 25% slower)."""
    out = json.loads(json.dumps(session))
    (sid,) = out["sessions"]
    for case_id, entry in slowed["entries"].items():
        if case_id.split("|")[0] == subject and case_id in out["entries"]:
            values = [v for vs in entry["samples"].values() for v in vs]
            out["entries"][case_id]["samples"] = {sid: values}
    return out


def export(args: argparse.Namespace) -> int:
    """The recorded sessions in one compact file (the per-round samples of every case; wall-clock samples only
    for the baseline sessions), which ``analyse --archive`` reads as it reads the folder."""
    folder = Path(args.dir)
    index = [json.loads(line) for line in (folder / "index.jsonl").read_text().splitlines() if line.strip()]
    sessions = {}
    for record in index:
        doc = json.loads((folder / record["file"]).read_text())
        (sid, meta), = doc["sessions"].items()
        sessions[record["file"]] = {
            "session_id": sid, "meta": meta, "profile": doc["profile"], "device": doc["device"],
            "started": doc["started"], "attempted": doc["attempted"], "skipped": doc["skipped"],
            "entries": {c: {"library": e.get("library"), "samples": e["samples"][sid],
                            **({"wall": e["wall_samples"][sid]} if record["what"] == "baseline" else {}),
                            **({"slowdown": e["slowdown"]} if e.get("slowdown") else {})}
                        for c, e in doc["entries"].items()}}
    Path(args.out).write_text(json.dumps({"index": index, "sessions": sessions}, separators=(",", ":")) + "\n")
    print(f"wrote {args.out}: {len(sessions)} sessions")
    return 0


def load_experiment(args: argparse.Namespace) -> tuple[list[dict], dict[str, dict]]:
    """The index and the session documents, from the folder when it is there, else from the archive."""
    folder = Path(args.dir)
    if (folder / "index.jsonl").exists():
        index = [json.loads(line) for line in (folder / "index.jsonl").read_text().splitlines() if line.strip()]
        return index, {r["file"]: json.loads((folder / r["file"]).read_text()) for r in index
                       if (folder / r["file"]).exists()}
    archive = json.loads(Path(args.archive).read_text())
    docs = {}
    for name, kept in archive["sessions"].items():
        sid = kept["session_id"]
        entries = {}
        for case_id, entry in kept["entries"].items():
            subject, size, mode = case_id.split("|")
            entries[case_id] = {"subject": subject, "size": size, "mode": mode, "library": entry["library"],
                                "against": "spec", "ratio": statistics.median(entry["samples"]),
                                "samples": {sid: entry["samples"]},
                                **({"wall_samples": {sid: entry["wall"]}} if "wall" in entry else {}),
                                **({"slowdown": entry["slowdown"]} if "slowdown" in entry else {})}
        docs[name] = {"schema": 2, "kind": "conformance.bench", "profile": kept["profile"], "device": kept["device"],
                      "started": kept["started"], "env": {}, "sessions": {sid: kept["meta"]},
                      "attempted": kept["attempted"], "skipped": kept["skipped"], "entries": entries}
    return archive["index"], docs


def analyse(args: argparse.Namespace) -> int:
    from conformance.bench import gate

    baseline = gate.load(args.baseline)
    index, docs = load_experiment(args)
    runs = [r for r in index if r["what"] == "gate" and r["file"] in docs]
    slowed_runs = [r for r in index if r["what"] == "slowed" and r["file"] in docs]
    lines, report = [], {"baseline": args.baseline, "alpha": gate.ALPHA, "conditions": {}, "runs": []}
    sessions = {}
    for record in runs:
        session = docs[record["file"]]
        sessions[record["file"]] = session
        result = judged(baseline, session, gate)
        verdict = result["verdict"]
        min_adjusted = min([1.0] + [r.p * verdict.gated for r in verdict.rows if r.p is not None])
        report["runs"].append({
            **record, "rejudged_fail": verdict.failed, "gated": verdict.gated,
            "regressions": [r.id for r in verdict.rows if r.verdict == gate.REGRESSION],
            "not_gated": [r.id for r in verdict.rows if r.verdict == gate.NOT_GATED],
            "smallest_holm_adjusted_p": min_adjusted, "machine": verdict.match.describe(),
            "closest": min(result["shifts"].items(), key=lambda kv: kv[1]),
            "rounds": verdict.rounds, "shifts": {c: round(v, 5) for c, v in result["shifts"].items()}})
    for condition in sorted({r["load"] for r in report["runs"]}) + ["all"]:
        chosen = [r for r in report["runs"] if condition in ("all", r["load"])]
        if not chosen:
            continue
        failed = sum(r["rc"] != 0 for r in chosen)
        rejudged = sum(r["rejudged_fail"] for r in chosen)
        low, high = clopper_pearson(failed, len(chosen))
        loads = [r["loadavg_before"][0] for r in chosen] + [r["loadavg_after"][0] for r in chosen]
        durations = [r["duration_s"] for r in chosen]
        gated = [r["gated"] for r in chosen]
        entry = {"runs": len(chosen), "failed": failed, "failed_rejudged": rejudged, "upper95": high,
                 "load_min": min(loads), "load_median": statistics.median(loads), "load_max": max(loads),
                 "duration_median_s": statistics.median(durations), "duration_max_s": max(durations),
                 "gated_min": min(gated), "gated_median": statistics.median(gated), "gated_max": max(gated),
                 "smallest_adjusted_p_min": min(r["smallest_holm_adjusted_p"] for r in chosen),
                 "closest": min((r["closest"] for r in chosen), key=lambda kv: kv[1])}
        report["conditions"][condition] = entry
        lines.append(
            f"{condition:>6}: {failed}/{len(chosen)} gate runs failed (re-judged: {rejudged}); exact one-sided 95% "
            f"upper bound {high:.1%}; load average {entry['load_min']:.2f}-{entry['load_max']:.2f} (median "
            f"{entry['load_median']:.2f}); wall time median {entry['duration_median_s']:.0f} s, max "
            f"{entry['duration_max_s']:.0f} s; gated cases {entry['gated_min']}-{entry['gated_max']}; smallest "
            f"Holm-adjusted p of any run {entry['smallest_adjusted_p_min']:.3g}; closest to a false alarm: "
            f"{entry['closest'][0]} would have needed {math.expm1(entry['closest'][1]):+.1%} more")
    # Design estimate: per case, the shift to rejection over the unchanged runs, its normal tail below zero.
    per_case: dict[str, list[float]] = {}
    for r in report["runs"]:
        for c, v in r["shifts"].items():
            per_case.setdefault(c, []).append(v)
    tails = {}
    for c, values in per_case.items():
        if len(values) >= 10:
            mean, sd = statistics.mean(values), statistics.stdev(values)
            tails[c] = 0.5 * math.erfc(mean / sd / math.sqrt(2)) if sd > 0 else 0.0
    union = min(1.0, sum(tails.values()))
    worst = sorted(tails.items(), key=lambda kv: -kv[1])[:5]
    report["design_estimate"] = {"union_of_normal_tails": union, "worst_cases": worst,
                                 "min_shift": min(min(v) for v in per_case.values())}
    lines.append(f"design estimate: false alarm per gate run <= {union:.2e} (sum over cases of P(shift to rejection "
                 f"< 0), each case's shift over the {len(report['runs'])} runs taken as normal); smallest shift seen "
                 f"{report['design_estimate']['min_shift']:+.3f} (log); largest case terms: "
                 + ", ".join(f"{c.split('|')[0]}|{c.split('|')[2]} {t:.1e}" for c, t in worst))
    # Detection: trials composed from real slowed rounds, judged by the gate itself.
    if slowed_runs:
        slowed_sessions = {r["file"]: docs[r["file"]] for r in slowed_runs}
        rng = random.Random(args.seed)
        subjects = sorted({c.split("|")[0] for s in slowed_sessions.values() for c in s["entries"]})
        trials, caught, details = args.trials, 0, []
        for t in range(trials):
            record = rng.choice(runs)
            slow_record = rng.choice([r for r in slowed_runs if r["load"] == record["load"]] or slowed_runs)
            subject = rng.choice(subjects)
            trial = compose(sessions[record["file"]], slowed_sessions[slow_record["file"]], subject)
            verdict = gate.judge_session(baseline, trial)
            rows = [r for r in verdict.rows if r.subject == subject]
            hit = any(r.verdict == gate.REGRESSION for r in rows)
            others = [r.id for r in verdict.rows if r.verdict == gate.REGRESSION and r.subject != subject]
            caught += hit
            details.append({"session": record["file"], "slowed": slow_record["file"], "subject": subject,
                            "caught": hit, "verdicts": {r.id: r.verdict for r in rows}, "other_regressions": others})
        low, _ = clopper_pearson(caught, trials)
        missed = [d for d in details if not d["caught"]]
        report["detection"] = {"trials": trials, "caught": caught, "lower95": low, "missed": missed,
                               "slowed_sessions": len(slowed_runs)}
        shown = ", ".join(f"{d['subject']} ({', '.join(sorted(set(d['verdicts'].values())))})" for d in missed)
        lines.append(f"detection: {caught}/{trials} composed trials caught a 25% slower subject (exact one-sided 95% "
                     f"lower bound {low:.1%}); missed: {shown or 'none'}")
        # Every subject in every slowed session against one unchanged session of the same load, in turn.
        exhaustive, hits = 0, 0
        per_subject: dict[str, list[bool]] = {}
        for k, slow_record in enumerate(slowed_runs):
            same = [r for r in runs if r["load"] == slow_record["load"]] or runs
            record = same[k % len(same)]
            for subject in subjects:
                verdict = gate.judge_session(baseline, compose(sessions[record["file"]],
                                                                slowed_sessions[slow_record["file"]], subject))
                hit = any(r.verdict == gate.REGRESSION for r in verdict.rows if r.subject == subject)
                per_subject.setdefault(subject, []).append(hit)
                exhaustive += 1
                hits += hit
        never = sorted(s for s, v in per_subject.items() if not any(v))
        report["detection"]["exhaustive"] = {"trials": exhaustive, "caught": hits, "per_subject": per_subject,
                                             "never_caught": never}
        lines.append(f"detection, every subject x every slowed session: {hits}/{exhaustive} caught; subjects never "
                     f"caught: {', '.join(never) or 'none'}")
    # The clock: CPU time against the wall clock, in the same rounds of the baseline sessions.
    for condition in ("none", "pytest", "external"):
        spreads: dict[str, list[float]] = {"cpu": [], "wall": []}
        for record in index:
            doc = docs.get(record["file"])
            if record["what"] != "baseline" or record["load"] != condition or doc is None:
                continue
            for entry in doc["entries"].values():
                for clock, key in (("cpu", "samples"), ("wall", "wall_samples")):
                    for values in (entry.get(key) or {}).values():
                        logs = [math.log(v) for v in values if v]
                        middle = statistics.median(logs)
                        spreads[clock].append(1.4826 * statistics.median(abs(v - middle) for v in logs))
        if spreads["cpu"] and spreads["wall"]:
            cpu, wall = sorted(spreads["cpu"]), sorted(spreads["wall"])
            report.setdefault("clock", {})[condition] = {
                "cpu_median": statistics.median(cpu), "wall_median": statistics.median(wall),
                "cpu_p90": cpu[int(0.9 * len(cpu))], "wall_p90": wall[int(0.9 * len(wall))],
                "cases_x_sessions": len(cpu)}
            lines.append(f"clock, baseline sessions, load {condition}: spread between rounds (robust sd of log ratio, "
                         f"median / 90th percentile over cases x sessions): CPU time {statistics.median(cpu):.3f} / "
                         f"{cpu[int(0.9 * len(cpu))]:.3f}, wall clock {statistics.median(wall):.3f} / "
                         f"{wall[int(0.9 * len(wall))]:.3f}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, default=str) + "\n")
        Path(args.out).with_suffix(".txt").write_text(text + "\n")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("collect")
    c.add_argument("--dir", default="reports/bench/noise")
    c.add_argument("--what", choices=("gate", "baseline", "slowed"), required=True)
    c.add_argument("--load", choices=("none", "pytest", "external"), default="none",
                   help="none: nothing added; pytest: a loop of pytest suites/meta beside each session; external: a "
                        "load started by someone else (e.g. a fresh clone's ./run report), only recorded")
    c.add_argument("--sessions", type=int, default=1)
    c.add_argument("--baseline", default=None, help="the gate's --baseline (default: the checked-in one)")
    c.add_argument("extra", nargs="*", help="more options for the bench command (after --)")
    e = commands.add_parser("export")
    e.add_argument("--dir", default="reports/bench/noise")
    e.add_argument("--out", default="reports/bench/noise-experiment-sessions.json")
    a = commands.add_parser("analyse")
    a.add_argument("--dir", default="reports/bench/noise", help="the recorded sessions (else --archive is read)")
    a.add_argument("--archive", default="reports/bench/noise-experiment-sessions.json")
    a.add_argument("--baseline", default="reports/bench/baseline-cpu.json")
    a.add_argument("--trials", type=int, default=100, help="composed detection trials")
    a.add_argument("--seed", type=int, default=20261204)
    a.add_argument("--out", default=None, help="also write the numbers here (JSON, and .txt beside it)")
    args = parser.parse_args(argv)
    return {"collect": collect, "export": export, "analyse": analyse}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
