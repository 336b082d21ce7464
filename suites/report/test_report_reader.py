"""What a reader of the report is told: every source read or left out, the torch release beside each device, pass
rates that a filter can be applied to, and what summary.md compares against."""

from __future__ import annotations

import json
import re

import pytest

from conformance.report.cli import main

from .conftest import ENV, read_json, record, write

CUDA_ENV = {**ENV, "torch": "2.11.0+cu128", "cuda": "12.8", "device_name": "NVIDIA H100 80GB HBM3"}
HOSTILE = "<script>alert(1)<\\script>|`x`"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A checkout's layout (results, checked-in CUDA records, release history) as the working directory."""
    write(tmp_path / "reports" / "results" / "run-1" / "gw0.jsonl",
          [record("lib.A", "eager", "forward_matches_spec", "pass"),
           record("lib.A", "pickle", "preserves_forward", "fail", cause="forward-mismatch")])
    write(tmp_path / "reports" / "cuda" / "h100.jsonl",
          [record("lib.A", "eager", "forward_matches_spec", "pass", device="cuda", env=CUDA_ENV, run="gpu")])
    write(tmp_path / "reports" / "history" / "lib-0.1-20261205.jsonl",
          [record("lib.A", "eager", "forward_matches_spec", "fail", library_version="0.1", run="old")])
    monkeypatch.chdir(tmp_path)
    return tmp_path


def render(*args: str) -> int:
    return main([*args, "--out", "out", "--no-run", "--quiet", "--no-bench"])


def test_a_results_run_says_which_default_sources_it_left_out_and_how_to_include_them(repo):
    assert render("--results", "reports/results", "--no-history") == 0
    left = {n["path"]: n for n in read_json(repo / "out" / "matrix.json")["not_included"]}
    assert set(left) == {"reports/cuda", "reports/history"}
    assert left["reports/cuda"]["include"].endswith("--results reports/results reports/cuda")
    assert left["reports/history"]["include"] == "run without --no-history"
    for name in ("matrix.html", "matrix.md", "summary.md"):
        text = (repo / "out" / name).read_text(encoding="utf-8")
        assert "reports/cuda" in text and "reports/history" in text and re.search("not included", text, re.I), name

    assert render("--results", "reports/results", "reports/cuda") == 0  # both merged, history read by default
    data = read_json(repo / "out" / "matrix.json")
    assert data["not_included"] == [] and data["devices"] == ["cpu", "cuda"]
    assert data["history_read"] == {"paths": ["reports/history"], "records": 1}
    assert "not included" not in (repo / "out" / "summary.md").read_text(encoding="utf-8").lower()


def test_a_nested_run_directory_merged_in_is_named_in_the_sources(repo):
    write(repo / "reports" / "results" / "run-1" / "test-run" / "gw0.jsonl",
          [record("lib.B", "eager", "forward_matches_spec", "pass", library="lib")])
    assert render("--results", "reports/results", "reports/cuda") == 0
    read = {s["path"]: s["records"] for s in read_json(repo / "out" / "matrix.json")["sources_read"]}
    assert read == {"reports/results/run-1": 2, "reports/results/run-1/test-run": 1, "reports/cuda": 1}
    for name in ("matrix.html", "matrix.md", "summary.md"):
        assert "reports/results/run-1/test-run" in (repo / "out" / name).read_text(encoding="utf-8"), name

    hostile = "<img src=x onerror=alert(1)>|`"
    write(repo / "reports" / "results" / hostile / "gw0.jsonl", [record("lib.C", "eager", "c", "pass", library="lib")])
    assert render("--results", "reports/results", "reports/cuda") == 0
    assert f"reports/results/{hostile}" in {s["path"] for s in read_json(repo / "out" / "matrix.json")["sources_read"]}
    for name in ("matrix.html", "matrix.md", "summary.md"):
        text = (repo / "out" / name).read_text(encoding="utf-8")
        assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text, name  # a path is text


