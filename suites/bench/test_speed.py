"""The benchmark suite under pytest-benchmark: every case of a profile, the subject timed by pytest-benchmark and
the reference (its spec, or eager for a compiled case) timed in the setup before each round, so the two
interleave. The ratio subject/reference goes into ``extra_info`` and is checked against the baseline with the
gate's threshold and confirmation.

Skipped unless asked for, and serial (pytest-benchmark disables itself under xdist)::

    CONFORMANCE_BENCH=quick python -m pytest suites/bench/test_speed.py -p no:xdist --benchmark-json out.json

The CI gate is ``python -m conformance.bench gate`` (same cases, same measuring code, one process, its own table).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import pytest

PROFILE = os.environ.get("CONFORMANCE_BENCH", "")
DEVICE = os.environ.get("CONFORMANCE_BENCH_DEVICE", "cpu")
ROOT = Path(__file__).resolve().parents[2]


def _case_ids() -> list[str]:
    if not PROFILE:
        return ["not-requested"]
    from conformance.bench.cases import cases

    return [c.id for c in cases(PROFILE, device=DEVICE)]


def _baseline() -> dict:
    from conformance.bench import gate

    path = ROOT / "reports" / "bench" / f"baseline-{DEVICE}.json"
    return gate.load(path)["entries"] if path.exists() else {}


@pytest.mark.skipif(not PROFILE, reason="benchmarks run only with CONFORMANCE_BENCH=quick|full (and -p no:xdist)")
@pytest.mark.parametrize("case_id", _case_ids())
def test_speed_ratio(benchmark, case_id):
    import torch

    from conformance.bench import gate
    from conformance.bench.__main__ import SETTINGS
    from conformance.bench.cases import Skip, build_pair, parse_id
    from conformance.bench.timing import calibrate, measure, pin_allocator, time_per_call

    torch.set_num_threads(1)
    pin_allocator()
    settings = SETTINGS[PROFILE]
    try:
        pair = build_pair(parse_id(case_id), DEVICE)
    except Skip as reason:
        pytest.skip(str(reason))
    loops = (calibrate(pair.subject, settings["sample_s"], DEVICE),
             calibrate(pair.reference, settings["sample_s"], DEVICE))
    reference_times: list[float] = []

    def time_reference() -> None:  # pytest-benchmark's setup: runs before every round, untimed
        reference_times.append(time_per_call(pair.reference, loops[1], DEVICE))

    def subject_sample() -> None:
        for _ in range(loops[0]):
            pair.subject()

    rounds = 2 * settings["repeats"] * settings["builds"]  # as many samples a side as the gate takes
    benchmark.pedantic(subject_sample, setup=time_reference, rounds=rounds, iterations=1)
    subject_times = [t / loops[0] for t in benchmark.stats.stats.data]
    ratio = statistics.median(s / r for s, r in zip(subject_times, reference_times[-len(subject_times):]))
    benchmark.extra_info.update(ratio=round(ratio, 5), against=parse_id(case_id).against, loops=list(loops))
    old = _baseline().get(case_id)
    if old is None:
        return
    benchmark.extra_info["baseline_ratio"] = old["ratio"]
    if gate.judge(old["ratio"], ratio, gate.THRESHOLD) == gate.SUSPECT:
        again = measure(build_pair(parse_id(case_id), DEVICE), repeats=settings["repeats"] * settings["builds"],
                        sample_s=settings["sample_s"], device=DEVICE).ratio
        benchmark.extra_info["confirm_ratio"] = round(again, 5)
        assert gate.judge(old["ratio"], again, gate.THRESHOLD) != gate.SUSPECT, (
            f"{case_id}: subject/reference ratio {ratio:.3f}, again {again:.3f}, baseline {old['ratio']:.3f}: "
            f"more than +{gate.THRESHOLD:.0%} (accept a wanted change: python -m conformance.bench accept)")
