"""The gate against a baseline commit: the tree and the baseline's code measured side by side, in one session.

A subject/spec ratio is a property of the machine as much as of the code (two hosts sold under one CPU label differ
per case by more than the gate tolerates, docs/benchmarks.md), so a ratio recorded on one machine cannot gate another.
Here nothing recorded is compared: the gate extracts the baseline commit's code (``git archive``), and in the same
session runs ``rounds`` fresh processes of each side, tree and baseline started in pairs (two at a time on two cores,
one after the other on one), so both sides see the same host and the same load. Per case, the exact one-sided
Mann-Whitney test asks whether the tree's rounds, lowered by ``MARGIN``, lie above the baseline's; Holm's step-down
procedure over all gated cases bounds the false-alarm rate of the whole run by ``alpha``. A subject whose cases,
judged on simulated runs drawn from the baseline's own rounds, would find a ``detect`` slowdown in fewer than
``POWER`` of them is reported, not gated. Looks: from the ``MIN_ROUNDS``-th pair of rounds on, the run stops as soon as
no gated case can be rejected any more in the planned rounds (an exact futility rule, ``stats.can_still_reject``), so
its verdict is the planned test's; an unchanged tree is decided after about half of them.

Both sides run the ``round`` command of their own code (``python -m conformance.bench round``) in the same Python
environment: the gate sees changes of this repository's code (adapters, specs, kernels, the harness), not of the
installed libraries, which both sides share.

The baseline commit is one fact, in ``reports/bench/gate-commit.json``; ``accept --commit REV`` moves it (after
committing a wanted change of speed, so that the baseline is the code that has it).
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from ..core.settings import cache_dir
from . import stats
from .gate import MISSING, NEW, NOT_GATED, OK, FASTER, REGRESSION, Row, _labels
from .rounds import (SHARED_EXAMPLES, combine, new_session, positive_number, record_round, round_command,
                     run_rounds)

#: Per side: ROUNDS fresh processes, each timing every case in REPEATS block(s) of four samples of SAMPLE_S seconds
#: (a process is the unit of independence, so one block per process; docs/benchmarks.md "The gate"). MARGIN: the
#: slowdown of a case the gate tolerates, so that the rounds that land badly do not add up to a false alarm; set
#: from the experiment's distances to rejection (docs/benchmarks.md, "The experiment").
ROUNDS = 16
REPEATS = 1
SAMPLE_S = 0.01
MARGIN = 0.08
#: Rounds of a case needed on each side to judge it. Its first MIN_ROUNDS rounds decide whether it is gated (its noise,
#: once, so that Holm's family stays the same at every look); from then on, after every pair of rounds, the gate stops
#: when no gated case can be rejected any more in ROUNDS rounds (docs/benchmarks.md, "Looks").
MIN_ROUNDS = 6
TRIALS = 400               # simulated runs per case for its detection power
COMMIT_FILE = Path("reports") / "bench" / "gate-commit.json"
#: the top-level packages of every commit the gate may compare with (before 2026-12-07 ``reference`` and ``kernels``)
CODE_PATHS = ("conformance", "qsnn_reference", "qsnn_kernels", "reference", "kernels", "pyproject.toml")


# ------------------------------------------------------------------------------------------------ the baseline
def code_root() -> Path:
    """The directory holding the ``conformance`` package this process runs (the tree under test)."""
    return Path(__file__).resolve().parents[2]


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except OSError as error:
        raise ValueError(f"cannot run git ({error.strerror or error})") from None
    if done.returncode != 0:
        raise ValueError(" ".join((done.stderr or done.stdout).split())[:300] or f"git {args[0]} failed")
    return done.stdout.strip()


def read_commit_file(path: Path | str) -> dict:
    """The baseline commit file, checked; anything malformed is a ValueError of one line naming the file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"{path}: cannot read it ({error.strerror or error})") from None
    except ValueError as error:
        raise ValueError(f"{path}: not JSON ({error})") from None
    commit = data.get("commit") if isinstance(data, dict) else None
    if not isinstance(commit, str) or len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise ValueError(f"{path}: \"commit\" must be a full 40-hex-digit git commit id, got {commit!r}")
    return data


