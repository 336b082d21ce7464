"""Bad inputs, broken baselines, full disks: every command answers with one line on stderr and a non-zero exit, never a
traceback, and leaves its outputs as they were (docs/faults.md, "Bad inputs, broken baselines, full disks")."""

from __future__ import annotations

import errno
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import expectations
from conformance.records.io import Problem, iter_records
from conformance.records.schema import VERSION
from conformance.report.cli import main as report

from .report.conftest import record, write

ROOT = Path(__file__).resolve().parent.parent
CELLS = [(f"lib.S{i}", "eager", "forward_matches_spec") for i in range(5)]


def cells(outcome: str) -> list[dict]:
    return [record(*cell, outcome, cause="forward-mismatch" if outcome == "fail" else None) for cell in CELLS]


def one_line_error(capfd) -> str:
    """What a command printed on stderr, asserted to be one line and no traceback."""
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1, err
    return err


# ------------------------------------------------------------------------------- a baseline that holds nothing
GOOD_LINE = json.dumps(cells("pass")[0]).encode()
UNREADABLE_BASELINES = {
    "empty directory": {},
    "garbage": {"gw0.jsonl": b"this is not a record\n"},
    "corrupt gz": {"run.jsonl.gz": gzip.compress(GOOD_LINE * 50)[:40] + b"\x00garbage" * 10},
    "gz of a broken stream": {"run.jsonl.gz": b"\x1f\x8b\x08\x00garbage" * 10},
    "binary data": {"gw0.jsonl": bytes(range(256)) * 4},
    "future schema": {"gw0.jsonl": GOOD_LINE.replace(b'"schema": %d' % VERSION, b'"schema": %d' % (VERSION + 1))
                      + b"\n"},
}


@pytest.mark.parametrize("what", list(UNREADABLE_BASELINES))
def test_a_baseline_without_readable_records_is_an_error_not_zero_regressions(tmp_path, capfd, what):
    now = write(tmp_path / "now" / "gw0.jsonl", cells("fail"))
    good = write(tmp_path / "good" / "gw0.jsonl", cells("pass"))
    out = tmp_path / "out"
    assert report(["--results", str(now), "--out", str(out), "--no-bench", "--no-history", "--quiet",
                   "--diff-against", str(good.parent), "--fail-on-regression"]) == 1  # the 5 regressions are caught
    capfd.readouterr()
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    for name, content in UNREADABLE_BASELINES[what].items():
        (baseline / name).write_bytes(content)
    out.joinpath("matrix.html").write_text("the previous report")
    for strict in ([], ["--fail-on-regression"]):
        assert report(["--results", str(now), "--out", str(out), "--no-bench", "--no-history",
                       "--diff-against", str(baseline), *strict]) == 2, (what, strict)
        _, err = capfd.readouterr()
        assert "Traceback" not in err and "no readable cell" in err.splitlines()[-1] and str(baseline) in err
        if what != "empty directory":
            assert "skipped" in err  # the problem with each file is printed
    assert out.joinpath("matrix.html").read_text() == "the previous report"


def test_a_baseline_with_an_unreadable_line_fails_a_strict_diff_and_is_printed_otherwise(tmp_path, capfd):
    now = write(tmp_path / "now" / "gw0.jsonl", cells("pass"))
    baseline = write(tmp_path / "baseline" / "gw0.jsonl", cells("pass"))
    with baseline.open("a") as handle:
        handle.write('{"schema": 1, "subject": "lib.S9", "trunc\n')
    common = ["--results", str(now), "--out", str(tmp_path / "out"), "--no-bench", "--no-history", "--quiet",
              "--diff-against", str(baseline.parent)]
    assert report(common) == 0
    _, err = capfd.readouterr()
    assert f"{baseline}:6: baseline: not JSON" in err
    shown = json.loads((tmp_path / "out" / "matrix.json").read_text())["problems"]
    assert [p["line"] for p in shown] == [6] and "baseline: not JSON" in shown[0]["reason"]
    assert report([*common, "--fail-on-regression"]) == 2
    _, err = capfd.readouterr()
    assert f"{baseline}:6: baseline: not JSON" in err and "1 unreadable line(s)" in err


