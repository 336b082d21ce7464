"""Judging a session of rounds against the baseline: files, merging sessions into a baseline, verdicts, the table.

A session (``python -m conformance.bench run`` or ``gate``) and a baseline (``accept``) have one layout::

    {"schema": 2, "kind": "conformance.bench", "profile": "quick", "device": "cpu", "env": {...},
     "sessions": {"<session id>": {"machine": "<CPU model or GPU>", "rounds": 8, "clock": "cpu", "load": ...}},
     "attempted": ["<subject>|<size>|<mode>", ...],
     "entries": {"<subject>|<size>|<mode>": {"subject", "library", "spec", "size", "mode", "against",
                 "ratio" (median of all samples, for reading), "samples": {"<session id>": [ratio per round]},
                 "subject_s", "reference_s", "mem_subject", "mem_reference"}},
     "skipped": {"<subject>|<size>|<mode>": "reason"}}

Schema-1 files (one process per run, from earlier versions) are read as sessions of one round. The verdict
(:func:`judge_session`, docs/benchmarks.md "The gate") is a one-sided exact rank test per case with a margin
from the case's own measured noise, Holm's correction over all gated cases, and machines told apart by their
ratios; a regression is never decided by an absolute time.
"""

from __future__ import annotations

import json
import math
import statistics
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..core.extras import tabulate
from . import stats
from .rounds import SCHEMA, machine_label, positive_number, read_document

#: Chosen from the noise experiment (docs/benchmarks.md, scripts/bench-noise.py): a session is ROUNDS fresh
#: processes, each timing every case in REPEATS interleaved blocks of four samples of about SAMPLE_S seconds; the
#: rank tests of all cases together raise a false alarm in at most ALPHA of the gate runs of an unchanged tree.
ROUNDS = 8
REPEATS = 3
SAMPLE_S = 0.015
ALPHA = 0.01

#: The promise: a subject made DETECT slower is caught in at least POWER of gate runs; a case whose own noise does
#: not allow that is reported as not gated. Its margin (the change it tolerates) is Z_SESSION standard deviations
#: of its shift between sessions (its own between-session spread and HOST_SD together), at least MARGIN_FLOOR, plus
#: Z_LEVEL standard errors of the reference level. HOST_SD is the spread of a case's ratio between two hosts that
#: the gate takes for one machine (one CPU label, ratios alike): per case, beyond the common offset, measured on an
#: unchanged tree (docs/benchmarks.md, "Hosts"); no baseline records every host a gate will run on. A
#: case's own session spread comes from a few sessions and can be small by chance: a smaller one is raised towards
#: its round spread times KAPPA (the KAPPA_QUANTILE of session spread / round spread over all cases of the
#: baseline), as if PRIOR_SESSIONS more sessions had shown that; a larger one is kept.
DETECT = 0.25
POWER = 0.95
MARGIN_FLOOR = 0.03
HOST_SD = 0.028
Z_SESSION = 3.0
Z_LEVEL = 2.0
KAPPA_QUANTILE = 0.75
PRIOR_SESSIONS = 2
#: A run resembles a recorded machine when its median deviation from that machine's ratios is at most MATCH_FACTOR
#: times the largest such deviation of one recorded session from the others of its machine.
MATCH_FACTOR = 1.5
MIN_MATCH_CASES = 20       # cases needed to tell machines apart by ratios; fewer: by the machine's name
MIN_BASELINE_ROUNDS = 12   # round samples of a case in the baseline needed to gate it
MIN_ROUNDS = 3             # rounds of a case in the judged session needed to judge it
TRIALS = 400               # simulated runs per case for its detection power

OK, FASTER, NEW, MISSING, REGRESSION = "ok", "faster", "new", "missing", "REGRESSION"
NOT_GATED = "not gated"


