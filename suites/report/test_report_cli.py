"""The report's and the expectations' command lines: when the matrix is run, named paths, corrupt expectations and
bad usage (one line, exit status 2, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conformance import expectations
from conformance.records.io import NO_DEVICE
from conformance.report import cli as report
from conformance.report.cli import main

from .conftest import ENV, read_json, record, write

ROOT = Path(__file__).resolve().parents[2]
GPU_ENV = dict(ENV, torch="2.11.0+cu130", cuda="13.0", device_name="NVIDIA H200")

# A stand-in for the matrix run: writes the CPU records it is given into the results directory it is pointed at.
FAKE_RUN = textwrap.dedent("""
    import shutil, sys
    from pathlib import Path
    out = Path(sys.argv[sys.argv.index("--results-dir") + 1])
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(sys.argv[1], out / "gw0.jsonl")
    print("fake matrix run", flush=True)
""")


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """A fresh clone on a machine without a GPU: checked-in CUDA records in reports/cuda, no reports/results."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(report, "machine_devices", lambda: {"cpu"}, raising=False)
    write(tmp_path / "reports" / "cuda" / "h200.jsonl", [
        record("lib.A", "eager", "forward_matches_spec", "pass", device="cuda", env=GPU_ENV, run="gpu"),
        record("lib.A", "cpu_vs_cuda", "preserves_forward", "pass", device="cuda", env=GPU_ENV, run="gpu")])
    payload = write(tmp_path / "payload.jsonl", [
        record("lib.A", "eager", "forward_matches_spec", "pass", run="cpu"),
        record("lib.A", "vmap", "preserves_forward", "fail", cause="forward-mismatch", run="cpu"),
        record("lib.A", "eager", "forward_matches_spec", "skip", device="cuda", message=NO_DEVICE, run="cpu")])
    (tmp_path / "fake_run.py").write_text(FAKE_RUN)
    return tmp_path, [sys.executable, str(tmp_path / "fake_run.py"), str(payload)]


def test_a_fresh_clone_runs_the_cpu_matrix_and_merges_the_checked_in_cuda_columns(clone, capfd):
    tmp_path, fake_run = clone
    assert main(["--out", "out", "--quiet"], run_cmd=fake_run) == 0
    printed = capfd.readouterr().out
    assert "fake matrix run" in printed and "no records of this machine's device(s) cpu" in printed
    data = read_json(tmp_path / "out" / "matrix.json")
    assert data["devices"] == ["cpu", "cuda"]
    by_cell = {c["cell"]: c for c in data["checks"]}
    assert by_cell["lib.A|vmap|preserves_forward|cpu|float32"]["outcome"] == "fail"
    # the CPU run's no-device skip does not blank the GPU record of the same cell
    assert by_cell["lib.A|eager|forward_matches_spec|cuda|float32"]["run"] == "gpu"
    assert (tmp_path / "reports" / "results" / "gw0.jsonl").exists()


def test_no_run_when_this_machine_has_records_and_a_no_device_skip_is_not_a_record(clone, monkeypatch):
    tmp_path, fake_run = clone
    calls = []
    monkeypatch.setattr(report, "run_matrix", lambda *args, **kwargs: calls.append(args) or 0)
    skips = write(tmp_path / "reports" / "results" / "old" / "gw0.jsonl", [
        record("lib.A", "eager", "forward_matches_spec", "skip", device="cuda", message=NO_DEVICE)])
    assert main(["--out", "out", "--quiet", "--no-run"]) == 0 and calls == []
    assert main(["--out", "out", "--quiet"]) == 0 and len(calls) == 1  # only no-device skips: run
    write(skips, [record("lib.A", "eager", "forward_matches_spec", "pass")])
    assert main(["--out", "out", "--quiet"]) == 0 and len(calls) == 1  # a CPU record: render, no run
    monkeypatch.setattr(report, "machine_devices", lambda: {"cpu", "cuda"})
    (tmp_path / "reports" / "cuda" / "h200.jsonl").unlink()
    assert main(["--out", "out", "--quiet"]) == 0 and len(calls) == 2  # a GPU machine without CUDA records: run


