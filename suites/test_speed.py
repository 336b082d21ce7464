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
