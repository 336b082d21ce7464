"""Merging records of several suite versions and environments: which record a cell shows, what the report says
about the mix, and which records a diff against one environment's expectations compares."""

from __future__ import annotations

import json
import re

import pytest

from conformance import expectations
from conformance.records.io import NO_DEVICE
from conformance.report.cli import main
from conformance.report.data import LATEST_RUN, NEWEST_SUITE, load_records

from .conftest import ENV, read_json, record, write

OLD_SUITE = dict(ENV, suite_sha="aaaaaaaaaaaa", suite_time="2026-01-01T00:00:00Z")
NEW_SUITE = dict(ENV, suite_sha="bbbbbbbbbbbb", suite_time="2026-02-01T00:00:00Z")
NO_TIME = dict(ENV, suite_sha="cccccccccccc")  # an older record format: no suite_time
GPU_ENV = dict(ENV, torch="2.11.0+cu130", cuda="13.0", device_name="NVIDIA H200", suite_sha="gggggggggggg",
               suite_time="2025-12-01T00:00:00Z")


def outcome_of(path, cell="s|eager|c|cpu|float32", **options) -> str:
    rows = {r["id"]: r for r in load_records([path], **options).rows}
    return rows[cell]["outcome"]


def test_the_newest_suite_version_wins_a_cell_unless_the_latest_run_is_asked_for(tmp_path):
    results = write(tmp_path / "r" / "gw0.jsonl", [
        record("s", "eager", "c", "pass", env=NEW_SUITE, started="2026-02-02T00:00:00Z"),
        # re-run later with an old checkout of the suite
        record("s", "eager", "c", "fail", env=OLD_SUITE, started="2026-03-01T00:00:00Z")]).parent
    assert outcome_of(results) == "pass"
    assert outcome_of(results, latest_run_wins=True) == "fail"
    loaded = load_records([results])
    assert loaded.merge_rule == NEWEST_SUITE and load_records([results], latest_run_wins=True).merge_rule == LATEST_RUN
    assert [v["suite_sha"] for v in loaded.suite_versions] == ["bbbbbbbbbbbb", "aaaaaaaaaaaa"]
    assert [v["cells_shown"] for v in loaded.suite_versions] == [1, 0]


def test_a_record_without_a_suite_time_is_older_and_ties_fall_back_to_the_latest_run(tmp_path):
    results = write(tmp_path / "r" / "gw0.jsonl", [
        record("s", "eager", "c", "pass", env=OLD_SUITE, started="2026-01-02T00:00:00Z"),
        record("s", "eager", "c", "fail", env=NO_TIME, started="2026-05-01T00:00:00Z"),
        record("s", "vmap", "c", "pass", env=NEW_SUITE, started="2026-02-02T00:00:00Z"),
        record("s", "vmap", "c", "crash", env=NEW_SUITE, started="2026-02-03T00:00:00Z")]).parent
    assert outcome_of(results) == "pass"
    assert outcome_of(results, "s|vmap|c|cpu|float32") == "crash"


def test_a_no_device_skip_of_a_newer_suite_never_blanks_a_gpu_record(tmp_path):
    results = write(tmp_path / "r" / "gw0.jsonl", [
        record("s", "eager", "c", "fail", device="cuda", env=GPU_ENV, started="2025-12-02T00:00:00Z"),
        record("s", "eager", "c", "skip", device="cuda", env=NEW_SUITE, message=NO_DEVICE,
               started="2026-02-02T00:00:00Z")]).parent
    for latest in (False, True):
        assert outcome_of(results, "s|eager|c|cuda|float32", latest_run_wins=latest) == "fail"