# ------------------------------------------------------------------------------------------------------- files
def _upgrade(data: dict, path: Path | str) -> dict:
    """A schema-1 document (one process, or a baseline ``accept`` merged from several) as a schema-2 one: each
    process becomes a session of one round (``run_ratios`` of a merged baseline, else the document's ``ratio``)."""
    device = str(data.get("device", "cpu"))
    env = data.get("env") if isinstance(data.get("env"), dict) else {}
    started = str(data.get("started", ""))
    runs = max([len(e.get("run_ratios") or [e["ratio"]]) for e in data["entries"].values()] or [1])
    session_ids = [f"{started}/schema1-{i}" for i in range(runs)]
    sessions = {sid: {"machine": machine_label(env, device), "started": started, "rounds": 1, "legacy": True,
                      "builds": data.get("builds", 1), "repeats": data.get("repeats"),
                      "sample_s": data.get("sample_s"), "source": f"schema 1 ({Path(path).name})"}
                for sid in session_ids}
    entries = {}
    for case_id, entry in data["entries"].items():
        ratios = entry.get("run_ratios") or [entry["ratio"]]
        if not all(positive_number(r) for r in ratios):
            raise ValueError(f"{path}: entry {case_id!r} has a run ratio that is not positive and finite")
        entries[case_id] = {**{k: v for k, v in entry.items() if k not in ("run_ratios", "ratios")},
                            "samples": {sid: [r] for sid, r in zip(session_ids, ratios)}}
    return {**{k: v for k, v in data.items() if k not in ("entries", "runs")}, "schema": SCHEMA,
            "sessions": sessions, "entries": entries, "upgraded_from": 1}


def load(path: Path | str) -> dict:
    """A session (``run``, ``gate``) or baseline (``accept``) file as schema 2: sessions, and per case the samples
    (one ratio per round) of each session. Schema-1 files are upgraded. Anything malformed is a ValueError whose
    message is one line naming the file and what is wrong."""
    data = read_document(path)
    if data["schema"] == 1:
        return _upgrade(data, path)
    sessions = data.get("sessions")
    if not isinstance(sessions, dict) or not sessions:
        raise ValueError(f"{path}: 'sessions' missing or empty")
    for sid, session in sessions.items():
        if not isinstance(session, dict) or not isinstance(session.get("machine"), str):
            raise ValueError(f"{path}: session {sid!r} has no machine label")
    for case_id, entry in data["entries"].items():
        samples = entry.get("samples")
        if not isinstance(samples, dict) or not samples:
            raise ValueError(f"{path}: entry {case_id!r} has no samples")
        for sid, values in samples.items():
            if sid not in sessions:
                raise ValueError(f"{path}: entry {case_id!r} has samples of an unknown session {sid!r}")
            if not isinstance(values, list) or not values or not all(positive_number(v) for v in values):
                raise ValueError(f"{path}: entry {case_id!r}, session {sid!r}: samples are not positive finite "
                                 "numbers")
    return data