def test_the_torch_release_is_named_beside_each_device_when_the_records_differ_by_it(repo):
    assert render("--results", "reports/results", "reports/cuda") == 0
    assert read_json(repo / "out" / "matrix.json")["torch_by_device"] == {"cpu": ["2.13"], "cuda": ["2.11"]}
    md = (repo / "out" / "matrix.md").read_text(encoding="utf-8")
    assert "## cpu (torch 2.13)" in md and "## cuda (torch 2.11)" in md
    assert "Devices: cpu (torch 2.13), cuda (torch 2.11)" in (repo / "out" / "summary.md").read_text(encoding="utf-8")
    page = (repo / "out" / "matrix.html").read_text(encoding="utf-8")
    assert "devices cpu (torch 2.13), cuda (torch 2.11)" in page
    assert '"device_labels":{"cpu":" (torch 2.13)","cuda":" (torch 2.11)"}' in page  # the device switch's labels

    assert render("--results", "reports/results") == 0  # one release: nothing to tell apart
    assert "(torch 2.13)" not in (repo / "out" / "matrix.md").read_text(encoding="utf-8")


def test_matrix_json_gives_the_pieces_of_every_filtered_rate(repo):
    assert render("--results", "reports/results", "reports/cuda") == 0
    data = read_json(repo / "out" / "matrix.json")
    assert "every check" in data["rates_over"]
    assert data["libraries"]["lib"]["by_transform"] == {"eager": {"n_pass": 2, "n_total": 2},
                                                        "pickle": {"n_pass": 0, "n_total": 1}}
    assert data["transforms_summary"]["pickle"]["by_library"] == {"lib": {"n_pass": 0, "n_total": 1}}


def test_summary_says_what_it_compares_against_and_links_relatively(repo, tmp_path):
    out = tmp_path / "elsewhere" / "out"
    assert main(["--results", "reports/results", "--out", str(out), "--no-run", "--quiet", "--no-bench"]) == 0
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "no --diff-against given: no changed-cells section" in summary
    assert str(tmp_path) not in summary  # no local absolute path
    links = re.findall(r"\]\(([^)]+)\)", summary)
    assert "matrix.html" in links and all((out / link).is_file() for link in links)

    baseline = repo / f"{HOSTILE}.json"
    baseline.write_text('{"schema": 1, "env": "cpu-torch2.13", "cells": {"lib.A|eager|forward_matches_spec|cpu|float32": '
                        '{"outcome": "pass", "cause": null}}}')
    assert main(["--results", "reports/results", "--out", str(out), "--no-run", "--quiet", "--no-bench",
                 "--diff-against", str(baseline)]) == 0
    summary = (out / "summary.md").read_text(encoding="utf-8")
    compared = next(line for line in summary.splitlines() if line.startswith("Compared against:"))
    assert "diff.md" in re.findall(r"\]\(([^)]+)\)", summary)
    assert "<script>" not in compared and "&lt;script&gt;" in compared  # the baseline's name, escaped


def test_a_record_of_the_previous_schema_is_read_as_this_one_and_a_future_one_is_refused(tmp_path):
    """Records of schema 1 (before library_version, extra, also and env's suite_time/suite_version were all
    there: the checked-in CUDA and history records) are upgraded on reading; an unknown version is a counted
    problem, not a record."""
    from conformance.records import schema
    from conformance.records.io import Problem, iter_records

    current = record("lib.A", "eager", "forward_matches_spec", "pass")
    assert current["schema"] == schema.VERSION == 2
    old = {k: v for k, v in current.items() if k not in ("library_version", "extra", "also")}
    old["schema"] = 1
    old["env"] = {k: v for k, v in current["env"].items() if k not in ("suite_time", "suite_version")}
    future = {**current, "schema": schema.VERSION + 1}
    path = tmp_path / "run" / "gw0.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(json.dumps(r) for r in (old, future)) + "\n")
    problems: list[Problem] = []
    (read,) = list(iter_records([path.parent], problems=problems))
    assert read["schema"] == 2 and read["library_version"] is None
    assert read["env"]["suite_time"] is None and read["env"]["suite_version"] is None
    assert {k: v for k, v in read.items() if k not in ("schema", "library_version", "env")} == \
        {k: v for k, v in old.items() if k not in ("schema", "env")}
    assert len(problems) == 1 and "unknown schema 3 (this version reads 1 and 2)" in problems[0].reason
    assert schema.upgrade(future) is future and schema.upgrade([1]) == [1]
