"""summary.md: pass rates per library and per transform, every changed cell, where the full report is; always small
enough for a pull-request comment (GitHub: 65,536 characters), lists cut with a count of what was left out. And the
one-line descriptions of transforms and checks, taken from their definitions."""

from __future__ import annotations

import json
import re

from conformance.checks import CHECKS
from conformance.report.cli import main
from conformance.report.data import build_model, describe, diff, load_records
from conformance.report.markdown import DIFF_LISTS, SUMMARY_TABLE_ROWS, render_summary
from conformance.transforms import TRANSFORMS

from .conftest import read_json, record, write

GITHUB_COMMENT_LIMIT = 65_536


def test_the_summary_lists_pass_rates_every_change_and_where_the_report_is(tmp_path):
    results = write(tmp_path / "r" / "gw0.jsonl", [
        record("lib.A", "eager", "forward_matches_spec", "pass"), record("lib.A", "vmap", "preserves_forward", "fail",
                                                                         cause="forward-mismatch"),
        record("other.B", "eager", "forward_matches_spec", "xfail", library="other")]).parent
    expected = tmp_path / "e.json"
    expected.write_text(json.dumps({"schema": 1, "env": "cpu-torch2.13", "cells": {
        "lib.A|eager|forward_matches_spec|cpu|float32": {"outcome": "fail", "cause": "x"},
        "lib.A|vmap|preserves_forward|cpu|float32": {"outcome": "pass", "cause": None},
        "gone|eager|c|cpu|float32": {"outcome": "pass", "cause": None}}}))
    out = tmp_path / "out"
    assert main(["--results", str(results), "--out", str(out), "--no-run", "--quiet", "--no-bench", "--diff-against",
                 str(expected), "--report-url", "https://ci.example/run/7/matrix.html"]) == 0
    summary = (out / "summary.md").read_text()
    assert "pass 1/3 (33.3%)" in summary
    assert "| lib | 50% | 1/2 | ✗1 ✓1 |" in summary and "| other | 0% | 0/1 | ○1 |" in summary
    assert "| eager | 50% | 1/2 | ○1 ✓1 |" in summary and "| vmap | 0% | 0/1 | ✗1 |" in summary
    assert "Full report: [matrix.html](https://ci.example/run/7/matrix.html)" in summary
    assert "every cell in [matrix.md](matrix.md)" in summary and "every change in [diff.md](diff.md)" in summary
    for line in ("| `lib.A\\|vmap\\|preserves_forward\\|cpu\\|float32` | ✓ pass | ✗ fail `forward-mismatch` |",
                 "| `lib.A\\|eager\\|forward_matches_spec\\|cpu\\|float32` | ✗ fail `x` | ✓ pass |",
                 "- `other.B\\|eager\\|forward_matches_spec\\|cpu\\|float32` ○ xfail",
                 "- `gone\\|eager\\|c\\|cpu\\|float32` ✓ pass"):
        assert line in summary, line
    assert "more" not in summary  # everything fitted: nothing left out