def write(path: Path | str, data: dict) -> None:
    from ..core.fileio import atomic_write

    atomic_write(path, json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n")


def without_cases(baseline: dict, case_ids: set[str]) -> dict:
    """The baseline with every sample of ``case_ids`` dropped (on every machine): how a wanted change of speed is
    accepted, since the old samples no longer describe the code. Sessions left without samples are dropped."""
    entries = {c: e for c, e in baseline["entries"].items() if c not in case_ids}
    used = {sid for e in entries.values() for sid in e["samples"]}
    return {**baseline, "entries": entries, "sessions": {s: v for s, v in baseline["sessions"].items() if s in used}}


def merge(docs: Sequence[dict]) -> dict:
    """One baseline from sessions and baselines of one device: every session's samples pooled, per case, with the
    session (and its machine) each came from. ``ratio`` is the median of all samples, for reading only."""
    if not docs:
        raise ValueError("no results to merge")
    devices = {doc["device"] for doc in docs}
    if len(devices) != 1:
        raise ValueError(f"results from different devices cannot make one baseline: {sorted(devices)}")
    latest = max(docs, key=lambda doc: str(doc.get("started", "")))
    sessions: dict[str, dict] = {}
    for doc in docs:
        for sid, session in doc["sessions"].items():
            sessions.setdefault(sid, {k: v for k, v in session.items() if k != "env"})
    entries: dict[str, dict] = {}
    for doc in sorted(docs, key=lambda d: str(d.get("started", ""))):  # the latest labels and memory win
        for case_id, entry in doc["entries"].items():
            merged = entries.setdefault(case_id, {"samples": {}})
            samples = merged["samples"]
            labels = {k: v for k, v in entry.items()
                      if k not in ("samples", "blocks", "ratios", "run_ratios", "wall_samples", "wall_ratios")}
            merged.update(labels)
            for sid, values in entry["samples"].items():
                samples.setdefault(sid, list(values))
    gaps: dict[str, list[float]] = {}
    for doc in docs:
        for case_id, entry in doc["entries"].items():
            for sid, walls in (entry.get("wall_samples") or {}).items():
                cpus = entry["samples"].get(sid, [])
                pairs = [math.log(c / w) for c, w in zip(cpus, walls) if w]
                if pairs and doc["sessions"][sid].get("clock") == "cpu":
                    gaps.setdefault(case_id, []).append(statistics.median(pairs))
    for case_id, entry in entries.items():
        pooled = [v for values in entry["samples"].values() for v in values]
        entry["ratio"] = round(statistics.median(pooled), 5)
        if case_id in gaps:  # log(CPU-time ratio / wall-clock ratio): how far a wall-clock level may be off
            entry["clock_gap"] = round(statistics.median(gaps[case_id]), 5)
    attempted = sorted({i for doc in docs for i in doc["attempted"]})
    skipped = {i: r for doc in docs for i, r in doc["skipped"].items() if i not in entries}
    return {"schema": SCHEMA, "kind": "conformance.bench", "role": "baseline", "device": latest["device"],
            "profile": "+".join(sorted({str(doc.get("profile")) for doc in docs})), "started": latest.get("started"),
            "env": latest.get("env", {}), "sessions": dict(sorted(sessions.items())), "attempted": attempted,
            "entries": dict(sorted(entries.items())), "skipped": skipped}


# ----------------------------------------------------------------------------------------------------- verdicts
def _logs(entry: dict) -> dict[str, list[float]]:
    return {sid: [math.log(v) for v in values] for sid, values in entry["samples"].items()}


@dataclass
class Match:
    """Which recorded machines the judged session resembles, by its ratios (not by its CPU's name)."""

    machines: tuple[str, ...]       # the recorded machines it matches (empty: none)
    scores: dict[str, float]        # per recorded machine: median over cases of |log(now / machine's ratio)|
    tolerance: float
    best: str | None
    by_name: bool = False           # too few cases to compare ratios: matched by the machine's name

    def describe(self) -> str:
        if not self.scores:
            return "no recorded machine"
        if self.by_name:
            found = repr(self.machines[0]) if self.machines else "no recorded machine of its name"
            return f"{found} (by name: fewer than {MIN_MATCH_CASES} cases to compare ratios)"
        shown = ", ".join(f"{m!r} {v:.1%}" for m, v in sorted(self.scores.items(), key=lambda kv: kv[1]))
        if self.machines:
            return f"like {' and '.join(repr(m) for m in self.machines)} (median deviation {shown}; within " \
                   f"{self.tolerance:.1%})"
        return f"like no recorded machine (median deviation {shown}; more than {self.tolerance:.1%})"


def _centers(entry: dict, sessions: dict, exclude: str | None = None) -> dict[str, float]:
    """Per machine, the median of a case's samples (log), leaving out session ``exclude``."""
    pooled: dict[str, list[float]] = {}
    for sid, values in _logs(entry).items():
        if sid != exclude:
            pooled.setdefault(sessions[sid]["machine"], []).extend(values)
    return {machine: statistics.median(values) for machine, values in pooled.items()}


def match_machine(baseline: dict, now: dict[str, float], label: str | None = None) -> Match:
    """Compare the session's median log ratio per case (``now``) with each recorded machine's.

    A machine's score is the median over cases of the absolute difference, so one slower subject (two cases) does not
    move it. The session is like the closest machine when that score is within the tolerance: MATCH_FACTOR times the
    largest score one recorded session has against the rest of its machine's sessions, on any machine (sessions of
    at least MIN_ROUNDS rounds where a machine has two, else its single-round ones). Other machines within
    MATCH_FACTOR of the closest score match too. With fewer than
    MIN_MATCH_CASES cases in common the ratios cannot tell machines apart: the recorded machine of the session's
    own ``label`` (its CPU model) is taken, if there is one."""
    entries, sessions = baseline["entries"], baseline["sessions"]
    common = [c for c in now if c in entries]
    centers = {c: _centers(entries[c], sessions) for c in common}
    machines = sorted({m for per_case in centers.values() for m in per_case})
    scores = {}
    for machine in machines:
        deviations = [abs(now[c] - centers[c][machine]) for c in common if machine in centers[c]]
        if deviations:
            scores[machine] = statistics.median(deviations)
    by_machine: dict[str, list[str]] = {}
    for sid, session in sessions.items():
        by_machine.setdefault(session["machine"], []).append(sid)
    tolerances = {}
    for machine, sids in by_machine.items():
        full = [sid for sid in sids if not sessions[sid].get("legacy") and sessions[sid].get("rounds", 1) >= MIN_ROUNDS]
        sids = full if len(full) >= 2 else sids
        if len(sids) < 2:
            continue
        own = []
        for sid in sids:
            deviations = []
            for c in common:
                logs = _logs(entries[c]).get(sid)
                rest = _centers(entries[c], sessions, exclude=sid).get(machine)
                if logs and rest is not None:
                    deviations.append(abs(statistics.median(logs) - rest))
            if deviations:
                own.append(statistics.median(deviations))
        if own:
            tolerances[machine] = MATCH_FACTOR * max(own)
    # One tolerance for every machine, the largest: how far a session strays from the rest of its machine's
    # depends on the load it ran under more than on the machine, and a machine recorded only idle would otherwise
    # not recognise itself under load.
    tolerance = max(tolerances.values(), default=0.0)
    best = min(scores, key=scores.get) if scores else None
    matched: tuple[str, ...] = ()
    if best is not None and scores[best] <= tolerance:
        matched = tuple(m for m, v in sorted(scores.items(), key=lambda kv: kv[1])
                        if v <= MATCH_FACTOR * scores[best] and v <= tolerance)
    if len(common) < MIN_MATCH_CASES:  # a median over a handful of cases moves with one slower subject
        return Match((label,) if label in scores else (), scores, tolerance, best, by_name=True)
    return Match(matched, scores, tolerance, best)


@dataclass
class CaseModel:
    """What the baseline says about one case, for the machines the session matched."""

    reference: float | None = None      # log ratio the session is compared with
    lowest: float | None = None         # the lowest level of the machines it may be (detection is hardest there)
    samples: list[float] | None = None  # baseline round samples moved to that level (log)
    residuals: list[float] | None = None
    sd_round: float = 0.0               # spread between rounds (processes) of one session
    sd_session: float = 0.0             # spread of whole sessions on one machine, beyond the rounds' spread
    sd_session_own: float | None = None  # the case's own estimate of it (None: fewer than two sessions)
    sd_shift: float = 0.0               # what a judged session's level may be off by: sessions and hosts together
    machine_spread: float = 0.0         # largest minus smallest machine level
    margin: float = 0.0                 # tolerated log increase
    power: float | None = None          # share of simulated runs catching a DETECT slowdown
    reason: str = ""                    # why it is not gated, if it is not


def case_model(entry: dict, sessions: dict, match: Match, *, kappa: float | None = None,
               current_clock: str | None = None) -> CaseModel:
    """The reference level, the reference samples and the margin of a case (docs/benchmarks.md, "The gate").
    ``kappa``: the floor of the session spread as a multiple of the round spread (None: only the spread itself,
    the first pass that measures kappa)."""
    logs = _logs(entry)
    centers = _centers(entry, sessions)
    model = CaseModel(machine_spread=max(centers.values()) - min(centers.values()))
    residuals, effects, sizes = [], [], []
    for sid, values in logs.items():
        session = sessions[sid]
        if session.get("legacy") or len(values) < MIN_ROUNDS:
            continue
        middle = statistics.median(values)
        residuals += [v - middle for v in values]
        effects.append(middle - centers[session["machine"]])
        sizes.append(len(values))
    rounds_known = len(residuals)
    if rounds_known < MIN_BASELINE_ROUNDS:
        model.reason = f"the baseline has {rounds_known} round(s) of it, {MIN_BASELINE_ROUNDS} needed"
        return model
    model.sd_round = stats.robust_sd(residuals)
    machines_with_rounds = len({sessions[sid]["machine"] for sid, values in logs.items()
                                if not sessions[sid].get("legacy") and len(values) >= MIN_ROUNDS})
    dof = len(effects) - machines_with_rounds
    if dof >= 1:
        spread = sum(e * e for e in effects) / dof - (math.pi / 2) * model.sd_round ** 2 / statistics.mean(sizes)
        model.sd_session_own = math.sqrt(max(0.0, spread))
    if kappa is None:
        return model
    own, prior = model.sd_session_own or 0.0, kappa * model.sd_round
    pooled = (max(dof, 0) * own ** 2 + PRIOR_SESSIONS * prior ** 2) / (max(dof, 0) + PRIOR_SESSIONS)
    model.sd_session = math.sqrt(max(own ** 2, pooled))
    model.sd_shift = math.hypot(model.sd_session, HOST_SD)
    margin = max(MARGIN_FLOOR, Z_SESSION * model.sd_shift)

    def level_error(machine: str) -> float:
        """Z_LEVEL standard errors of a machine's level (a median of its sessions' samples), plus the gap between
        the clocks when its samples were timed by another clock than the session's (wall against CPU time)."""
        samples = [v for sid, values in logs.items() if sessions[sid]["machine"] == machine for v in values]
        n_sessions = sum(1 for sid in logs if sessions[sid]["machine"] == machine)
        se = 1.2533 * math.sqrt(model.sd_session ** 2 / n_sessions + model.sd_round ** 2 / len(samples))
        clocks = {sessions[sid].get("clock", "wall") for sid in logs if sessions[sid]["machine"] == machine}
        gap = abs(entry.get("clock_gap", 0.0)) if current_clock and clocks != {current_clock} else 0.0
        return Z_LEVEL * se + gap

    usable = [m for m in match.machines if m in centers]
    if match.machines and not usable:  # e.g. a wanted change accepted on another machine (accept --replace-cases)
        model.reason = (f"no samples of it from {' or '.join(repr(m) for m in match.machines)}: add a session "
                        "of this machine to the baseline (accept --add)")
        return model
    if usable:
        level = max(centers[m] for m in usable)
        margin += max(level_error(m) for m in usable)
    else:  # an unrecognised machine: the highest recorded level, the machines' spread and its typical deviation
        level = max(centers.values())
        margin += max(level_error(m) for m in centers) + model.machine_spread + match.scores.get(match.best, 0.0)
    model.reference = level
    model.lowest = min(centers[m] for m in usable) if usable else min(centers.values())
    model.margin = margin
    model.residuals = residuals
    model.samples = [v - centers[sessions[sid]["machine"]] + level for sid, values in logs.items()
                     if not sessions[sid].get("legacy") and len(values) >= MIN_ROUNDS for v in values]
    return model


def session_kappa(models: Sequence[CaseModel]) -> float:
    """The KAPPA_QUANTILE of (own session spread / round spread) over the cases that have both; 1 when none has."""
    ratios = sorted(m.sd_session_own / m.sd_round for m in models
                    if m.sd_session_own is not None and m.sd_round > 0)
    if not ratios:
        return 1.0
    return ratios[min(len(ratios) - 1, int(KAPPA_QUANTILE * len(ratios)))]


@dataclass
class Row:
    id: str
    subject: str
    library: str
    size: str
    mode: str
    against: str
    old: float | None                 # the reference ratio
    new: float | None                 # median ratio of the session's rounds
    verdict: str
    rounds: int = 0
    margin: float | None = None
    p: float | None = None
    power: float | None = None
    mem_subject: int | None = None
    mem_reference: int | None = None
    reason: str = ""
    model: CaseModel | None = field(default=None, repr=False)

    @property
    def change(self) -> float | None:
        return None if self.old is None or self.new is None else self.new / self.old - 1.0


@dataclass
class Verdict:
    rows: list[Row]
    match: Match
    alpha: float
    rounds: int
    gated: int

    @property
    def failed(self) -> bool:
        return any(row.verdict == REGRESSION for row in self.rows)


def _labels(case_id: str, entry: dict | None) -> dict:
    subject, size, mode = case_id.split("|")
    entry = entry or {}
    return dict(subject=subject, library=str(entry.get("library", subject.split(".", 1)[0])), size=size, mode=mode,
                against=str(entry.get("against", "spec")))


def _seed(case_id: str) -> int:
    return zlib.crc32(case_id.encode())


def judge_session(baseline: dict, results: dict, *, alpha: float = ALPHA, detect: float = DETECT,
                  power: float = POWER) -> Verdict:
    """The gate's verdict on one session (docs/benchmarks.md, "The gate"):

    1. which recorded machines the session resembles (:func:`match_machine`);
    2. per case the reference samples and margin (:func:`case_model`) and whether a ``detect`` slowdown would be
       found in ``power`` of runs at the strictest Holm level alpha / (cases); if not, ``not gated``;
    3. per gated case the exact one-sided Mann-Whitney p-value of "the session's rounds, lowered by the margin,
       exceed the reference samples"; Holm's procedure over the gated cases at ``alpha`` decides the regressions.
    Mirrored, the same test names the cases that became faster (reported, never failing)."""
    if baseline["device"] != results["device"]:
        raise ValueError(f"the session was measured on {results['device']}, the baseline on {baseline['device']}")
    if len(results["sessions"]) != 1:
        raise ValueError(f"the gate judges one session, this file has {len(results['sessions'])}")
    (session,) = results["sessions"].values()
    old_entries, new_entries = baseline["entries"], results["entries"]
    if not set(old_entries) & set(new_entries):
        raise ValueError(f"the baseline has none of the {len(new_entries)} measured cases (profile "
                         f"{results.get('profile')}, device {results['device']})")
    now = {c: [math.log(v) for values in e["samples"].values() for v in values] for c, e in new_entries.items()}
    match = match_machine(baseline, {c: statistics.median(v) for c, v in now.items()}, session.get("machine"))
    rounds = int(session.get("rounds") or max(len(v) for v in now.values()))
    first = [case_model(old_entries[c], baseline["sessions"], match) for c in new_entries if c in old_entries]
    kappa = session_kappa(first)
    models = {c: case_model(old_entries[c], baseline["sessions"], match, kappa=kappa,
                            current_clock=session.get("clock")) for c in new_entries if c in old_entries}
    candidates = [c for c, m in models.items() if not m.reason and len(now[c]) >= MIN_ROUNDS]
    threshold = alpha / max(1, len(candidates))
    rows: dict[str, Row] = {}
    for case_id, entry in new_entries.items():
        old = old_entries.get(case_id)
        row = Row(case_id, **_labels(case_id, entry), old=None, new=math.exp(statistics.median(now[case_id])),
                  verdict=NEW, rounds=len(now[case_id]), mem_subject=entry.get("mem_subject"),
                  mem_reference=entry.get("mem_reference"))
        rows[case_id] = row
        if old is None:
            continue
        model = row.model = models[case_id]
        if model.reference is not None:
            row.old, row.margin = math.exp(model.reference), math.exp(model.margin) - 1
        if model.reason:
            row.verdict, row.reason = NOT_GATED, model.reason
            continue
        if len(now[case_id]) < MIN_ROUNDS:
            row.verdict, row.reason = NOT_GATED, f"measured in {len(now[case_id])} round(s), {MIN_ROUNDS} needed"
            continue
        row.power = stats.detection_power(
            reference=model.samples, residuals=model.residuals, session_sd=model.sd_shift,
            level=model.lowest,
            margin=model.margin, rounds=len(now[case_id]), threshold_p=threshold, effect=math.log1p(detect),
            trials=TRIALS, seed=_seed(case_id))
        if row.power < power:
            row.verdict = NOT_GATED
            row.reason = (f"too noisy: a {detect:.0%} slowdown is found in {row.power:.0%} of simulated runs "
                          f"(sd between rounds {model.sd_round:.1%}, between sessions {model.sd_session:.1%}, "
                          f"between hosts {HOST_SD:.1%}, between machines {model.machine_spread:.1%}, margin "
                          f"{row.margin:.1%})")
    gated = [c for c, row in rows.items() if row.verdict == NEW and c in models]
    slower, faster = {}, {}
    for case_id in gated:
        model = models[case_id]
        _, rows[case_id].p = stats.mann_whitney_greater([v - model.margin for v in now[case_id]], model.samples)
        slower[case_id] = rows[case_id].p
        faster[case_id] = stats.mann_whitney_greater(model.samples, [v + model.margin for v in now[case_id]])[1]
    regressions = stats.holm(slower, alpha=alpha)
    speedups = stats.holm(faster, alpha=alpha)
    for case_id in gated:
        rows[case_id].verdict = REGRESSION if case_id in regressions else FASTER if case_id in speedups else OK
    attempted = set(results["attempted"])
    for case_id, old in old_entries.items():
        if case_id in attempted and case_id not in new_entries:
            rows[case_id] = Row(case_id, **_labels(case_id, old), old=old["ratio"], new=None, verdict=MISSING,
                                reason=results["skipped"].get(case_id, "not measured"))
    order = {REGRESSION: 0, MISSING: 1, NOT_GATED: 2, FASTER: 3, NEW: 4, OK: 5}
    ordered = sorted(rows.values(), key=lambda r: (order[r.verdict], r.library, r.subject, r.size, r.mode))
    return Verdict(ordered, match, alpha, rounds, len(gated))


def nothing_gated(verdict: Verdict) -> str:
    """Why a verdict gates no case (empty when it gates some): one line."""
    if verdict.gated:
        return ""
    reasons = sorted({r.reason for r in verdict.rows if r.verdict == NOT_GATED})
    return "no case can be gated against this baseline: " + (reasons[0] if reasons else "no case in common")


# -------------------------------------------------------------------------------------------------------- table
def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / 2**20:.1f}"


