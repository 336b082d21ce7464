"""The benchmark suite under pytest-benchmark: every case of a profile, the subject timed by pytest-benchmark and
the reference (its spec, or eager for a compiled case) timed in the setup before each round, so the two
interleave. The ratio subject/reference goes into ``extra_info`` beside the baseline's ratio of the case. It is
not judged here: one process gives one sample of a ratio, and where a process's tensors land moves some ratios for
its whole life; the gate (rank tests over fresh processes) is ``python -m conformance.bench gate``.

Skipped unless asked for, and serial (pytest-benchmark disables itself under xdist)::

    CONFORMANCE_BENCH=quick python -m pytest suites/bench/test_speed.py -p no:xdist --benchmark-json out.json

The CI gate is ``python -m conformance.bench gate`` (same cases, same measuring code, rounds in fresh processes).
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

    from conformance.bench.__main__ import SETTINGS
    from conformance.bench.cases import Skip, build_pair, parse_id
    from conformance.bench.timing import calibrate, pin_allocator, timed

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
        reference_times.append(timed(pair.reference, loops[1], DEVICE)[1])  # wall clock, as pytest-benchmark's

    def subject_sample() -> None:
        for _ in range(loops[0]):
            pair.subject()

    rounds = 2 * settings["repeats"]  # as many samples a side as one round of the gate takes
    benchmark.pedantic(subject_sample, setup=time_reference, rounds=rounds, iterations=1)
    subject_times = [t / loops[0] for t in benchmark.stats.stats.data]
    ratio = statistics.median(s / r for s, r in zip(subject_times, reference_times[-len(subject_times):]))
    benchmark.extra_info.update(ratio=round(ratio, 5), against=parse_id(case_id).against, loops=list(loops),
                                clock="wall")
    old = _baseline().get(case_id)
    if old is not None:
        benchmark.extra_info["baseline_ratio"] = old["ratio"]
