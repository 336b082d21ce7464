"""The benchmark gate: its statistics on known inputs, its verdicts on synthetic sessions (an unchanged session
passes, a 25% slower subject fails, a noisy case is reported and not gated, the family-wise rate holds where
per-case tests would not, machines are told apart), broken gates that these tests catch, the command line's
errors, and the measuring plumbing on cheap real cases (rounds in fresh processes, a 25% slowdown detected)."""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

from conformance import registry
from conformance.bench import cases, gate, stats, timing
from conformance.bench.__main__ import main
from conformance.core.types import Subject

LEVELS = {f"lib{n // 2}.Layer{n // 2}|32x4096|{('forward', 'forward+backward')[n % 2]}": 0.8 + 0.05 * n
          for n in range(20)}


# ------------------------------------------------------------------------------------------------- documents
def session(ratios: dict[str, list[float]], *, machine: str = "Test CPU", sid: str | None = None,
            started: str = "2026-01-01T00:00:00Z", device: str = "cpu", clock: str = "cpu",
            skipped: dict[str, str] | None = None) -> dict:
    """A schema-2 session document with these per-round ratios per case."""
    sid = sid or f"{started}/{random.Random(str(ratios)).randrange(10**6):06d}"
    rounds = max(len(v) for v in ratios.values())
    entries = {case_id: {**dict(zip(("subject", "size", "mode"), case_id.split("|"))),
                         "library": case_id.split(".")[0], "spec": "neuron.leaky", "against": "spec",
                         "ratio": sorted(values)[len(values) // 2], "samples": {sid: list(values)},
                         "subject_s": 0.01, "reference_s": 0.01, "mem_subject": 3 * 2**20, "mem_reference": 2**21}
               for case_id, values in ratios.items()}
    return {"schema": 2, "kind": "conformance.bench", "profile": "quick", "device": device, "started": started,
            "env": {"cpu_model": machine}, "attempted": sorted(set(ratios) | set(skipped or {})), "entries": entries,
            "skipped": dict(skipped or {}),
            "sessions": {sid: {"machine": machine, "started": started, "rounds": rounds, "clock": clock,
                               "profile": "quick", "device": device}}}


def noisy(levels: dict[str, float], rng: random.Random, *, rounds: int = 8, sd_round: float = 0.02,
          sd_session: float = 0.01, factor: dict[str, float] | None = None, **labels) -> dict:
    """A session drawn from a simple noise model: per case a session shift and per-round normal noise (log)."""
    ratios = {}
    for case_id, level in levels.items():
        shift = rng.gauss(0, sd_session)
        scale = (factor or {}).get(case_id, 1.0)
        ratios[case_id] = [round(level * scale * math.exp(shift + rng.gauss(0, sd_round)), 5) for _ in range(rounds)]
    return session(ratios, started=f"2026-01-{rng.randrange(1, 28):02d}T00:00:00Z", **labels)


def baseline_of(levels: dict[str, float], seed: int = 1, sessions: int = 6, **kw) -> dict:
    rng = random.Random(seed)
    return gate.merge([noisy(levels, rng, **kw) for _ in range(sessions)])


@pytest.fixture
def files(tmp_path):
    def write(name: str, data: dict | str):
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return path

    return write


def gate_cli(files, baseline: dict, results: dict, capsys, *extra: str) -> tuple[int, str, str]:
    code = main(["gate", "--results", str(files("new.json", results)), "--baseline",
                 str(files("baseline.json", baseline)), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------------------------------------- statistics
def test_mann_whitney_p_values_are_exact_by_enumeration():
    """Every arrangement of n + m distinct values into x and y is equally likely under the null: count them."""
    for n, m in ((1, 1), (2, 3), (3, 4), (4, 4), (5, 2)):
        values = list(range(n + m))
        counts = {}
        for chosen in itertools.combinations(values, n):
            rest = [v for v in values if v not in chosen]
            u = sum(a > b for a in chosen for b in rest)
            counts[u] = counts.get(u, 0) + 1
        total = math.comb(n + m, n)
        for u_observed in range(n * m + 1):
            expected = sum(c for u, c in counts.items() if u >= u_observed) / total
            assert stats._u_tail(n, m)[u_observed] == pytest.approx(expected, rel=1e-12), (n, m, u_observed)
    assert stats.mann_whitney_greater([10.0, 11.0], [1.0, 2.0, 3.0]) == (6, pytest.approx(1 / math.comb(5, 2)))
    assert stats.mann_whitney_greater([0.0], [1.0, 2.0]) == (0, 1.0)


def test_mann_whitney_agrees_with_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(3)
    for _ in range(50):
        n, m = rng.randint(1, 9), rng.randint(1, 30)
        x, y = [rng.gauss(0.4, 1) for _ in range(n)], [rng.gauss(0, 1) for _ in range(m)]
        u, p = stats.mann_whitney_greater(x, y)
        reference = scipy_stats.mannwhitneyu(x, y, alternative="greater", method="exact")
        assert u == reference.statistic and p == pytest.approx(reference.pvalue, rel=1e-9)


def test_ties_count_against_the_tested_sample():
    _, tied = stats.mann_whitney_greater([1.0, 2.0], [1.0, 2.0])
    _, separated = stats.mann_whitney_greater([1.5, 2.5], [1.0, 2.0])
    assert tied > separated  # a tie is a loss for "x is larger": never a false step towards a regression


def test_holm_on_known_inputs():
    assert stats.holm({"a": 0.001, "b": 0.03, "c": 0.04}, alpha=0.05) == {"a"}  # 0.03 > 0.05 / 2 stops it
    assert stats.holm({"a": 0.01, "b": 0.02, "c": 0.04}, alpha=0.05) == {"a", "b", "c"}  # .0167, .025, .05
    assert stats.holm({"a": 0.02, "b": 0.001}, alpha=0.05) == {"a", "b"}
    assert stats.holm({"a": 0.03, "b": 0.04}, alpha=0.05) == set()
    assert stats.holm({}, alpha=0.05) == set()


def test_holm_holds_the_family_wise_rate_where_per_case_tests_do_not():
    rng = random.Random(5)
    runs, holm_fails, per_case_fails = 2000, 0, 0
    for _ in range(runs):
        pvalues = {str(i): rng.random() for i in range(100)}
        holm_fails += bool(stats.holm(pvalues, alpha=0.01))
        per_case_fails += any(p <= 0.01 for p in pvalues.values())
    assert holm_fails / runs <= 0.02 and per_case_fails / runs > 0.5


def test_detection_power_grows_with_the_effect_and_falls_with_noise():
    rng = random.Random(1)
    reference = [rng.gauss(0, 0.02) for _ in range(48)]
    residuals = [rng.gauss(0, 0.02) for _ in range(48)]
    common = dict(reference=reference, session_sd=0.01, level=0.0, margin=0.05, rounds=8, threshold_p=1e-4,
                  trials=200, seed=1)
    assert stats.detection_power(residuals=residuals, effect=math.log(1.25), **common) > 0.95
    assert stats.detection_power(residuals=residuals, effect=0.0, **common) == 0.0
    loud = [10 * r for r in residuals]
    assert stats.detection_power(residuals=loud, effect=math.log(1.25), **common) < 0.5


# ------------------------------------------------------------------------------------------------- verdicts
def test_an_unchanged_session_passes_and_prints_the_table(files, capsys):
    baseline = baseline_of(LEVELS)
    code, out, _ = gate_cli(files, baseline, noisy(LEVELS, random.Random(99)), capsys)
    assert code == 0, out
    for header in ("ratio was", "ratio now", "change", "margin", "p", "verdict", "peak MiB"):
        assert header in out
    assert "gate: pass" in out and "20 ok" in out and "3.0 / 2.0" in out
    assert "Holm over 20 gated cases at family-wise alpha 0.01" in out and "like 'Test CPU'" in out


def test_a_25_percent_slower_subject_fails_the_gate(files, capsys):
    baseline = baseline_of(LEVELS)
    slow = {c: 1.25 for c in LEVELS if c.startswith("lib3.")}
    code, out, _ = gate_cli(files, baseline, noisy(LEVELS, random.Random(99), factor=slow), capsys)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("lib3.Layer3")]
    assert len(lines) == 2 and all("REGRESSION" in line for line in lines)
    assert "gate: FAIL" in out and "2 REGRESSION" in out and "18 ok" in out


def test_every_single_subject_slowed_by_25_percent_is_caught():
    baseline = baseline_of(LEVELS)
    for n, subject in enumerate(sorted({c.split("|")[0] for c in LEVELS})):
        slow = {c: 1.25 for c in LEVELS if c.startswith(subject + "|")}
        verdict = gate.judge_session(baseline, noisy(LEVELS, random.Random(100 + n), factor=slow))
        assert {r.id for r in verdict.rows if r.verdict == gate.REGRESSION} == set(slow), subject


def test_a_case_too_noisy_to_gate_is_reported_and_not_gated(files, capsys):
    rng = random.Random(2)
    noisy_case = "lib0.Layer0|32x4096|forward"
    docs = []
    for _ in range(6):
        doc = noisy(LEVELS, rng)
        sid = next(iter(doc["sessions"]))
        doc["entries"][noisy_case]["samples"][sid] = [round(0.8 * math.exp(rng.gauss(0, 0.3)), 5) for _ in range(8)]
        docs.append(doc)
    current = noisy(LEVELS, rng, factor={noisy_case: 1.25})
    code, out, _ = gate_cli(files, gate.merge(docs), current, capsys)
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("lib0.Layer0") and " forward " in line)
    assert "not gated (too noisy)" in line
    note = next(line for line in out.splitlines() if line.startswith("not gated: lib0.Layer0|32x4096|forward:"))
    assert "too noisy: a 25% slowdown is found in" in note and "sd between rounds" in note
    assert "1 not gated" in out and "Holm over 19 gated cases" in out


def family_wise_scenario() -> tuple[dict, dict]:
    """60 cases; 25 of them measured a little above their margin: each of those p-values is small (0.0015)
    but none is small enough for 60 tests at once. A gate that tests each case alone at alpha fails this run.
    (Fewer than half the cases move, so the session still resembles the recorded machine.)"""
    levels = [f"lib{n}.Layer{n}|32x4096|forward" for n in range(60)]
    grid = [math.exp(0.02 * (k - 23.5) / 12) for k in range(48)]  # 48 evenly spread samples, sd about 0.02
    baseline = gate.merge([session({c: grid[s::6] for c in levels}, sid=f"s{s}") for s in range(6)])
    model = gate.case_model(baseline["entries"][levels[0]], baseline["sessions"],
                            gate.Match(("Test CPU",), {"Test CPU": 0.0}, 1.0, "Test CPU"), kappa=0.0)
    above = [round(g * math.exp(model.margin + 0.036), 6) for g in grid[::6]]
    return baseline, session({c: above if n < 25 else grid[3::6] for n, c in enumerate(levels)}, sid="now")


def test_the_family_wise_correction_keeps_borderline_cases_from_failing_the_run():
    baseline, current = family_wise_scenario()
    verdict = gate.judge_session(baseline, current)
    pvalues = [r.p for r in verdict.rows if r.p is not None and int(r.library[3:]) < 25]
    assert len(pvalues) == 25 and max(pvalues) < gate.ALPHA and min(pvalues) > gate.ALPHA / verdict.gated
    assert verdict.match.machines == ("Test CPU",) and verdict.gated == 60 and not verdict.failed


def test_machines_are_told_apart_by_their_ratios(monkeypatch):
    """Machine B runs half the cases 30% slower relative to their spec than machine A: a session of B is judged
    against B's levels (passes), one of A against A's, so a 25% slowdown on A is caught even where B's level is
    higher; a session like neither machine is judged against the highest level with the machines' spread added.
    (Each machine is one host here: no spread between hosts.)"""
    monkeypatch.setattr(gate, "HOST_SD", 0.0)
    shifted = {c: v * (1.3 if n % 2 else 1.0) for n, (c, v) in enumerate(LEVELS.items())}
    rng = random.Random(7)
    baseline = gate.merge([noisy(LEVELS, rng, machine="CPU A") for _ in range(4)]
                          + [noisy(shifted, rng, machine="CPU B") for _ in range(4)])
    on_b = gate.judge_session(baseline, noisy(shifted, rng, machine="CPU B"))
    assert on_b.match.machines == ("CPU B",) and not on_b.failed
    slow_case = next(c for n, c in enumerate(LEVELS) if n % 2)
    on_a = gate.judge_session(baseline, noisy(LEVELS, rng, machine="CPU A", factor={slow_case: 1.25}))
    assert on_a.match.machines == ("CPU A",)
    assert [r.id for r in on_a.rows if r.verdict == gate.REGRESSION] == [slow_case]
    elsewhere = {c: v * (1.05 if n % 3 == 0 else 0.96) for n, (c, v) in enumerate(LEVELS.items())}
    unknown = gate.judge_session(baseline, noisy(elsewhere, rng, machine="CPU C"))
    assert unknown.match.machines == () and "like no recorded machine" in unknown.match.describe()
    assert not unknown.failed
    verdicts = {r.id: r.verdict for r in unknown.rows}
    assert all(verdicts[c] == gate.NOT_GATED for n, c in enumerate(LEVELS) if n % 2)  # the machines differ by 30%
    assert all(verdicts[c] == gate.OK for n, c in enumerate(LEVELS) if not n % 2)


def test_a_machine_recorded_only_idle_recognises_itself_under_load(monkeypatch):
    """Machine B's sessions were all recorded idle (they agree within a fraction of a percent); a session of B
    under load strays 2% from them. The tolerance is the largest any recorded machine shows (A's sessions, recorded
    under load, stray more), so the busy session is still B, not an unknown machine with most cases not gated."""
    monkeypatch.setattr(gate, "HOST_SD", 0.0)
    shifted = {c: v * (1.3 if n % 2 else 1.0) for n, (c, v) in enumerate(LEVELS.items())}
    rng = random.Random(5)
    idle_b = [noisy(shifted, rng, machine="CPU B", sd_session=0.003, sd_round=0.01) for _ in range(4)]
    baseline = gate.merge([noisy(LEVELS, rng, machine="CPU A", sd_session=0.03) for _ in range(4)] + idle_b)
    busy = {c: v * (1.02 if n % 3 else 0.98) for n, (c, v) in enumerate(shifted.items())}
    verdict = gate.judge_session(baseline, noisy(busy, rng, machine="CPU B", sd_session=0.0, sd_round=0.01))
    assert verdict.match.machines == ("CPU B",) and not verdict.failed
    assert verdict.gated >= 0.9 * len(LEVELS)
    only_b = gate.merge(idle_b)  # B's own sessions alone would not have taken it for B
    assert gate.judge_session(only_b, noisy(busy, rng, machine="CPU B", sd_session=0.0,
                                             sd_round=0.01)).match.machines == ()


# ------------------------------------------------------------------------------------------------- broken gates
def _no_family_wise_correction(pvalues, *, alpha):
    return {k for k, p in pvalues.items() if p <= alpha}


def _no_margin(entry, sessions, match, **kw):
    model = REAL_CASE_MODEL(entry, sessions, match, **kw)
    model.margin = 0.0
    return model


def _ties_count_for_x(x, y):
    u = sum((a > b) + (a == b) for a in x for b in y)
    return u, stats._u_tail(len(x), len(y))[u]


REAL_CASE_MODEL = gate.case_model
GATE_MUTANTS = {"no family-wise correction": (stats, "holm", _no_family_wise_correction),
                "no spread between hosts": (gate, "HOST_SD", 0.0),
                "no margin": (gate, "case_model", _no_margin),
                "ties counted as slower": (stats, "mann_whitney_greater", _ties_count_for_x)}


def gate_properties() -> list[str]:
    """The properties the tests above check, as a list of the ones that do not hold (empty for the real gate)."""
    broken = []
    baseline, current = family_wise_scenario()
    if gate.judge_session(baseline, current).failed:
        broken.append("borderline cases fail the run")
    equal = session({c: [1.0] * 8 for c in LEVELS}, sid="now")
    flat = gate.merge([session({c: [1.0] * 8 for c in LEVELS}, sid=f"s{s}") for s in range(4)])
    if gate.judge_session(flat, equal).failed:
        broken.append("a session equal to the baseline fails")
    shifted = noisy(LEVELS, random.Random(11), sd_session=0.0, factor={c: 1.03 for c in LEVELS})
    if gate.judge_session(baseline_of(LEVELS, sd_session=0.0), shifted).failed:
        broken.append("a 3% shift of every case (a quieter or busier machine) fails")
    other_host = noisy(LEVELS, random.Random(12), factor={c: 1.07 for n, c in enumerate(LEVELS) if n % 7 == 0})
    if gate.judge_session(baseline_of(LEVELS), other_host).failed:
        broken.append("another host of the recorded machine (3 cases 7% off, the rest as recorded) fails")
    if stats.mann_whitney_greater([1.0, 2.0], [1.0, 2.0])[1] < 0.5:
        broken.append("equal samples look larger")
    return broken


def test_the_real_gate_has_every_property():
    assert gate_properties() == []


@pytest.mark.parametrize("name", GATE_MUTANTS)
def test_a_broken_gate_is_caught(name, monkeypatch):
    module, attribute, broken = GATE_MUTANTS[name]
    monkeypatch.setattr(module, attribute, broken)
    assert gate_properties(), f"the gate with {name} passed every property test"


# ------------------------------------------------------------------------------------------------- files, usage
def test_accept_pools_sessions_and_add_keeps_the_baselines_sessions(files, tmp_path, capsys):
    rng = random.Random(8)
    first, second, third = (noisy(LEVELS, rng, machine=m) for m in ("CPU A", "CPU A", "CPU B"))
    target = tmp_path / "baseline.json"
    assert main(["accept", "--results", str(files("a.json", first)), str(files("b.json", second)),
                 "--baseline", str(target)]) == 0
    assert len(gate.load(target)["sessions"]) == 2
    assert main(["accept", "--add", "--results", str(files("c.json", third)), "--baseline", str(target)]) == 0
    merged = gate.load(target)
    assert sorted(s["machine"] for s in merged["sessions"].values()) == ["CPU A", "CPU A", "CPU B"]
    case = next(iter(LEVELS))
    assert sum(len(v) for v in merged["entries"][case]["samples"].values()) == 24
    assert "3 sessions (CPU A, CPU B)" in capsys.readouterr().out
    with pytest.raises(ValueError, match="different devices"):
        gate.merge([first, noisy(LEVELS, rng, device="cuda")])


def test_a_wanted_change_is_accepted_per_case_and_other_machines_then_do_not_gate_it(files, tmp_path, capsys):
    """``accept --add --replace-cases``: the new sessions replace every machine's samples of the cases they
    measured. On another recorded machine those cases are then not gated until a session of it is added."""
    rng = random.Random(12)
    shifted = {c: v * (1.3 if n % 2 else 1.0) for n, (c, v) in enumerate(LEVELS.items())}
    target = tmp_path / "baseline.json"
    sessions = [files(f"a{n}.json", noisy(LEVELS, rng, machine="CPU A")) for n in range(3)]
    sessions += [files(f"b{n}.json", noisy(shifted, rng, machine="CPU B")) for n in range(3)]
    assert main(["accept", "--results", *map(str, sessions), "--baseline", str(target)]) == 0
    changed = next(iter(LEVELS))
    faster = [files(f"new{n}.json", session({changed: [round(0.5 * LEVELS[changed], 5)] * 8}, machine="CPU A",
                                            sid=f"new{n}")) for n in range(2)]
    assert main(["accept", "--add", "--replace-cases", "--results", *map(str, faster), "--baseline",
                 str(target)]) == 0
    baseline = gate.load(target)
    assert set(baseline["entries"][changed]["samples"]) == {"new0", "new1"}
    assert len(baseline["entries"][next(c for c in LEVELS if c != changed)]["samples"]) == 6
    on_b = gate.judge_session(baseline, noisy(shifted, rng, machine="CPU B"))
    row = next(r for r in on_b.rows if r.id == changed)
    assert row.verdict == gate.NOT_GATED and "no samples of it from 'CPU B'" in row.reason
    assert main(["accept", "--replace-cases", "--results", str(faster[0]), "--baseline", str(target)]) == 2


CORRUPT = {
    "not JSON": "{not json",
    "truncated": json.dumps(session({"a.B|32x4096|forward": [1.0] * 8}))[:-40],
    "another kind": json.dumps({"kind": "something else"}),
    "unknown schema": json.dumps({"kind": "conformance.bench", "schema": 9}),
    "no sessions": json.dumps({**session({"a.B|32x4096|forward": [1.0] * 8}), "sessions": {}}),
    "a NaN sample": json.dumps(session({"a.B|32x4096|forward": [1.0, float("nan")]})),
    "a negative ratio": json.dumps(session({"a.B|32x4096|forward": [-1.0] * 8})),
    "samples of no session": json.dumps(session({"a.B|32x4096|forward": [1.0] * 8}, sid="x")).replace(
        '"samples": {"x"', '"samples": {"y"'),
    "not a case id": json.dumps(session({"a.B|32x4096|forward": [1.0] * 8})).replace("a.B|32x4096|forward", "nonsense"),
}


@pytest.mark.parametrize("what", CORRUPT)
def test_a_corrupt_baseline_is_one_line_and_exit_status_2(what, files, capsys):
    code = main(["gate", "--results", str(files("new.json", noisy(LEVELS, random.Random(1)))),
                 "--baseline", str(files("baseline.json", CORRUPT[what]))])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "baseline.json" in err and "Traceback" not in err, err


def test_a_missing_baseline_is_one_line_and_exit_status_2(tmp_path, capsys):
    assert main(["gate", "--baseline", str(tmp_path / "absent.json"), "--results", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "absent.json" in err


@pytest.mark.parametrize("command", ["gate", "run"])
def test_subjects_matching_nothing_is_a_one_line_usage_error(command, capsys):
    code = main([command, "--subjects", "nosuchlib.*"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'nosuchlib.*' matches none of the" in err and "'snntorch.*'" in err and "'bitorch.*'" in err


@pytest.mark.parametrize("command", ["run", "gate", "accept", "round"])
def test_every_command_prints_its_help(command, capsys):
    """argparse formats help strings with %: a literal percent sign in one (e.g. '95% of runs') breaks --help."""
    with pytest.raises(SystemExit) as stopped:
        main([command, "--help"])
    assert stopped.value.code == 0 and "usage:" in capsys.readouterr().out


def test_bad_arguments_are_one_line_usage_errors(capsys):
    for argv in (["gate", "--rounds", "0"], ["gate", "--alpha", "2"], ["gate", "--power", "2"],
                 ["run", "--slowdown", "nonsense"],
                 ["run", "--cases", "no|such|case"], ["frobnicate"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith("conformance.bench: error:"), (argv, err)


def test_a_baseline_of_one_process_per_case_cannot_gate_and_says_so(files, capsys):
    """Schema-1 baselines (one process per run, like the CUDA baseline recorded on the H200) still load, as single-
    round sessions; the rank test needs more rounds, so the gate names that instead of passing."""
    legacy = {"schema": 1, "kind": "conformance.bench", "profile": "quick", "device": "cpu", "repeats": 3,
              "started": "2026-01-01T00:00:00Z", "env": {"cpu_model": "Old CPU"}, "attempted": sorted(LEVELS),
              "skipped": {}, "runs": 1,
              "entries": {c: {"ratio": v, "run_ratios": [v], "library": "lib"} for c, v in LEVELS.items()}}
    loaded = gate.load(files("legacy.json", legacy))
    assert len(loaded["sessions"]) == 1 and next(iter(loaded["sessions"].values()))["machine"] == "Old CPU"
    code, out, err = gate_cli(files, legacy, noisy(LEVELS, random.Random(1)), capsys)
    assert code == 3 and "no case can be gated" in err and "round(s) of it" in err and "accept --add" in err
    assert f"{len(LEVELS)} not gated" in out and "gate: pass" not in out
    cuda = gate.load("reports/bench/baseline-cuda.json")
    assert cuda["device"] == "cuda" and len(cuda["entries"]) > 90


def test_the_checked_in_cpu_baseline_pools_machines_and_gates_most_cases():
    baseline = gate.load("reports/bench/baseline-cpu.json")
    machines = {s["machine"] for s in baseline["sessions"].values()}
    assert len(machines) >= 2 and not list((gate.Path("reports") / "bench").glob("baseline-cpu-*.json"))


# ------------------------------------------------------------------------------------------------ measuring
def test_tile_keeps_values_and_reaches_any_shape():
    t = torch.arange(6.0).reshape(2, 3)
    grown = cases.tile(t, (5, 7))
    assert grown.shape == (5, 7) and set(grown.unique().tolist()) == set(range(6))
    assert cases.tile(torch.tensor(2.0), (3,)).tolist() == [2.0, 2.0, 2.0]
    assert cases.tile(torch.ones(2, 2, 3), (4, 3)).shape == (4, 3)


def test_the_quick_profile_covers_every_library_subject_with_a_spec_once_per_mode():
    quick = cases.cases("quick")
    ids = [c.id for c in quick]
    assert len(ids) == len(set(ids))
    subjects = {c.subject for c in quick}
    timed = {s.id for s in registry.subjects().values()
             if s.library != "reference" and registry.specs()[s.spec].fn is not None
             and cases.sizes_for(s.spec, "quick")}
    expected = {sid for sid in timed if not cases.not_timed(registry.subjects()[sid], "cpu")}
    assert subjects == expected
    # The kernels run in Triton's interpreter on CPU (correctness only): timed on CUDA, never on CPU.
    kernels = {sid for sid in timed if sid.startswith("kernels.")}
    assert kernels and not kernels & subjects
    assert kernels <= {c.subject for c in cases.cases("quick", device="cuda")}
    assert all(c.against == "spec" for c in quick)
    full = cases.cases("full")
    assert len(full) > len(quick) and any(c.compiled and c.against == "eager" for c in full)


def test_a_case_example_ignores_constants_in_loaded_modules(tmp_path, monkeypatch):
    """Hypothesis mixes literals of loaded project modules into its draws; a benchmark case's example must not
    move when some module (a tolerance table, a new subject) gains constants."""
    import importlib

    spec = registry.specs()["neuron.rleaky"]
    fixed = {"all_to_all": True, "reset_delay": True, "time_dim": 0, "surrogate": "atan"}
    before = cases.draw_small_example(spec, fixed)
    (tmp_path / "lots_of_constants.py").write_text(
        "VALUES = (" + ", ".join(f"{0.1 + i / 7:.9f}, {3 + 11 * i}" for i in range(400)) + ", 'zero', 'none')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("lots_of_constants")
    try:
        after = cases.draw_small_example(spec, fixed)
    finally:
        sys.modules.pop("lots_of_constants", None)
    assert before.hyper == after.hyper
    assert torch.equal(before.x, after.x)
    assert all(torch.equal(before.params[k], after.params[k]) for k in before.params)


def test_slowed_step_takes_the_asked_fraction_longer_on_the_cpu_clock():
    def busy():
        until = time.process_time() + 0.01
        while time.process_time() < until:
            pass

    step = timing.slowed(busy, 0.5)
    started = time.process_time()
    step()
    assert time.process_time() - started >= 0.015


def test_a_real_case_measures_a_positive_ratio_by_both_clocks_and_memory():
    case = cases.Case("snntorch.surrogate.atan", "32x4096", "forward+backward")
    pytest.importorskip("snntorch")
    pair = cases.build_pair(case)
    result = timing.measure(pair, repeats=3, sample_s=0.002)
    assert result.ratio > 0 and len(result.ratios) == 3 and len(result.wall_ratios) == 3 and min(result.loops) >= 1
    peak = timing.peak_memory(pair.subject)
    assert peak is None or peak >= 0


def test_a_subject_that_cannot_build_is_skipped_with_its_reason(monkeypatch):
    def broken(example):
        raise RuntimeError("no kernel for this shape")

    spec = registry.specs()["surrogate.atan"]
    for sid, subject in (("broken.Layer", Subject("broken.Layer", spec.id, broken, library="broken")),
                         ("absent.Layer", Subject("absent.Layer", spec.id, broken, library="absent",
                                                  requires=("no_such_module_here",)))):
        monkeypatch.setitem(registry.subjects(), sid, subject)
    results = timing.run([cases.Case("broken.Layer", "32x4096", "forward"),
                          cases.Case("absent.Layer", "32x4096", "forward")],
                         profile="quick", repeats=1, sample_s=0.001, order_seed=3)
    assert results["entries"] == {}
    assert "no kernel for this shape" in results["skipped"]["broken.Layer|32x4096|forward"]
    assert "not installed" in results["skipped"]["absent.Layer|32x4096|forward"]


def test_a_subject_whose_output_has_another_shape_is_skipped_in_both_modes(monkeypatch):
    """The shape check rides on each side's warm-up call (forward: the output under no_grad; forward+backward: the
    cotangent made to the output's shape): a subject that drops a column is not timed against the spec."""
    class Cropped(torch.nn.Module):
        def forward(self, x):
            return x[..., 1:] * 2.0

    spec = registry.specs()["surrogate.atan"]
    monkeypatch.setitem(registry.subjects(), "cropped.Layer",
                        Subject("cropped.Layer", spec.id, lambda example: Cropped(), library="cropped"))
    for mode in cases.MODES:
        with pytest.raises(cases.Skip, match=r"output shape \(32, 4095\) differs from the spec's \(32, 4096\)"):
            cases.build_pair(cases.Case("cropped.Layer", "32x4096", mode))


def test_subject_patterns_match_ids_with_brackets_exactly_or_as_globs():
    assert cases.selected("snntorch.Leaky[subtract]", ["snntorch.Leaky[subtract]"])
    assert not cases.selected("snntorch.Leaky[init_hidden]", ["snntorch.Leaky[subtract]"])
    assert cases.selected("snntorch.Leaky[init_hidden]", ["snntorch.*"]) and cases.selected("x", None)


CHEAP = ["snntorch.surrogate.atan|32x4096|forward+backward", "snntorch.surrogate.sigmoid|32x4096|forward+backward"]


def test_rounds_run_in_fresh_processes_and_a_slowed_subject_fails_the_gate(tmp_path, capsys):
    """The end to end path with real measurements: two sessions of rounds make a baseline, and a gate run with one
    subject three times as slow (``--slowdown``, passed on to every round's process) fails on that subject's case. The
    slowdown and ``--detect`` are large so that the verdict does not hang on the noise of a loaded test machine;
    catching 25% is the statistics' business (the synthetic tests above) and the experiment's
    (docs/benchmarks.md). As few rounds as the gate needs: the baseline's ``MIN_BASELINE_ROUNDS`` from two sessions,
    the gate's ``MIN_ROUNDS`` (3 against 12: a round of the slowed case below a baseline round, which a 3x slowdown
    leaves to a baseline round landing 2.7x high, still rejects at p = 2/455, under Holm's 0.01 / 2); the commands
    run in this process, their rounds in fresh ones."""
    pytest.importorskip("snntorch")
    settings = ["--cases", *CHEAP, "--sample-s", "0.004", "--no-memory", "--quiet", "--jobs", "2"]
    per_session = gate.MIN_BASELINE_ROUNDS // 2
    sessions = []
    for n in range(2):
        out = tmp_path / f"session{n}.json"
        assert main(["run", "--rounds", str(per_session), "--out", str(out), *settings]) == 0, capsys.readouterr()
        sessions.append(out)
        recorded = gate.load(out)
        (session_meta,) = recorded["sessions"].values()
        assert session_meta["rounds"] == per_session and session_meta["clock"] == "cpu"
        seeds = {json.dumps(v["samples"]) for v in recorded["entries"].values()}
        assert len(seeds) == 2  # each case has its own samples, one per round
        # the rounds started first draw the small examples, later ones read what those left in the session's folder
        assert session_meta["examples"][-1] == {"read": 2, "drawn": 0}, session_meta["examples"]
    baseline = tmp_path / "baseline.json"
    assert main(["accept", "--results", *map(str, sessions), "--baseline", str(baseline)]) == 0
    capsys.readouterr()
    code = main(["gate", "--baseline", str(baseline), "--rounds", str(gate.MIN_ROUNDS), "--detect", "2",
                 "--out", str(tmp_path / "gate.json"), "--slowdown", "snntorch.surrogate.atan=2", *settings])
    out = capsys.readouterr().out
    assert code == 1, out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("snntorch.surrogate.")}
    assert "REGRESSION" in lines["snntorch.surrogate.atan"] and "REGRESSION" not in lines["snntorch.surrogate.sigmoid"]
    slowed = gate.load(tmp_path / "gate.json")
    assert slowed["entries"][CHEAP[0]]["slowdown"] == 2 and "slowdown" not in slowed["entries"][CHEAP[1]]


def test_a_run_stopped_by_a_time_limit_keeps_the_rounds_it_finished(tmp_path):
    """`bench run` writes the session after every round ("complete": false until the last): a time limit killing
    the GPU run's benchmark stage must not lose what was measured. Killed for real, after its first round."""
    pytest.importorskip("snntorch")
    out = tmp_path / "partial.json"
    process = subprocess.Popen([sys.executable, "-m", "conformance.bench", "run", "--out", str(out), "--rounds", "50",
                                "--jobs", "1", "--cases", CHEAP[0], "--sample-s", "0.002", "--no-memory", "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               env={**os.environ, "TMPDIR": str(tmp_path)})  # SIGKILL leaves its round folder
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    partial = gate.load(out)
    assert partial["complete"] is False
    ((sid, meta),) = partial["sessions"].items()
    assert 1 <= meta["rounds"] < 50 and len(partial["entries"][CHEAP[0]]["samples"][sid]) == meta["rounds"]