# ------------------------------------------------------------------------------------- pathological lines
PATHOLOGICAL = {
    "deep nesting": (b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
    "nested within the limit of json, beyond a record's": (
        GOOD_LINE[:-1] + b', "extra": ' + b'{"a": ' * 40 + b"1" + b"}" * 41, "nested deeper"),
    "5000-digit integer": (b'{"schema": ' + b"9" * 5000 + b"}", "not JSON"),
    "huge integer field": (GOOD_LINE[:-1] + b', "duration_s": 1' + b"0" * 400 + b"}", "not a finite number"),
    "NaN": (GOOD_LINE.replace(b'"duration_s": 0.0', b'"duration_s": NaN'), "not JSON"),
    "invalid UTF-8": (GOOD_LINE.replace(b'"run-a"', b'"run-\xff\xfe"'), "not UTF-8"),
    "lone surrogate": (GOOD_LINE.replace(b'"run-a"', b'"run-\\ud800"'), "lone surrogate"),
    "non-object JSON": (b"[1, 2, 3]", "not a JSON object"),
    "wrong type": (GOOD_LINE.replace(b'"tie_excluded": 0', b'"tie_excluded": "many"'), "wrong type"),
    "also not a list of objects": (GOOD_LINE[:-1] + b', "also": [7]}', "'also'"),
}


def pathological_run(directory: Path) -> Path:
    good = write(directory / "gw0.jsonl", cells("pass"))
    (directory / "gw1.jsonl").write_bytes(b"\n".join(line for line, _ in PATHOLOGICAL.values()) + b"\n")
    return good


def test_every_pathological_line_is_a_counted_problem_with_its_reason(tmp_path):
    run = pathological_run(tmp_path / "run").parent
    problems: list[Problem] = []
    assert len(list(iter_records([run], problems))) == len(CELLS)
    reasons = {p.line: p.reason for p in problems}
    for line, (what, (_, reason)) in enumerate(PATHOLOGICAL.items(), 1):
        assert reason in reasons.get(line, ""), (what, reasons.get(line))
    assert len(problems) == len(PATHOLOGICAL)


def test_pathological_lines_leave_the_report_and_expectations_working(tmp_path, capfd):
    run = pathological_run(tmp_path / "run").parent
    out = tmp_path / "out"
    assert report(["--results", str(run), "--out", str(out), "--no-bench", "--no-history", "--quiet"]) == 0
    assert len(json.loads((out / "matrix.json").read_text())["problems"]) == len(PATHOLOGICAL)
    expected = tmp_path / "expected.json"
    assert expectations.main(["accept", "--results", str(run), "--file", str(expected), "--env", "lab"]) == 0
    assert expectations.main(["check", "--results", str(run), "--file", str(expected), "--env", "lab"]) == 0
    assert "Traceback" not in "".join(capfd.readouterr())


def test_a_resume_reads_past_pathological_lines(tmp_path):
    from conformance.plugin import recorded_cells

    run = tmp_path / "run"
    run.mkdir()
    (run / "gw1.jsonl").write_bytes(b"\n".join(line for line, _ in PATHOLOGICAL.values()) + b"\n")
    assert recorded_cells(run) == set()


# ---------------------------------------------------------------------- accepting a slice keeps the rest
def test_the_hint_after_a_partial_check_keeps_the_cells_the_slice_did_not_run(tmp_path, capfd):
    whole = write(tmp_path / "whole" / "gw0.jsonl", cells("pass")).parent
    expected = tmp_path / "expected.json"
    assert expectations.main(["accept", "--results", str(whole), "--file", str(expected), "--env", "lab"]) == 0
    listed = json.loads(expected.read_text())["cells"]
    assert len(listed) == len(CELLS)
    sliced = write(tmp_path / "slice" / "gw0.jsonl", [record(*CELLS[0], "fail", cause="forward-mismatch")]).parent
    capfd.readouterr()
    assert expectations.main(["check", "--partial", "--results", str(sliced), "--file", str(expected)]) == 1
    hint = capfd.readouterr().out.strip().splitlines()[-1].split("accept it: ", 1)[1]
    assert "--partial" in hint.split()
    followed = hint.split()[hint.split().index("accept"):]
    assert expectations.main(followed) == 0  # what the user runs, word for word
    kept = json.loads(expected.read_text())["cells"]
    assert set(kept) == set(listed) and kept[f"{'|'.join(CELLS[0])}|cpu|float32"]["outcome"] == "fail"


def test_accept_of_a_slice_without_partial_or_replace_writes_nothing(tmp_path, capfd):
    whole = write(tmp_path / "whole" / "gw0.jsonl", cells("pass")).parent
    expected = tmp_path / "expected.json"
    assert expectations.main(["accept", "--results", str(whole), "--file", str(expected), "--env", "lab"]) == 0
    before = expected.read_bytes()
    sliced = write(tmp_path / "slice" / "gw0.jsonl", [record(*CELLS[0], "fail", cause="forward-mismatch")]).parent
    capfd.readouterr()
    assert expectations.main(["accept", "--results", str(sliced), "--file", str(expected)]) == 2
    err = one_line_error(capfd)
    assert "lacks 4 of the 5 cells" in err and "accept --partial" in err and "--replace" in err
    assert expected.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["expected.json", "slice", "whole"]
    assert expectations.main(["accept", "--replace", "--results", str(sliced), "--file", str(expected)]) == 0
    assert list(json.loads(expected.read_text())["cells"]) == [f"{'|'.join(CELLS[0])}|cpu|float32"]
    expected.write_text("not an expectations file")
    assert expectations.main(["accept", "--results", str(sliced), "--file", str(expected)]) == 2
    assert expectations.main(["accept", "--replace", "--results", str(sliced), "--file", str(expected)]) == 0


# ------------------------------------------------------------------------------------ full disks, no access
def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class FillsUp:
    """A file that takes the first half of what is written, then the disk is full."""

    def __init__(self, real):
        self.real = real

    def write(self, data):
        self.real.write(data[:len(data) // 2])
        self.real.flush()
        full_disk()

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()


def test_a_full_disk_leaves_no_torn_record_line(tmp_path):
    from conformance.records.io import RecordWriter

    path = tmp_path / "gw0.jsonl"
    writer = RecordWriter(path)
    writer.write(cells("pass")[0])
    before = path.read_bytes()
    writer._file = FillsUp(writer._file)
    with pytest.raises(OSError):
        writer.write(cells("pass")[1])
    writer._file = writer._file.real
    assert path.read_bytes() == before
    writer.write(cells("pass")[2])  # the disk has room again: the next record is whole
    problems: list[Problem] = []
    assert len(list(iter_records([path], problems))) == 2 and not problems


def test_accept_on_a_full_disk_is_one_line_and_leaves_the_file_and_no_temporary(tmp_path, capfd, monkeypatch):
    import conformance.core.fileio as fileio

    run = write(tmp_path / "run" / "gw0.jsonl", cells("pass")).parent
    expected = tmp_path / "out" / "e.json"
    expected.parent.mkdir()
    expected.write_text("the previous expectations")
    real_fdopen = os.fdopen
    monkeypatch.setattr(fileio.os, "fdopen", lambda *a, **k: FillsUp(real_fdopen(*a, **k)))
    capfd.readouterr()
    assert expectations.main(["accept", "--replace", "--results", str(run), "--file", str(expected)]) == 2
    assert "No space left on device" in one_line_error(capfd)
    assert os.listdir(expected.parent) == ["e.json"] and expected.read_text() == "the previous expectations"


def test_atomic_writes_leave_no_temporary_when_the_target_cannot_be_replaced(tmp_path):
    from conformance.core.fileio import atomic_write_many

    (tmp_path / "a directory").mkdir()
    with pytest.raises(OSError):
        atomic_write_many({tmp_path / "first.md": "x", tmp_path / "a directory": "y"})
    assert sorted(os.listdir(tmp_path)) == ["a directory"]


def test_an_unwritable_results_dir_is_found_before_the_first_cell(tmp_path, monkeypatch):
    from conformance.records import io

    (tmp_path / "a file").write_text("")
    assert "is not a directory" in io.unwritable(tmp_path / "a file" / "run")
    assert io.unwritable(tmp_path / "new" / "run") is None and not (tmp_path / "new").exists()
    monkeypatch.setattr(io.tempfile, "TemporaryFile", lambda **k: full_disk())
    assert "No space left on device" in io.unwritable(tmp_path)


SIGN_CELLS = '''
import errno, os
from conformance import registry
from conformance.api import Subject, check_cell, parametrize_with_checks
from conformance.records import io

if os.environ.get("DISK_FULL_AFTER"):  # the disk fills up after that many records
    real_write, written = io.RecordWriter.write, []

    def write(self, record):
        if len(written) >= int(os.environ["DISK_FULL_AFTER"]):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(record)
        real_write(self, record)

    io.RecordWriter.write = write

BUILD = registry.subjects()["reference.quant.sign_ste"].build

@parametrize_with_checks([Subject(id="mylib.Sign", spec="quant.sign_ste", build=BUILD)], transforms=["eager"])
def test_conformance(cell, record_cell):
    check_cell(cell, record=record_cell)
'''


def run_cells(tmp_path: Path, results: Path, *options: str, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_sign.py").write_text(SIGN_CELLS)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "CONFORMANCE_"))}
    clean["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
                           str(tmp_path / "test_sign.py"), "-k", "cpu and float32", "--results-dir", str(results),
                           *options], cwd=tmp_path, env={**clean, **env}, capture_output=True, text=True, timeout=120)


def test_a_results_dir_that_cannot_be_written_stops_the_run_before_any_cell(tmp_path):
    (tmp_path / "a file").write_text("")
    done = run_cells(tmp_path, tmp_path / "a file" / "run")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "records cannot be written there" in done.stderr and "is not a directory" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr and " passed" not in done.stdout


def test_a_full_disk_while_recording_the_cells_that_cannot_run_here_is_one_line_and_runs_nothing(tmp_path):
    results = tmp_path / "run"
    done = run_cells(tmp_path, results, DISK_FULL_AFTER="1")
    printed = done.stdout + done.stderr
    assert done.returncode == 4 and printed.count("cannot write the records of the cells that cannot run") == 1
    assert "Traceback" not in printed and "OSError" not in printed and " passed" not in printed, printed
    problems: list[Problem] = []
    assert len(list(iter_records([results], problems))) == 1 and not problems


def test_a_full_disk_during_a_run_is_one_line_and_stops_the_run(tmp_path):
    results = tmp_path / "run"
    done = run_cells(tmp_path, results, "--collect-unrunnable", DISK_FULL_AFTER="1")
    printed = done.stdout + done.stderr
    assert done.returncode == 2, printed
    assert printed.count("cannot write the record of mylib.Sign|eager|") == 1, printed
    assert "Traceback" not in printed and "OSError" not in printed and "failed" not in printed, printed
    assert "2 passed" in printed  # one recorded, the second ran but is not recorded, no further cell ran
    problems: list[Problem] = []
    assert len(list(iter_records([results], problems))) == 1 and not problems


# ------------------------------------------------------------------------------- every command, bad inputs
def commands():
    from conformance import cell, libraries, reproducers, shards
    from conformance.bench.__main__ import main as bench
    from conformance.report import libdocs

    return {"report": report, "expectations": expectations.main, "cell": cell.main, "shards": shards.main,
            "libdocs": libdocs.main, "libraries": libraries.main, "reproducers": reproducers.main,
            "bench": bench}


BAD_INPUTS = [  # command, arguments ({run}: a run's records, {file}, {dir}, {deep}, {huge}: below), what the line says
    ("report", "--results {run} --no-bench --no-history --out {file}/out", "cannot write the report"),
    ("report", "--results {run} --no-bench --no-history --out {dir}/new --write-expectations {dir}",
     "Is a directory"),
    ("report", "--results {run} --bogus", "unrecognized arguments"),
    ("expectations", "accept --replace --env lab --results {run} --file {dir}", "Is a directory"),
    ("expectations", "accept --replace --env lab --results {run} --file {file}/e.json", "cannot write"),
    ("expectations", "check --results {run} --file {file}", "cannot read expectations"),
    ("expectations", "check --partial --replace --results {run}", "give one"),
    ("cell", "--load {file} lib.S0|eager|forward_matches_spec|cpu|float32", "not a Python file"),
    ("cell", "--bogus x", "unrecognized arguments"),
    ("cell", "--load json:loads lib.S0|eager|forward_matches_spec|cpu|float32", "gives no subjects"),
    ("cell", "--load json:__name__ lib.S0|eager|forward_matches_spec|cpu|float32", "is not a conformance.api.Subject"),
    ("shards", "durations --results {run} --out {dir}", "Is a directory"),
    ("shards", "durations --results {run} --out {file}/d.json", "cannot write it"),
    ("shards", "durations --results {dir}", "no cell records"),
    ("shards", "plan --shards x", "invalid int value"),
    ("shards", "plan --shards 2 --shard-durations {deep}", "maximum recursion depth"),
    ("shards", "plan --shards 2 --shard-durations {huge}", "too large"),
    ("libdocs", "--results {dir} --out {dir}/pages --history {dir}", "no records"),
    ("libdocs", "--results {run} --out {file}/pages --history {dir}", "cannot write the pages"),
    ("libdocs", "--bogus", "unrecognized arguments"),
    ("libraries", "", "required: command"),
    ("reproducers", "--bogus", "unrecognized arguments"),
    ("bench", "accept --results {file} --baseline {dir}/b.json", "not JSON"),
]


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("command, arguments, says", BAD_INPUTS, ids=[f"{c} {a}" for c, a, _ in BAD_INPUTS])
def test_every_command_answers_a_bad_input_with_one_line_and_touches_nothing(tmp_path, capfd, command, arguments,
                                                                               says):
    run = write(tmp_path / "run" / "gw0.jsonl", cells("pass")).parent
    (tmp_path / "a file").write_text("garbage, not JSON, not Python")
    (tmp_path / "a dir").mkdir()
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "huge.json").write_text('{"kind": "conformance.shard-durations", "units": {"u": 1' + "0" * 400 + "}}")
    places = {"file": "a file", "dir": "a dir", "deep": "deep.json", "huge": "huge.json"}
    argv = [word.format(run=run, **{k: tmp_path / v for k, v in places.items()}) for word in arguments.split()]
    before = snapshot(tmp_path)
    capfd.readouterr()
    try:
        status = commands()[command](argv)
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    assert says in one_line_error(capfd)
    assert snapshot(tmp_path) == before


def test_a_pathological_suite_description_is_ignored(tmp_path, capfd):
    run = write(tmp_path / "run" / "gw0.jsonl", cells("pass")).parent
    (run / "suite.json").write_text("[" * 100_000 + "]" * 100_000)
    (run / "sub").mkdir()
    (run / "sub" / "suite.json").write_text('{"shard": {"part": "1/' + "9" * 5000 + '"}}')
    assert report(["--results", str(run), "--out", str(tmp_path / "out"), "--no-bench", "--no-history"]) == 0
    assert "Traceback" not in "".join(capfd.readouterr())


@pytest.mark.parametrize("content", ["[" * 100_000 + "]" * 100_000,
                                     '{"kind": "conformance.bench", "schema": 1, "skipped": {}, "attempted": [], '
                                     '"entries": {"a|b|c": {"ratio": 1' + "0" * 400 + '}}}'], ids=["deep", "huge"])
def test_a_pathological_benchmark_file_is_a_problem_of_the_report(tmp_path, capfd, content):
    run = write(tmp_path / "run" / "gw0.jsonl", cells("pass")).parent
    (tmp_path / "bench.json").write_text(content)
    assert report(["--results", str(run), "--out", str(tmp_path / "out"), "--bench", str(tmp_path / "bench.json"),
                   "--no-history"]) == 0
    assert "Traceback" not in "".join(capfd.readouterr())
    problems = json.loads((tmp_path / "out" / "matrix.json").read_text())["problems"]
    assert "benchmark results not shown" in problems[0]["reason"]



def test_libdocs_on_a_full_disk_writes_no_page_and_leaves_the_previous_ones(tmp_path, capfd, monkeypatch):
    import conformance.core.fileio as fileio
    from conformance.report import libdocs

    run = write(tmp_path / "run" / "gw0.jsonl", [*cells("pass"), record("other.S", "eager", "x", "pass")]).parent
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "lib.md").write_text("the previous page")
    real_fdopen, opened = os.fdopen, []

    def second_page_fills_the_disk(*args, **kwargs):
        opened.append(real_fdopen(*args, **kwargs))
        return opened[-1] if len(opened) == 1 else FillsUp(opened[-1])

    monkeypatch.setattr(fileio.os, "fdopen", second_page_fills_the_disk)
    capfd.readouterr()
    assert libdocs.main(["--results", str(run), "--out", str(pages), "--history", str(tmp_path / "none")]) == 2
    assert "No space left on device" in one_line_error(capfd) and len(opened) == 2
    assert os.listdir(pages) == ["lib.md"] and (pages / "lib.md").read_text() == "the previous page"


def test_an_expectations_file_that_lists_no_cell_is_no_baseline(tmp_path, capfd):
    now = write(tmp_path / "now" / "gw0.jsonl", cells("fail"))
    empty = tmp_path / "expected.json"
    empty.write_text(json.dumps({"schema": 1, "env": "cpu-torch2.13", "cells": {}}))
    assert report(["--results", str(now), "--out", str(tmp_path / "out"), "--no-bench", "--no-history",
                   "--diff-against", str(empty), "--fail-on-regression"]) == 2
    assert "no readable cell" in one_line_error(capfd) and not (tmp_path / "out").exists()
