"""The gate's looks (conformance.bench.ab, stats.can_still_reject): a run stops as soon as no gated case can be
rejected any more in the planned rounds, which is exact (checked against every continuation on small samples), and
which never changes the planned test's verdict (no alpha is spent before the last look)."""

from __future__ import annotations

import itertools
import json
import math
import random
import sys

import pytest

from conformance.bench import ab, gate, rounds, stats

from .test_ab import ab_doc, drawn, judged
from .test_gate import LEVELS

PLANNED = ab.ROUNDS


def first_rounds(doc: dict, k: int) -> dict:
    """The document as the gate saw it at the look after ``k`` rounds a side."""
    def side(d: dict) -> dict:
        return {**d, "entries": {c: {**e, "samples": {s: v[:k] for s, v in e["samples"].items()}}
                                 for c, e in d["entries"].items()}}

    return {**side(doc), "against": {**doc["against"], "session": side(doc["against"]["session"])}}


# ------------------------------------------------------------------------------------------- the futility rule
def best_final_p(seen_x: list[float], seen_y: list[float], n: int, m: int) -> float:
    """By brute force: the smallest p the test of n x m samples can end with, over every placement of the samples
    still to come among (below, between, above) the ones seen."""
    points = sorted(seen_x + seen_y)
    slots = [points[0] - 1] + [(a + b) / 2 for a, b in zip(points, points[1:])] + [points[-1] + 1]
    best = 1.0
    for future_x in itertools.product(slots, repeat=n - len(seen_x)):
        for future_y in itertools.product(slots, repeat=m - len(seen_y)):
            best = min(best, stats.mann_whitney_greater(seen_x + list(future_x), seen_y + list(future_y))[1])
    return best


@pytest.mark.parametrize("seen, final", [((2, 2), (4, 4)), ((3, 2), (4, 3)), ((3, 3), (4, 4)), ((1, 2), (3, 3))])
def test_can_still_reject_agrees_with_every_continuation(seen, final):
    n_seen, m_seen = seen
    levels = sorted(set(stats._u_tail(*final)))
    for order in set(itertools.permutations("x" * n_seen + "y" * m_seen)):  # every arrangement of what was seen
        xs = [float(i) for i, side in enumerate(order) if side == "x"]
        ys = [float(i) for i, side in enumerate(order) if side == "y"]
        u = stats.mann_whitney_greater(xs, ys)[0]
        best = best_final_p(xs, ys, *final)
        for level in levels:
            assert stats.can_still_reject(u, seen, final, level) == (best <= level), (order, level)


def test_a_case_that_cannot_be_rejected_later_is_not_rejected_now():
    """Stopping at a look spends no alpha: the p of the rounds so far is never below the best p the planned rounds
    can end with, so a decided look's own Holm rejects nothing either (every size up to the planned 16 x 16)."""
    final = stats._u_tail(PLANNED, PLANNED)
    for n_seen, m_seen in itertools.product(range(1, PLANNED + 1), repeat=2):
        now = stats._u_tail(n_seen, m_seen)
        extra = PLANNED * PLANNED - n_seen * m_seen
        assert all(final[u + extra] <= now[u] for u in range(n_seen * m_seen + 1)), (n_seen, m_seen)


def test_impossible_counts_are_refused():
    with pytest.raises(ValueError):
        stats.can_still_reject(5, (2, 2), (4, 4), 0.05)


# ------------------------------------------------------------------------------------------- looks of a verdict
def test_an_unchanged_tree_is_decided_at_an_early_look_and_passes():
    rng = random.Random(11)
    doc = ab_doc(drawn(LEVELS, rng), drawn(LEVELS, rng))
    looks = {k: judged(first_rounds(doc, k), planned=PLANNED) for k in range(ab.MIN_ROUNDS, PLANNED + 1)}
    stopped = min(k for k, verdict in looks.items() if verdict.decided)
    verdict = looks[stopped]
    assert stopped <= PLANNED // 2 and not verdict.failed and verdict.gated == len(LEVELS)
    assert f"{stopped} rounds a side (of 16: no gated case can be rejected any more)" in ab.summary(verdict)


def test_a_look_before_the_gated_set_is_fixed_decides_nothing():
    """One case, 8 rounds planned: after 4 rounds of a much faster tree it could no longer be rejected, but which
    cases are gated is not settled before the first MIN_ROUNDS rounds, so only that look decides."""
    case_id = next(iter(LEVELS))
    doc = ab_doc({case_id: [0.5 + i / 100 for i in range(8)]}, {case_id: [1.0 + i / 100 for i in range(8)]})
    assert [judged(first_rounds(doc, k), planned=8, power=0.0).decided for k in (4, 5, ab.MIN_ROUNDS)] == \
        [False, False, True]


def test_a_slowed_case_stays_open_at_every_look_and_is_caught_at_the_last():
    rng = random.Random(12)
    case_id = next(iter(LEVELS))
    doc = ab_doc(drawn(LEVELS, rng, factor={case_id: 1.25}), drawn(LEVELS, rng))
    for k in range(ab.MIN_ROUNDS, PLANNED):
        verdict = judged(first_rounds(doc, k), planned=PLANNED)
        assert not verdict.decided, k
    final = judged(doc, planned=PLANNED)
    assert not final.decided and {r.id for r in final.rows if r.verdict == gate.REGRESSION} == {case_id}