def resolve(rev: str, root: Path | None = None) -> str:
    """The full id of commit ``rev`` in the repository of ``root``; a one-line ValueError if it is not there."""
    root = root or code_root()
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except ValueError:
        shallow = (root / ".git" / "shallow").exists()
        raise ValueError(f"baseline commit {rev!r} is not in the repository at {root}"
                         + (" (a shallow clone: git fetch --unshallow)" if shallow else "")) from None


def baseline_code(commit: str, cache: Path, root: Path | None = None) -> Path:
    """The baseline's code (``CODE_PATHS`` of ``commit``), extracted once into ``cache/<commit>`` and reused."""
    root = root or code_root()
    target = cache / commit
    if (target / "conformance" / "bench" / "__main__.py").exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    present = [p for p in CODE_PATHS if _git(root, "ls-tree", "--name-only", commit, p)]
    with tempfile.TemporaryDirectory(dir=cache, prefix=".extract-") as tmp:
        archive = Path(tmp) / "code.tar"
        _git(root, "archive", "--format=tar", f"--output={archive}", commit, *present)
        with tarfile.open(archive) as tar:
            try:
                tar.extractall(Path(tmp) / "code", filter="data")
            except TypeError:  # a Python without extraction filters (before 3.10.12 / 3.11.4): our own archive
                tar.extractall(Path(tmp) / "code")
        if not (Path(tmp) / "code" / "conformance" / "bench" / "__main__.py").exists():
            raise ValueError(f"baseline commit {commit[:12]} has no conformance.bench to measure with")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(Path(tmp) / "code", target)
    return target


def default_cache() -> Path:
    return cache_dir() / "bench-baseline"


