"""The run's own speed: the progress line's ETA comes from the remaining tests' expected durations
(conformance.plugin.ExpectedDurations), not from their count."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

from conformance.plugin import ExpectedDurations, Progress

CELLS = [(f"suites/test_matrix.py::test_cell[lib.L|eager|check{n}|cpu|float32]", "lib.L|eager") for n in range(100)]
SYSTEM = [(f"suites/test_faults.py::test_run_{n}", None) for n in range(4)]


def progress_after_the_cells(recorded: dict[str, float], tmp_path) -> Progress:
    """A run of 100 quick matrix cells and 4 slow system tests, 100 s in, every cell finished (1 s each)."""
    progress = Progress(SimpleNamespace(rootpath=tmp_path, stash={}, getini=lambda name: ".conformance"), every_s=30)
    progress.expected = ExpectedDurations(CELLS + SYSTEM, recorded)
    progress.total, progress.started = len(CELLS) + len(SYSTEM), time.monotonic() - 100
    for nodeid, _ in CELLS:
        progress.done += 1
        progress.expected.finished(nodeid, 1.0)
    return progress


def test_the_eta_counts_a_slow_tail_for_its_recorded_seconds(tmp_path):
    recorded = {"group:lib.L|eager": 100.0, "file:suites/test_faults.py": 240.0}
    line = progress_after_the_cells(recorded, tmp_path).line(time.monotonic())
    assert "ETA 4m00s" in line or "ETA 3m59s" in line, line  # by count it was 4 tests left of 104: "0m04s"


def test_the_eta_scales_by_how_fast_this_run_is(tmp_path):
    """Recorded seconds from a machine twice as fast (or with twice the workers): the ETA doubles them."""
    recorded = {"group:lib.L|eager": 50.0, "file:suites/test_faults.py": 120.0}
    assert abs(progress_after_the_cells(recorded, tmp_path).expected.eta_s(100.0) - 240.0) < 1e-6


def test_a_unit_without_a_record_is_expected_to_cost_what_its_finished_tests_did():
    expected = ExpectedDurations(CELLS + SYSTEM, {"group:lib.L|eager": 100.0})
    assert expected.of(SYSTEM[0][0]) == 1.0  # nothing of it finished: the recorded median per test
    expected.finished(SYSTEM[0][0], 60.0)
    assert expected.of(SYSTEM[1][0]) == 60.0
    assert expected.eta_s(60.0) == 60.0 / 60.0 * (3 * 60.0 + len(CELLS) * 1.0)  # its rest, and the cells


def test_the_next_run_expects_what_this_run_took(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_DIR", str(tmp_path))
    progress = progress_after_the_cells({"group:lib.L|eager": 100.0}, tmp_path)
    for nodeid, _ in SYSTEM:
        progress.expected.finished(nodeid, 60.0)
    progress.pytest_sessionfinish()
    written = json.loads((tmp_path / "test-durations.json").read_text(encoding="utf-8"))
    assert written["units"]["file:suites/test_faults.py"] == 240.0
    assert progress.recorded()["file:suites/test_faults.py"] == 240.0


def test_a_partial_run_records_no_unit(tmp_path, monkeypatch):
    from conformance.plugin import _DESELECTED

    monkeypatch.setenv("CONFORMANCE_DIR", str(tmp_path))
    progress = progress_after_the_cells({}, tmp_path)
    progress.config.stash[_DESELECTED] = True
    progress.pytest_sessionfinish()
    assert not (tmp_path / "test-durations.json").exists()


def test_a_broken_durations_file_costs_the_estimate_not_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_DIR", str(tmp_path))
    (tmp_path / "test-durations.json").write_text("{not json", encoding="utf-8")
    progress = Progress(SimpleNamespace(rootpath=tmp_path, stash={}, getini=lambda name: ".conformance"), every_s=30)
    assert progress.recorded() == {}


def test_a_workers_test_id_names_its_cells_unit():
    from conformance.plugin import _group_of

    cell = "reference.neuron.leaky|eager|forward_matches_spec|cpu|float32"
    assert _group_of(f"suites/test_matrix.py::test_cell[{cell}]@reference.neuron.leaky|eager") == \
        "reference.neuron.leaky|eager"
    assert _group_of("suites/test_faults.py::test_run[a]") is None


UNRUNNABLE_TESTS = '''
from conformance.api import Known, Subject, check_cell, parametrize_with_checks
from signlib.quant import SignSTE

MINE = Subject(id="mylib.SignSTE", spec="quant.sign_ste", build=lambda example: SignSTE(), library="signlib",
               fixed={"zero_value": 1.0},
               dtypes=frozenset({"float32"}))
KNOWN = {"mylib.SignSTE": [Known("eager", device="cuda", cause="cuda-only", reason="seen on CUDA only",
                                 reproducer="repro.py")]}


@parametrize_with_checks([MINE], transforms=["eager"], devices=("cpu", "cuda"), known=KNOWN)
def test_conformance(cell, record_cell):
    check_cell(cell, record=record_cell)
'''


def run_unrunnable_project(tmp_path, *extra):
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_cells.py").write_text(UNRUNNABLE_TESTS)
    (tmp_path / "repro.py").write_text("raise SystemExit(1)\n")
    results = tmp_path / f"results{len(extra)}"
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE_", "PYTEST_"))}
    done = subprocess.run([sys.executable, "-m", "pytest", "tests", "-p", "conformance.plugin", "-p", "no:xdist",
                           "-p", "no:cacheprovider", "-q", "--isolation", "none", "--results-dir", str(results),
                           *extra], cwd=tmp_path, env=dict(env, PYTHONPATH=os.pathsep.join([str(root), str(root / "examples" / "signlib" / "src")])), capture_output=True,
                          text=True, timeout=180)
    from conformance.records.io import iter_records

    return done, list(iter_records([results]))


def test_cells_that_cannot_run_here_are_recorded_as_skip_without_being_run_and_still_count_as_collected(tmp_path):
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("the CUDA cells can run on this machine")
    done, records = run_unrunnable_project(tmp_path)
    output = done.stdout + done.stderr
    cuda = [r for r in records if r["device"] == "cuda"]
    # the CUDA-only known failure matches a cell that was set aside: not stale (strictness sees every cell)
    assert done.returncode == 0 and "stale" not in output, output[-3000:]
    assert "cell(s) cannot run here" in output and " skipped" not in output, output[-2000:]
    assert cuda and all(r["outcome"] == "skip" for r in cuda), cuda
    assert {r["message"] for r in cuda if "_matches_spec|cuda|float32" in r["cell"]} == {"no CUDA device on this machine"}
    assert len({r["cell"] for r in records}) == len(records) and any(r["outcome"] == "pass" for r in records)
    kept, kept_records = run_unrunnable_project(tmp_path, "--collect-unrunnable")
    set_aside = sum(r["outcome"] == "skip" for r in records)
    assert kept.returncode == 0 and f"{set_aside} skipped" in kept.stdout, kept.stdout[-2000:]
    assert {r["cell"]: r["outcome"] for r in kept_records} == {r["cell"]: r["outcome"] for r in records}


def test_subjects_collects_only_the_named_subjects_cells_and_the_run_is_partial():
    """--subjects GLOB parametrizes the matrix file with those subjects' cells only (the system tests' subprocess
    runs use it: -k over the whole matrix collects every cell first). Known failures of the other subjects match no
    collected cell; the run is partial, so they are not stale."""
    from conformance import registry
    from suites.test_faults import MATRIX, ROOT, pytest_run

    done = pytest_run([str(MATRIX), "-q", "-p", "no:xdist", "--co", "--collect-unrunnable",
                       "--subjects", "reference.quant.sign_st?", "--subjects", "snntorch.Leaky[default]"],
                      cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    ids = [line.split("::test_cell[", 1)[1].rsplit("]", 1)[0] for line in done.stdout.splitlines()
           if "::test_cell[" in line]
    expected = registry.cells(["reference.quant.sign_ste", "snntorch.Leaky[default]"])
    assert ids == [c.id for c in expected]
    assert {registry.parse_cell_id(i).subject for i in ids} == {"reference.quant.sign_ste", "snntorch.Leaky[default]"}

    nothing = pytest_run([str(MATRIX), "-q", "-p", "no:xdist", "--co", "--subjects", "no.such.*"], cwd=ROOT,
                         timeout=120)
    said = nothing.stdout + nothing.stderr
    assert nothing.returncode == 4 and "--subjects 'no.such.*': no registered subject matches" in said, said
    assert "Traceback" not in said


def test_onnx_exports_reuse_the_torchlib_list_and_export_the_same_model():
    """The onnx column keeps onnxscript's torchlib list for the process (keep_torchlib_ops): each export still gets
    a registry of its own, and the exported model is byte for byte the one a plain export makes."""
    import importlib

    import pytest
    import torch

    pytest.importorskip("onnxscript")
    from torch.onnx._internal._lazy_import import onnxscript_apis

    from conformance.transforms.onnx import keep_torchlib_ops

    module = importlib.import_module(onnxscript_apis._name)
    keep_torchlib_ops()
    kept = module.get_torchlib_ops
    assert kept.kept_by_conformance
    keep_torchlib_ops()  # idempotent: not wrapped twice
    assert module.get_torchlib_ops is kept
    assert [m.qualified_name for m in kept()] == [m.qualified_name for m in kept.original()]
    assert kept() is not kept()  # a fresh list each call: a caller that changes it changes nothing kept

    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh()).eval()
    x = torch.randn(2, 4)

    def exported() -> bytes:
        return torch.onnx.export(net, (x,), dynamo=True, verbose=False).model_proto.SerializeToString()

    with_kept = exported()
    module.get_torchlib_ops = kept.original
    try:
        plain = exported()
    finally:
        module.get_torchlib_ops = kept
    assert with_kept == plain