def worst_continuation(doc: dict, k: int) -> dict:
    """The first ``k`` rounds of ``doc``, then every later tree round far above and every later baseline round far
    below everything: the continuation most in favour of a rejection."""
    seen = first_rounds(doc, k)

    def ratios(side: dict, later: float) -> dict[str, list[float]]:
        return {c: [v for vs in e["samples"].values() for v in vs] + [later] * (PLANNED - k)
                for c, e in side["entries"].items()}

    return ab_doc(ratios(seen, 100.0), ratios(seen["against"]["session"], 0.01))


@pytest.mark.parametrize("factors, seed", [((1.0, 1.04, 1.08, 1.1, 1.12), 20), ((1.06, 1.08, 1.1), 21),
                                           ((1.06, 1.08, 1.1), 22)])
def test_a_look_decides_exactly_when_no_continuation_can_fail_the_run(factors, seed):
    """No alpha is spent before the last look: a run stopped at a look passes, and so does the planned test on any
    continuation, so the family-wise false-alarm rate is the planned test's (at most alpha); and a run that is not
    decided could still fail (the worst continuation does), so no look stops later than it could."""
    rng = random.Random(seed)  # cases slowed by about the margin: some looks decide, some do not
    doc = ab_doc(drawn(LEVELS, rng, factor=dict(zip(LEVELS, factors)), outliers=0.1), drawn(LEVELS, rng, outliers=0.1))
    outcomes = set()
    for k in range(ab.MIN_ROUNDS, PLANNED):
        decided = judged(first_rounds(doc, k), planned=PLANNED).decided
        assert decided != judged(worst_continuation(doc, k), planned=PLANNED).failed, k
        outcomes.add(decided)
    assert outcomes == {False, True}  # the draw reaches both sides of the rule


def test_the_gated_set_depends_on_the_first_look_only():
    """Holm's family must not change between looks, or a case decided at one look could be rejected at another."""
    rng = random.Random(14)
    doc = ab_doc(drawn(LEVELS, rng), drawn(LEVELS, rng))
    wild = json.loads(json.dumps(doc))
    for side in (wild, wild["against"]["session"]):
        for entry in side["entries"].values():
            for values in entry["samples"].values():
                values[ab.MIN_ROUNDS:] = [v * rng.choice((0.3, 3.0)) for v in values[ab.MIN_ROUNDS:]]
    powers = [{r.id: r.power for r in judged(d, planned=PLANNED).rows} for d in (doc, wild)]
    assert powers[0] == powers[1]


# ------------------------------------------------------------------------------------------- stopping the rounds
def test_rounds_stop_when_finished_says_so(tmp_path):
    tasks = [(i, [sys.executable, "-c", "pass", "--out", str(tmp_path / f"{i}.json")], None) for i in range(5)]
    seen = []
    rounds.run_rounds(tasks, jobs=1, folder=tmp_path, finished=lambda key, *rest: seen.append(key) or key == 1)
    assert seen == [0, 1]


def fake_round(case_ratios: dict[str, float]) -> dict:
    """A round document (schema 1) with these ratios."""
    entries = {c: {"subject": c.split("|")[0], "library": c.split(".")[0], "spec": "neuron.leaky",
                   "size": c.split("|")[1], "mode": c.split("|")[2], "against": "spec", "ratio": r,
                   "subject_s": 0.01, "reference_s": 0.01} for c, r in case_ratios.items()}
    return {"schema": 1, "kind": "conformance.bench", "env": {"cpu_model": "Test CPU"}, "clock": "cpu",
            "entries": entries, "skipped": {}, "attempted": sorted(case_ratios)}


def test_the_gate_stops_measuring_at_the_look_that_decides(monkeypatch, tmp_path):
    rng = random.Random(15)
    started = []

    def fake_rounds(tasks, *, jobs, folder, finished, env=None):
        for key, _, _ in tasks:
            started.append(key)
            ratios = {c: level * math.exp(rng.gauss(0, 0.02)) for c, level in LEVELS.items()}
            if finished(key, fake_round(ratios), "", 1.0):
                return

    monkeypatch.setattr(ab, "run_rounds", fake_rounds)
    looks = []

    def decided(doc):
        verdict = judged(doc)
        looks.append(verdict.rounds)
        return verdict.decided

    doc = ab.measure(profile="quick", device="cpu", rounds=PLANNED, jobs=2, repeats=1, sample_s=0.01, threads=1,
                     attempted=sorted(LEVELS), baseline_dir=tmp_path, commit="0" * 40, seed=1, decided=decided)
    stopped = looks[-1]
    assert ab.MIN_ROUNDS <= stopped < PLANNED and len(started) == 2 * stopped
    assert doc["complete"] and next(iter(doc["sessions"].values()))["decided_after"] == stopped
    assert judged(doc).decided and not judged(doc).failed