def tree_commit(root: Path | None = None) -> str | None:
    """HEAD of the tree under test, with ``+dirty`` when its code differs from HEAD; None outside git."""
    root = root or code_root()
    try:
        head = _git(root, "rev-parse", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    except ValueError:
        return None
    return head + ("+dirty" if dirty else "")


# ------------------------------------------------------------------------------------------------ measuring
def measure(*, profile: str, device: str, rounds: int, jobs: int, repeats: int, sample_s: float, threads: int,
            attempted: Sequence[str], baseline_dir: Path, commit: str, case_ids: Sequence[str] | None = None,
            slowdown: Sequence[str] = (), memory: bool = True, seed: int | None = None,
            progress: Callable[[str], None] | None = None, checkpoint: Callable[[dict], None] | None = None,
            decided: Callable[[dict], bool] | None = None) -> dict:
    """``rounds`` processes of the tree and ``rounds`` of the baseline's code, started in pairs (ABBA order), as one
    document: the tree's session (what ``run`` writes), with the baseline's session under ``"against"``.
    ``slowdown`` applies to the tree's rounds only (the experiment's injected regression). Round ``i`` of both
    sides shuffles the cases with the same seed. A failed round is reported and left out. ``decided`` looks at the
    document whenever both sides have as many rounds (a look); when it says yes the run stops there, complete."""
    if rounds < 1 or jobs < 1:
        raise ValueError(f"rounds and jobs must be at least 1, got {rounds} and {jobs}")
    seed = random.SystemRandom().randrange(1_000_000) if seed is None else seed
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    clock = time.perf_counter()
    sides = {"tree": code_root(), "baseline": baseline_dir}
    sessions = {side: {**new_session(profile=profile, device=device, rounds=rounds, jobs=jobs, repeats=repeats,
                                     sample_s=sample_s, threads=threads, seed=seed, started=started,
                                     slowdown=slowdown if side == "tree" else ()),
                       "code": tree_commit() if side == "tree" else commit}
                for side in sides}
    docs: dict[str, list[dict]] = {side: [] for side in sides}

    def document() -> dict:
        for side in sides:
            sessions[side]["duration_s"] = round(time.perf_counter() - clock, 1)
        tree, base = (combine(docs[side], session=sessions[side], session_id=f"{started}/{seed:06d}/{side}",
                              attempted=attempted) for side in sides)
        return {**tree, "against": {"commit": commit, "session": base}}

    def finished(key, result, error, seconds):
        side, i = key
        if not record_round(sessions[side], docs[side], i, result, error, seconds, device):
            if progress:
                progress(f"{side} round {i + 1}/{rounds} failed: {error[:200]}")
            return
        if progress:
            done = sessions["tree"]["rounds"] + sessions["baseline"]["rounds"]
            progress(f"round {done}/{2 * rounds} ({side}) done in {seconds:.0f} s "
                     f"(load {sessions[side]['load'][-1][0]:.2f})")
        if checkpoint and docs["tree"] and docs["baseline"]:
            checkpoint(document())
        looks = len(docs["tree"]) == len(docs["baseline"])
        if decided and looks and decided(document()):
            for meta in sessions.values():
                meta["decided_after"] = meta["rounds"]
            return True
        return False

    # each side's own code first on the path: -m puts the working directory there; the rounds of each side share
    # the small examples its first round drew (a file per code in the session's folder)
    with tempfile.TemporaryDirectory(prefix="conformance-bench-ab-") as tmp:
        env = {**os.environ, "CONFORMANCE_CACHE_DIR": str(cache_dir()), SHARED_EXAMPLES: str(Path(tmp) / "examples")}
        tasks = []
        for i in range(rounds):  # ABBA: pair i starts the tree first when i is even, the baseline first when odd
            for side in (("tree", "baseline") if i % 2 == 0 else ("baseline", "tree")):
                command = round_command(profile=profile, device=device, seed=seed + i,
                                        out=Path(tmp) / f"{side}-{i:03d}.json", repeats=repeats, sample_s=sample_s,
                                        threads=threads, subjects=None, case_ids=case_ids,
                                        slowdown=slowdown if side == "tree" else (), memory=memory and i == 0)
                # every option given is one the round command had when this file came
                tasks.append(((side, i), [*command, "--quiet"], sides[side]))
        run_rounds(tasks, jobs=jobs, folder=Path(tmp), finished=finished, env=env)  # until done or decided
    for side in sides:
        if not docs[side]:
            raise RuntimeError(f"every {side} round failed: "
                               + "; ".join(f["error"][:200] for f in sessions[side]["failed_rounds"]))
    final = document()
    if "decided_after" in sessions["tree"]:  # stopped at a look: every round it needed is there
        final["complete"] = final["against"]["session"]["complete"] = True
    return final


# ------------------------------------------------------------------------------------------------ judging
@dataclass
class Verdict:
    rows: list[Row]
    alpha: float
    rounds: int                 # rounds per side (the most of any case)
    gated: int
    commit: str
    margin: float
    planned: int = 0            # rounds a side the run was planned for
    decided: bool = False       # no gated case can be rejected in the planned rounds, whatever they bring

    @property
    def failed(self) -> bool:
        return any(row.verdict == REGRESSION for row in self.rows)


def _log_samples(entry: dict) -> list[float]:
    return [math.log(v) for values in entry["samples"].values() for v in values]


def _seed(case_id: str) -> int:
    return zlib.crc32(case_id.encode())


def noise_rounds(tree: Sequence[float], base: Sequence[float]) -> list[float]:
    """A case's noise: its first ``MIN_ROUNDS`` rounds of each side around that side's median (a slowed tree moves its
    median, not its spread), the pool the simulated runs of :func:`detection_power` resample."""
    sides = (base[:MIN_ROUNDS], tree[:MIN_ROUNDS])
    return [v - statistics.median(side) for side in sides for v in side]


def detection_power(baseline: Sequence[float], *, rounds: int, margin: float, effect: float, threshold_p: float,
                    trials: int = TRIALS, seed: int = 0) -> float:
    """The share of simulated runs of ``rounds`` rounds a side in which a case slowed by ``effect`` (a log ratio) is
    rejected at ``threshold_p``: both sides resampled from ``baseline`` (a case's noise, :func:`noise_rounds`, around
    its median), the tree's moved up by ``effect``, the test as :func:`judge` runs it."""
    return _power(tuple(baseline), rounds, margin, effect, threshold_p, trials, seed)


@lru_cache(maxsize=8192)  # judging many documents with the same baseline rounds asks the same questions
def _power(baseline: tuple[float, ...], rounds: int, margin: float, effect: float, threshold_p: float, trials: int,
           seed: int) -> float:
    rng = random.Random(seed)
    middle = statistics.median(baseline)
    residuals = [v - middle for v in baseline]
    hits = 0
    for _ in range(trials):
        tree = [effect + rng.choice(residuals) - margin for _ in range(rounds)]
        base = [rng.choice(residuals) for _ in range(rounds)]
        hits += stats.mann_whitney_greater(tree, base)[1] <= threshold_p
    return hits / trials


def planned_rounds(results: dict) -> int:
    """The rounds a side the run of an A/B document was planned for (at least those it measured)."""
    sides = (results, results["against"]["session"])
    planned = [meta.get("rounds_planned", 0) for doc in sides for meta in doc.get("sessions", {}).values()]
    measured = [len(_log_samples(e)) for doc in sides for e in doc["entries"].values()]
    return max(planned + measured + [0])


def judge(results: dict, *, alpha: float, detect: float, power: float, margin: float | None = None,
          planned: int | None = None) -> Verdict:
    """The verdict on an A/B document (:func:`measure`), complete or stopped at a look: per case in both sides, the
    one-sided exact rank test of the tree's rounds lowered by ``margin`` against the baseline's, and Holm over the
    gated cases. Which cases are gated depends on the first ``MIN_ROUNDS`` rounds of both sides only, with the noise
    simulated for ``planned`` rounds a side (default: what the run planned). When no gated case can be rejected any
    more in ``planned`` rounds the run is decided (``decided``) and nothing is a regression; else Holm judges the
    rounds measured, which is the planned test once they are all there."""
    margin = MARGIN if margin is None else margin
    planned = planned_rounds(results) if planned is None else planned
    against = results.get("against") or {}
    base = against.get("session") or {"entries": {}, "skipped": {}, "attempted": []}
    tree_entries, base_entries = results["entries"], base["entries"]
    common = [c for c in tree_entries if c in base_entries]
    threshold = alpha / max(1, len(common))
    log_margin = math.log1p(margin)
    rows: dict[str, Row] = {}
    now: dict[str, list[float]] = {}
    ref: dict[str, list[float]] = {}
    for case_id, entry in tree_entries.items():
        now[case_id] = _log_samples(entry)
        row = rows[case_id] = Row(case_id, **_labels(case_id, entry), old=None,
                                  new=math.exp(statistics.median(now[case_id])), verdict=NEW,
                                  rounds=len(now[case_id]), mem_subject=entry.get("mem_subject"),
                                  mem_reference=entry.get("mem_reference"))
        if case_id not in base_entries:
            row.reason = f"not measured by the baseline commit's code ({against.get('commit', '?')[:12]})"
            continue
        ref[case_id] = _log_samples(base_entries[case_id])
        row.old, row.margin = math.exp(statistics.median(ref[case_id])), margin
        fewest = min(len(now[case_id]), len(ref[case_id]))
        if fewest < MIN_ROUNDS:
            row.verdict, row.reason = NOT_GATED, f"measured in {fewest} round(s) on one side, {MIN_ROUNDS} needed"
            continue
        best = stats.smallest_p(planned, planned)
        if best > threshold:
            row.verdict = NOT_GATED
            row.reason = (f"too few rounds: {planned} rounds a side give p >= {best:.1e}, "
                          f"Holm's first step over {len(common)} cases needs {threshold:.1e}")
            continue
        row.power = detection_power(noise_rounds(now[case_id], ref[case_id]), rounds=planned, margin=log_margin,
                                    effect=math.log1p(detect), threshold_p=threshold, seed=_seed(case_id))
    # A slowed subject is caught when any of its cases is: a subject whose cases together find a ``detect``
    # slowdown in fewer than ``power`` of simulated runs is not gated (its cases' rounds are drawn independently).
    by_subject: dict[str, list[Row]] = {}
    for row in rows.values():
        if row.power is not None:
            by_subject.setdefault(row.subject, []).append(row)
    for subject, members in by_subject.items():
        together = 1.0 - math.prod(1.0 - r.power for r in members)
        for row in members:
            spread = stats.robust_sd(noise_rounds(now[row.id], ref[row.id]))
            alone = (f"a {detect:.0%} slowdown is found in {row.power:.0%} of simulated runs by this case"
                     + (f", in {together:.1%} by the subject's {len(members)} cases" if len(members) > 1 else "")
                     + f" (sd between rounds {spread:.1%} in the first {MIN_ROUNDS} rounds of each side)")
            if together < power:
                row.verdict, row.reason = NOT_GATED, f"too noisy: {alone}"
            elif row.power < power:
                row.reason = f"gated with its subject: {alone}"
    gated = [c for c, row in rows.items() if row.verdict == NEW and row.power is not None]
    slower, faster, open_cases = {}, {}, []
    for case_id in gated:
        u, rows[case_id].p = stats.mann_whitney_greater([v - log_margin for v in now[case_id]], ref[case_id])
        slower[case_id] = rows[case_id].p
        faster[case_id] = stats.mann_whitney_greater([v - log_margin for v in ref[case_id]], now[case_id])[1]
        seen = (len(now[case_id]), len(ref[case_id]))
        if stats.can_still_reject(u, seen, (max(planned, seen[0]), max(planned, seen[1])), alpha / len(gated)):
            open_cases.append(case_id)
    # decided: no case can reach Holm's first step (alpha / gated) in the planned rounds, so the planned test rejects
    # nothing; nor does Holm on the rounds so far (a case's p now is at least the best it can end with)
    decided = bool(gated) and not open_cases
    regressions = stats.holm(slower, alpha=alpha)
    speedups = stats.holm(faster, alpha=alpha)
    for case_id in gated:
        rows[case_id].verdict = REGRESSION if case_id in regressions else FASTER if case_id in speedups else OK
    attempted = set(results.get("attempted", ()))
    for case_id, old in base_entries.items():
        if case_id in attempted and case_id not in tree_entries:
            rows[case_id] = Row(case_id, **_labels(case_id, old), old=old["ratio"], new=None, verdict=MISSING,
                                reason=results.get("skipped", {}).get(case_id, "not measured"))
    order = {REGRESSION: 0, MISSING: 1, NOT_GATED: 2, FASTER: 3, NEW: 4, OK: 5}
    ordered = sorted(rows.values(), key=lambda r: (order[r.verdict], r.library, r.subject, r.size, r.mode))
    most = max([r.rounds for r in ordered] or [0])
    return Verdict(ordered, alpha, most, len(gated), str(against.get("commit", "")), margin, planned, decided)


def summary(verdict: Verdict) -> str:
    counts: dict[str, int] = {}
    for row in verdict.rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    shown = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: kv[0] != REGRESSION))
    outcome = "FAIL" if verdict.failed else "nothing judged" if not verdict.gated else "pass"
    early = (f" (of {verdict.planned}: no gated case can be rejected any more)"
             if verdict.decided and verdict.rounds < verdict.planned else "")
    return (f"conformance.bench gate: {outcome} against commit {verdict.commit[:12]} measured beside the tree: "
            f"{shown}; {verdict.rounds} rounds a side{early}, margin {verdict.margin:.0%}, Holm over {verdict.gated} "
            f"gated cases at family-wise alpha {verdict.alpha:g}")


def is_ab(results: dict) -> bool:
    """Whether a results document was measured against a baseline commit (has the baseline's session)."""
    return isinstance(results.get("against"), dict) and isinstance(results["against"].get("session"), dict)


def check_against(results: dict, path: Path | str) -> None:
    """A results file's baseline session, checked as :func:`conformance.bench.gate.load` checks the tree's: a
    ValueError of one line naming the file and what is wrong."""
    base = results["against"]["session"]
    if not isinstance(base.get("entries"), dict):
        raise ValueError(f"{path}: the baseline commit's session has no entries")
    for case_id, entry in base["entries"].items():
        samples = entry.get("samples") if isinstance(entry, dict) else None
        values = [v for vs in samples.values() for v in vs] if isinstance(samples, dict) and all(
            isinstance(vs, list) for vs in samples.values()) else []
        if not values or not all(positive_number(v) for v in values):
            raise ValueError(f"{path}: the baseline commit's entry {case_id!r} has no positive finite samples")
