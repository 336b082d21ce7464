"""The benchmark gate's logic on synthetic results (fast, deterministic), plus the measuring plumbing on a cheap
real case: a regression is caught, an unchanged run passes, missing and new cases are reported, the table prints."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import torch

from conformance import registry
from conformance.bench import cases, gate, timing
from conformance.bench.__main__ import main
from conformance.types import Subject

BASE = {"snntorch.Leaky[subtract]|lif-1024x50-b8|forward": 0.9,
        "snntorch.Leaky[subtract]|lif-1024x50-b8|forward+backward": 1.0,
        "norse.LIFCell|lif-1024x50-b8|forward+backward": 1.2,
        "bitorch.QLinear|linear-256|forward": 0.5}


def document(ratios: dict[str, float], *, skipped: dict[str, str] | None = None, attempted=None,
             device: str = "cpu", started: str = "2026-01-01T00:00:00Z") -> dict:
    entries = {case_id: {"subject": case_id.split("|")[0], "library": case_id.split(".")[0], "spec": "neuron.leaky",
                         "size": case_id.split("|")[1], "mode": case_id.split("|")[2], "against": "spec",
                         "ratio": ratio, "ratios": [ratio] * 3, "subject_s": 0.01 * ratio, "reference_s": 0.01,
                         "mem_subject": 3 * 2**20, "mem_reference": 2**21}
               for case_id, ratio in ratios.items()}
    skipped = skipped or {}
    return {"schema": 1, "kind": "conformance.bench", "profile": "quick", "device": device, "repeats": 3,
            "sample_s": 0.01, "started": started, "duration_s": 1.0, "env": {},
            "attempted": sorted(attempted if attempted is not None else set(ratios) | set(skipped)),
            "entries": entries, "skipped": skipped}


@pytest.fixture
def files(tmp_path):
    def write(name: str, data: dict):
        path = tmp_path / name
        path.write_text(json.dumps(data))
        return path

    return write


def gate_main(files, new: dict, capsys, *extra: str) -> tuple[int, str]:
    baseline = files("baseline.json", document(BASE))
    results = files("new.json", new)
    code = main(["gate", "--results", str(results), "--baseline", str(baseline), *extra])
    return code, capsys.readouterr().out


def test_an_unchanged_run_passes_and_prints_the_table(files, capsys):
    code, out = gate_main(files, document(BASE), capsys)
    assert code == 0
    for header in ("old ratio", "new ratio", "change", "verdict", "peak MiB"):
        assert header in out
    assert "snntorch.Leaky[subtract]" in out and "+0.0%" in out and "3.0 / 2.0" in out
    assert "gate: pass" in out and "4 ok" in out


def test_a_synthetic_regression_of_one_subject_fails_the_gate(files, capsys):
    slower = dict(BASE)
    slower["norse.LIFCell|lif-1024x50-b8|forward+backward"] *= 1.25
    code, out = gate_main(files, document(slower), capsys)
    assert code == 1
    line = next(line for line in out.splitlines() if line.startswith("norse.LIFCell"))
    assert "REGRESSION" in line and "+25.0%" in line and "1.200" in line and "1.500" in line
    assert "gate: FAIL" in out and "1 REGRESSION" in out


def test_changes_within_the_threshold_pass_and_big_speedups_are_reported(files, capsys):
    within = {k: v * (1 + 0.9 * gate.THRESHOLD) for k, v in BASE.items()}
    within["bitorch.QLinear|linear-256|forward"] = 0.3
    code, out = gate_main(files, document(within), capsys)
    assert code == 0
    assert "faster" in out and "REGRESSION" not in out


def test_missing_new_and_unattempted_cases(files, capsys):
    now = {k: v for k, v in BASE.items() if not k.startswith("norse.")}
    now["sinabs.IAF|lif-1024x50-b8|forward"] = 0.7
    reason = "optional library 'norse' is not installed"
    results = document(now, skipped={"norse.LIFCell|lif-1024x50-b8|forward+backward": reason},
                       attempted=(set(now) | {"norse.LIFCell|lif-1024x50-b8|forward+backward"})
                       - {"bitorch.QLinear|linear-256|forward"})
    del results["entries"]["bitorch.QLinear|linear-256|forward"]  # filtered out by --subjects: not attempted
    code, out = gate_main(files, results, capsys)
    assert code == 0
    assert f"missing: {reason}" in out
    assert "sinabs.IAF" in out and "new" in out
    assert "bitorch.QLinear" not in out


def test_confirmation_settles_a_case_over_the_threshold():
    baseline = document(BASE)
    first = document({**BASE, "bitorch.QLinear|linear-256|forward": 0.5 * 1.3,
                      "norse.LIFCell|lif-1024x50-b8|forward+backward": 1.2 * 1.3,
                      "snntorch.Leaky[subtract]|lif-1024x50-b8|forward": 0.9 * 1.3})
    rows = gate.compare(baseline, first, threshold=0.1)
    assert sum(r.verdict == gate.SUSPECT for r in rows) == 3
    again = document({"bitorch.QLinear|linear-256|forward": 0.5 * 1.02,  # noise: cleared
                      "norse.LIFCell|lif-1024x50-b8|forward+backward": 1.2 * 1.3},  # real: confirmed
                     skipped={"snntorch.Leaky[subtract]|lif-1024x50-b8|forward": "build failed"})
    settled = {r.id: r for r in gate.confirm(rows, again, threshold=0.1)}
    assert settled["bitorch.QLinear|linear-256|forward"].verdict == gate.UNCONFIRMED
    assert settled["norse.LIFCell|lif-1024x50-b8|forward+backward"].verdict == gate.REGRESSION
    assert settled["norse.LIFCell|lif-1024x50-b8|forward+backward"].confirm == pytest.approx(1.56)
    # a case that cannot be measured again is not cleared
    assert settled["snntorch.Leaky[subtract]|lif-1024x50-b8|forward"].verdict == gate.REGRESSION
    table = gate.table(list(settled.values()))
    assert "→" in table and gate.UNCONFIRMED in table


def test_without_confirmation_the_first_measurement_decides():
    rows = gate.compare(document(BASE), document({**BASE, "bitorch.QLinear|linear-256|forward": 0.7}),
                        threshold=0.1)
    assert [r.verdict for r in gate.confirm(rows, None, threshold=0.1, required=False)].count(gate.REGRESSION) == 1


def test_accept_takes_the_median_of_runs(files, tmp_path, capsys):
    runs = [files(f"run{i}.json", document({k: v * f for k, v in BASE.items()}, started=f"2026-01-0{i + 1}"))
            for i, f in enumerate((1.0, 1.5, 0.9))]
    target = tmp_path / "baseline.json"
    assert main(["accept", "--results", *map(str, runs), "--baseline", str(target)]) == 0
    merged = gate.load(target)
    assert merged["runs"] == 3
    assert merged["entries"]["bitorch.QLinear|linear-256|forward"]["ratio"] == pytest.approx(0.5)
    assert merged["entries"]["norse.LIFCell|lif-1024x50-b8|forward+backward"]["run_ratios"] == \
        pytest.approx([1.2, 1.8, 1.08])
    with pytest.raises(ValueError, match="different devices"):
        gate.merge([document(BASE), document(BASE, device="cuda")])


def test_unreadable_files_are_a_usage_error(files, capsys):
    bad = files("bad.json", {"kind": "something else"})
    assert main(["gate", "--results", str(bad), "--baseline", str(bad)]) == 2
    broken = document(BASE)
    broken["entries"]["bitorch.QLinear|linear-256|forward"]["ratio"] = float("nan")
    path = files("nan.json", {**broken})
    with pytest.raises(ValueError, match="positive finite ratio"):
        gate.load(path)


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
    import sys

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


def test_suspects_are_confirmed_in_a_fresh_process():
    from conformance.bench.__main__ import measure_in_fresh_process, parse_args

    case = next(c.id for c in cases.cases("quick") if c.subject.startswith("snntorch.surrogate"))
    args = parse_args(["gate", "--repeats", "1", "--builds", "1", "--sample-s", "0.002", "--no-memory"])
    confirmation = measure_in_fresh_process(args, [case])
    assert list(confirmation["entries"]) == [case] and confirmation["entries"][case]["ratio"] > 0


def test_slowed_step_takes_the_asked_fraction_longer():
    step = timing.slowed(lambda: time.sleep(0.01), 0.5)
    started = time.perf_counter()
    step()
    assert time.perf_counter() - started >= 0.015


def test_a_real_case_measures_a_positive_ratio_and_memory():
    case = cases.Case("snntorch.surrogate.atan", "32x4096", "forward+backward")
    pytest.importorskip("snntorch")
    pair = cases.build_pair(case)
    result = timing.measure(pair, repeats=3, sample_s=0.002)
    assert result.ratio > 0 and len(result.ratios) == 3 and min(result.loops) >= 1
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
                         profile="quick", repeats=1, sample_s=0.001)
    assert results["entries"] == {}
    assert "no kernel for this shape" in results["skipped"]["broken.Layer|32x4096|forward"]
    assert "not installed" in results["skipped"]["absent.Layer|32x4096|forward"]


def test_subject_patterns_match_ids_with_brackets_exactly_or_as_globs():
    assert cases.selected("snntorch.Leaky[subtract]", ["snntorch.Leaky[subtract]"])
    assert not cases.selected("snntorch.Leaky[init_hidden]", ["snntorch.Leaky[subtract]"])
    assert cases.selected("snntorch.Leaky[init_hidden]", ["snntorch.*"]) and cases.selected("x", None)


def test_a_run_stopped_by_a_time_limit_keeps_the_cases_it_measured(tmp_path):
    """`bench run` writes the document after every case ("complete": false): `timeout` killing the GPU run's
    benchmark stage once lost all of it. The run is killed for real, in a subprocess, after its first case."""
    pytest.importorskip("snntorch")
    out = tmp_path / "partial.json"
    command = [sys.executable, "-m", "conformance.bench", "run", "--profile", "quick", "--quiet", "--out", str(out),
               "--cases", "snntorch.surrogate.atan|32x4096|forward", "snntorch.surrogate.atan|32x4096|forward+backward",
               "snntorch.surrogate.sigmoid|32x4096|forward", "--builds", "1", "--repeats", "30", "--sample-s", "0.005"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait()
    partial = gate.load(out)
    assert partial["complete"] is False
    assert "snntorch.surrogate.atan|32x4096|forward" in partial["entries"]
    assert len(partial["entries"]) < 3 and len(partial["attempted"]) == 3