def table(verdict: Verdict) -> str:
    """The gate's table: reference ratio, the session's median ratio, change, tolerated margin, p-value, verdict
    (the reason's first words; :func:`notes` has it whole), peak memory."""
    body = []
    for r in verdict.rows:
        memory = "" if r.mem_subject is None and r.mem_reference is None \
            else f"{_mib(r.mem_subject)} / {_mib(r.mem_reference)}"
        body.append([r.subject, r.size, r.mode, f"/{r.against}", _ratio(r.old), _ratio(r.new),
                     "" if r.change is None else f"{r.change:+.1%}",
                     "" if r.margin is None else f"{r.margin:.1%}",
                     "" if r.p is None else f"{r.p:.1e}",
                     r.verdict + (f" ({r.reason.split(':')[0]})" if r.reason else ""), memory])
    return tabulate(body, ["subject", "size", "mode", "vs", "ratio was", "ratio now", "change", "margin", "p",
                           "verdict", "peak MiB subject / ref"], tablefmt="simple", disable_numparse=True)


def notes(verdict: Verdict) -> str:
    """Why each case that is not judged is not: one line per case, below the table."""
    return "\n".join(f"{r.verdict}: {r.id}: {r.reason}" for r in verdict.rows if r.reason)


def summary(verdict: Verdict, *, baseline: str = "") -> str:
    counts: dict[str, int] = {}
    for row in verdict.rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    shown = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: kv[0] != REGRESSION))
    where = f" against {baseline}" if baseline else ""
    outcome = "FAIL" if verdict.failed else "nothing judged" if not verdict.gated else "pass"
    return (f"conformance.bench gate: {outcome}{where}: {shown}; {verdict.rounds} "
            f"rounds, Holm over {verdict.gated} gated cases at family-wise alpha {verdict.alpha:g}; machine "
            f"{verdict.match.describe()}")