def test_mixed_suite_versions_are_said_on_stderr_and_in_every_output(tmp_path, capsys):
    results = write(tmp_path / "r" / "gw0.jsonl", [
        record("s", "eager", "c", "pass", env=NEW_SUITE), record("s", "vmap", "c", "pass", env=OLD_SUITE)]).parent
    out = tmp_path / "out"
    assert main(["--results", str(results), "--out", str(out), "--no-run", "--quiet", "--no-bench"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"records come from 2 suite versions: bbbbbbbbbbbb \(2026-02-01T00:00:00Z; 1 records, 1 shown\)"
                     r", aaaaaaaaaaaa", err)
    data = read_json(out / "matrix.json")
    assert "2 suite versions" in data["mixed_suite_versions"] and len(data["suite_versions"]) == 2
    assert data["merge_rule"] == "newest-suite-version"
    html = (out / "matrix.html").read_text()
    assert 'id="suite-versions"' in html and "2 suite versions" in html
    for name in ("matrix.md", "summary.md"):
        assert "**Mixed suite versions:** the records come from 2 suite versions" in (out / name).read_text()
    assert main(["--results", str(results), "--out", str(out), "--no-run", "--quiet", "--latest-run-wins"]) == 0
    assert "most recently started record of each cell is shown" in capsys.readouterr().err
    assert read_json(out / "matrix.json")["merge_rule"] == "latest-run"


def test_one_suite_version_says_nothing(tmp_path, capsys):
    results = write(tmp_path / "r" / "gw0.jsonl", [record("s", "eager", "c", "pass", env=NEW_SUITE),
                                                   record("s", "vmap", "c", "pass", env=NEW_SUITE)]).parent
    out = tmp_path / "out"
    assert main(["--results", str(results), "--out", str(out), "--no-run", "--quiet", "--no-bench"]) == 0
    assert "suite version" not in capsys.readouterr().err
    assert read_json(out / "matrix.json")["mixed_suite_versions"] is None
    assert 'id="suite-versions"' not in (out / "matrix.html").read_text()
    assert "Mixed suite versions" not in (out / "matrix.md").read_text()


# -------------------------------------------------------------------------------------------- like with like
@pytest.fixture
def cpu_and_cuda(tmp_path):
    """A CPU run (torch 2.13; its CUDA cells are no-device skips), the checked-in GPU run (torch 2.11, other
    outcomes), and CPU expectations that match the CPU run exactly."""
    cpu = [record("s", "eager", "c", "pass"), record("s", "vmap", "c", "xfail", cause="x"),
           record("s", "eager", "c", "skip", device="cuda", message=NO_DEVICE),
           record("s", "cpu_vs_cuda", "c", "skip", device="cuda", message=NO_DEVICE)]
    gpu = [record("s", "eager", "c", "fail", device="cuda", env=GPU_ENV, cause="grad-mismatch"),
           record("s", "cpu_vs_cuda", "c", "pass", device="cuda", env=GPU_ENV),
           record("s", "eager", "c", "crash", env=GPU_ENV, started="2026-06-01T00:00:00Z")]  # the GPU's cpu cell
    write(tmp_path / "results" / "gw0.jsonl", cpu)
    write(tmp_path / "cuda" / "h200.jsonl", gpu)
    expected = tmp_path / "cpu-torch2.13.json"
    expected.write_text(json.dumps({"schema": 1, "env": "cpu-torch2.13", "cells": {
        f"{r['cell']}": {"outcome": r["outcome"], "cause": r["cause"]} for r in cpu}}))
    return tmp_path, expected


def test_the_diff_against_cpu_expectations_compares_only_cpu_records_and_says_what_it_left_out(cpu_and_cuda,
                                                                                               capsys):
    tmp_path, expected = cpu_and_cuda
    out = tmp_path / "out"
    assert main(["--results", str(tmp_path / "results"), str(tmp_path / "cuda"), "--out", str(out), "--no-run",
                 "--diff-against", str(expected), "--fail-on-regression", "--no-bench"]) == 0
    printed = capsys.readouterr().out
    assert "0 regression(s), 0 fix(es), 0 changed cause(s), 0 other outcome change(s), 0 new, 0 removed" in printed
    assert ("compared only records of environment cpu-torch2.13; left out 3 record(s) of other environments "
            "(3 of a cuda machine, torch 2.11)") in printed
    data = read_json(out / "matrix.json")
    assert data["diff"]["environment"] == "cpu-torch2.13" and data["diff"]["compared"] == 4
    assert data["diff"]["left_out"] == {"cuda machine, torch 2.11": 3}
    # the report itself still shows the merged GPU columns
    assert {c["cell"]: c["outcome"] for c in data["checks"]}["s|eager|c|cuda|float32"] == "fail"
    for name in ("matrix.md", "diff.md", "summary.md"):
        assert "left out 3 record(s) of other environments" in (out / name).read_text(), name
    assert "left out 3 record(s)" in (out / "matrix.html").read_text()


def test_a_change_in_the_environment_is_still_found_and_marked(cpu_and_cuda, capsys):
    tmp_path, expected = cpu_and_cuda
    write(tmp_path / "results" / "gw1.jsonl", [record("s", "vmap", "c", "fail", started="2025-02-01T00:00:00Z")])
    out = tmp_path / "out"
    assert main(["--results", str(tmp_path / "results"), str(tmp_path / "cuda"), "--out", str(out), "--no-run",
                 "--diff-against", str(expected), "--fail-on-regression", "--quiet", "--no-bench"]) == 1
    assert "REGRESSION s|vmap|c|cpu|float32: xfail -> fail" in capsys.readouterr().out
    html = (out / "matrix.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    marked = {data["transforms"][r[1]] + "/" + data["devices"][r[3]] for r in data["rows"] if r[20]}
    assert marked == {"vmap/cpu"}  # the GPU's own cpu cell (shown, crash) is not the compared record: unmarked


def test_expectations_check_and_accept_use_only_the_files_environment(cpu_and_cuda, capsys):
    tmp_path, expected = cpu_and_cuda
    paths = [str(tmp_path / "results"), str(tmp_path / "cuda")]
    assert expectations.main(["check", "--results", *paths, "--file", str(expected)]) == 0
    captured = capsys.readouterr()
    assert "4 cells match" in captured.out and "left out 3 record(s)" in captured.err
    accepted = tmp_path / "accepted.json"
    assert expectations.main(["accept", "--env", "cpu-torch2.13", "--results", *paths, "--file", str(accepted)]) == 0
    # sparse: the CPU run's no-device skips are implied by the environment and not listed; the GPU run's cells are
    # not of this environment
    listed = {cell: v for cell, v in json.loads(expected.read_text())["cells"].items() if "|cuda|" not in cell}
    assert json.loads(accepted.read_text())["cells"] == listed
    written = tmp_path / "written.json"
    assert main(["--results", *paths, "--out", str(tmp_path / "out"), "--no-run", "--quiet", "--no-bench",
                 "--write-expectations", str(written), "--env", "cpu-torch2.13"]) == 0
    assert json.loads(written.read_text())["cells"] == listed
    assert expectations.main(["check", "--results", *paths, "--file", str(accepted)]) == 0


def test_records_that_do_not_state_their_environment_are_compared(tmp_path):
    bare = tmp_path / "run.jsonl"
    bare.write_text(json.dumps({"schema": 1, "kind": "cell", "subject": "s", "transform": "t", "check": "c",
                                "device": "cpu", "dtype": "float32", "outcome": "pass"}) + "\n")
    file = tmp_path / "e.json"
    file.write_text(json.dumps({"schema": 1, "env": "cpu-torch2.13",
                                "cells": {"s|t|c|cpu|float32": {"outcome": "pass", "cause": None}}}))
    assert expectations.main(["check", "--results", str(bare), "--file", str(file)]) == 0


def test_sparse_expectations_list_only_what_the_suites_data_does_not_imply(tmp_path, capsys):
    """A known failure that failed as declared and a cell inapplicable by design are not listed; a cell that is
    neither listed nor implied (a new failure, a known failure whose entry was removed) makes check fail."""
    cells = [record("s", "eager", "a", "pass"),
             record("s", "eager", "b", "xfail", cause="x", known={"reason": "r", "link": "", "cause": "x"}),
             record("s", "eager", "c", "skip", message="not applicable: spec s defines no gradient"),
             record("s", "eager", "d", "skip", message="optional library 'mylib' is not installed")]
    write(tmp_path / "run" / "gw0.jsonl", cells)
    accepted = tmp_path / "e.json"
    assert expectations.main(["accept", "--env", "cpu-torch2.13", "--results", str(tmp_path / "run"),
                              "--file", str(accepted)]) == 0
    assert sorted(json.loads(accepted.read_text())["cells"]) == ["s|eager|a|cpu|float32", "s|eager|d|cpu|float32"]
    assert expectations.main(["check", "--results", str(tmp_path / "run"), "--file", str(accepted)]) == 0
    # the known failure's entry is gone: the cell now fails, unlisted and not implied
    changed = [*cells[:1], record("s", "eager", "b", "fail", cause="x"), *cells[2:]]
    write(tmp_path / "run2" / "gw0.jsonl", changed)
    capsys.readouterr()
    assert expectations.main(["check", "--results", str(tmp_path / "run2"), "--file", str(accepted)]) == 1
    assert "s|eager|b|cpu|float32 | (not listed, not implied) | fail [x]" in capsys.readouterr().out