@pytest.mark.parametrize("kind", ["missing", "empty", "unreadable"])
def test_a_named_results_path_that_is_missing_or_empty_is_never_run_into(clone, monkeypatch, capfd, kind):
    tmp_path, fake_run = clone
    monkeypatch.setattr(report.subprocess, "call", lambda words: pytest.fail(f"ran {words}"))
    named = tmp_path / "mine"
    if kind != "missing":
        named.mkdir()
    if kind == "unreadable":
        (named / "gw0.jsonl").write_text("{not json\n")
    assert main(["--results", str(named), "--out", "out"], run_cmd=fake_run) == 2
    assert main(["--results", str(named), "reports/cuda", "--out", "out", "--run-cmd", "false"]) == 2
    out, err = capfd.readouterr()
    lines = [line for line in err.splitlines() if "mine" in line and "never run into" in line]
    assert len(lines) == 2 and ("no such file or directory" if kind == "missing" else "no records") in lines[0]
    if kind == "unreadable":
        assert "gw0.jsonl:1: not JSON" in err
    assert not named.exists() or [p.name for p in named.iterdir()] in ([], ["gw0.jsonl"])
    assert not (tmp_path / "out").exists() and "Traceback" not in out + err


# ------------------------------------------------------------------------------------------ corrupt expectations
CORRUPT = {
    "not JSON": b'{"schema": 1, "cells": {',
    "not UTF-8": b'{"schema": 1, "env": "\xff\xfe", "cells": {}}',
    "nested too deep": b"[" * 100_000 + b"]" * 100_000,
    "a list": b"[1, 2]",
    "wrong schema": b'{"schema": 7, "cells": {}}',
    "cells not an object": b'{"schema": 1, "cells": []}',
    "env not a string": b'{"schema": 1, "env": 5, "cells": {}}',
    "bad cell id": b'{"schema": 1, "cells": {"a|b": {"outcome": "pass"}}}',
    "bad outcome": b'{"schema": 1, "cells": {"a|b|c|d|e": {"outcome": "great"}}}',
    "cause not a string": b'{"schema": 1, "cells": {"a|b|c|d|e": {"outcome": "fail", "cause": [1]}}}',
    "cell not an object": b'{"schema": 1, "cells": {"a|b|c|d|e": "pass"}}',
}


@pytest.mark.parametrize("what", list(CORRUPT))
def test_a_corrupt_expectations_file_is_one_line_and_exit_2(tmp_path, capfd, what):
    bad = tmp_path / "expected.json"
    bad.write_bytes(CORRUPT[what])
    results = write(tmp_path / "run" / "gw0.jsonl", [record("a", "b", "c", "pass", device="d", dtype="e")])
    for argv, run in ((["--results", str(results), "--out", str(tmp_path / "o"), "--diff-against", str(bad)], main),
                      (["check", "--results", str(results), "--file", str(bad)], expectations.main),
                      (["accept", "--partial", "--results", str(results), "--file", str(bad)], expectations.main)):
        assert run(argv) == 2, (what, argv)
        out, err = capfd.readouterr()
        assert len(err.strip().splitlines()) == 1 and str(bad) in err, (what, argv, err)
        assert "Traceback" not in out + err
    assert bad.read_bytes() == CORRUPT[what]  # accept did not overwrite it
    assert not (tmp_path / "o").exists()


def test_the_command_lines_print_no_traceback_for_a_corrupt_file(tmp_path):
    bad = tmp_path / "expected.json"
    bad.write_bytes(CORRUPT["not JSON"])
    results = write(tmp_path / "run" / "gw0.jsonl", [record("a", "b", "c", "pass", device="d", dtype="e")])
    for command in (["conformance.report", "--results", str(results), "--out", str(tmp_path / "o"), "--diff-against",
                     str(bad)], ["conformance.expectations", "check", "--results", str(results), "--file", str(bad)]):
        done = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr


def test_differing_results_exit_1_and_errors_exit_2(tmp_path):
    file = tmp_path / "expected.json"
    file.write_text(json.dumps({"schema": 1, "env": "cpu-torch2.13",
                                "cells": {"a|b|c|d|e": {"outcome": "fail", "cause": None}}}))
    results = write(tmp_path / "run" / "gw0.jsonl", [record("a", "b", "c", "pass", device="d", dtype="e")])
    assert expectations.main(["check", "--results", str(results), "--file", str(file)]) == 1
    assert expectations.main(["check", "--results", str(tmp_path / "none"), "--file", str(file)]) == 2


# --------------------------------------------------------------------------------------------------- bad usage
@pytest.mark.parametrize("argv, valid", [
    (["--bogus"], "--results"),
    (["--fail-on-regression"], "--diff-against"),
    (["--out"], "--out DIR"),
])
def test_bad_report_usage_is_one_line_with_the_valid_usage(argv, valid, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and valid in err and "error:" in err


@pytest.mark.parametrize("argv, valid", [
    (["bogus", "--results", "x"], "'check', 'accept'"),
    (["check"], "--results"),
    ([], "{check,accept}"),
])
def test_bad_expectations_usage_is_one_line_with_the_choices(argv, valid, capsys):
    with pytest.raises(SystemExit) as exit_:
        expectations.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and valid in err, err