def test_the_summary_fits_a_pull_request_comment_whatever_the_input(tmp_path):
    """20,000 changed cells with long ids, 300 libraries and 150 transforms: every list is cut, with the count of
    what it left out, and the whole stays under GitHub's limit."""
    long = "x" * 300
    records = [record(f"lib{i % 300}.{long}{i}", f"t{i % 150}", "check", ("pass", "fail", "xfail", "skip")[i % 4],
                      library=f"lib{i % 300}{'é' * 50}", cause=f"cause-{long}" if i % 4 == 1 else None)
               for i in range(20_000)]
    results = write(tmp_path / "r" / "gw0.jsonl", records).parent
    loaded = load_records([results])
    # the baseline flips outcomes or causes and lacks every fourth cell; it also has cells the run does not have
    flip = {"pass": "fail", "fail": "pass", "xfail": "pass", "skip": "pass"}
    baseline = {r["id"]: {"outcome": r["outcome"] if i % 8 == 3 else flip[r["outcome"]], "cause": "was"}
                for i, r in enumerate(loaded.rows) if i % 4}
    baseline.update({f"gone{i}|{long}|c|cpu|float32": {"outcome": "pass", "cause": None} for i in range(5000)})
    the_diff = diff(baseline, loaded.rows, against=str(tmp_path / "expected.json"))
    model = build_model(loaded, the_diff)
    text = render_summary(loaded, model, the_diff)
    assert len(text) < GITHUB_COMMENT_LIMIT and len(text.encode("utf-8")) < GITHUB_COMMENT_LIMIT
    for kind, name in (("libraries", "libraries"), ("transforms_summary", "transforms")):
        left = int(re.search(rf"… and (\d+) more {name} \(matrix\.md\)", text).group(1))
        assert left == len(model[kind]) - SUMMARY_TABLE_ROWS
    sections = text.split("## Changes against the baseline")[1]
    for title, attribute, _ in DIFF_LISTS:
        total = len(getattr(the_diff, attribute))
        assert total, attribute
        block = re.search(rf"### {title} \({total}\)\n\n(.*?)(?=\n### |\Z)", sections, re.S)
        if block is None:  # no room left even for the heading: the counts at the top still say it
            continue
        shown = len(re.findall(r"^(?:\| `|\| <code>|- `|- <code>)", block.group(1), re.M))
        cut = re.search(r"… and (\d+) more \(diff\.md\)", block.group(1))
        assert shown + (int(cut.group(1)) if cut else 0) == total, (title, shown, cut)
    assert f"{len(the_diff.regressions)} regression(s)" in text.split("## Pass rate")[0]
    assert max(map(len, text.splitlines())) < 2500


def test_transforms_and_checks_are_explained_from_their_definitions(tmp_path):
    results = write(tmp_path / "r" / "gw0.jsonl", [
        record("lib.A", "eager", "forward_matches_spec", "pass"), record("lib.A", "vmap", "preserves_forward", "pass"),
        record("lib.A", "mystery", "odd_check", "pass")]).parent
    out = tmp_path / "out"
    assert main(["--results", str(results), "--out", str(out), "--no-run", "--quiet", "--no-bench"]) == 0
    docs = read_json(out / "matrix.json")["descriptions"]
    by_id = {t.id: t for t in TRANSFORMS}
    assert docs["transforms"]["vmap"] == describe(by_id["vmap"].fn.__doc__)
    assert docs["checks"]["preserves_forward"] == describe(CHECKS["preserves_forward"].fn.__doc__)
    assert docs["transforms"]["mystery"] == "" and docs["checks"]["odd_check"] == ""
    html = (out / "matrix.html").read_text()
    section = re.search(r'<section id="definitions">.*?</section>', html, re.S).group(0)
    assert "<code>vmap</code></td><td>torch.func.vmap over the batch equals a Python loop over samples" in section
    assert "<code>mystery</code></td><td><span class=\"muted\">(not defined by this suite)" in section
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert data["transform_docs"][data["transforms"].index("eager")] == describe(by_id["eager"].fn.__doc__)
    md = (out / "matrix.md").read_text()
    assert "- `forward_matches_spec`: The output equals the spec's output" in md


def test_every_transform_and_check_of_the_suite_has_a_one_line_description():
    for name, doc in [(t.id, t.fn.__doc__) for t in TRANSFORMS] + [(n, c.fn.__doc__) for n, c in CHECKS.items()]:
        line = describe(doc)
        assert 20 < len(line) < 300 and "\n" not in line, (name, line)
        assert line.endswith((".", ")")), (name, line)  # a whole sentence, not a docstring's first line cut short


def test_describe_takes_the_first_sentence_of_the_first_paragraph():
    assert describe("""The gradient of <cot, y> w.r.t. the input equals the spec's
        formula (the STE is part of the spec). An example with a tie is not compared.

        More detail.""") == "The gradient of <cot, y> w.r.t. the input equals the spec's formula (the STE is part of the spec)."
    assert describe("torch.func.vmap over the batch, e.g. a loop. Then more.") == \
        "torch.func.vmap over the batch, e.g. a loop."
    assert describe(None) == ""
