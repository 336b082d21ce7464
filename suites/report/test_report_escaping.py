"""Every output escapes what it renders: a record with hostile text in every field (coordinates, environment,
library names and versions, known failure, example, message, cause, run, ...), a hostile unreadable line and a
hostile benchmark file, rendered into every format (HTML, Markdown, JSON, library pages, expectations, terminal
lines), and nothing comes out raw."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance import expectations
from conformance.core.escape import cell_command, md_code, md_text
from conformance.report import html as report_html
from conformance.report import libdocs
from conformance.report.cli import main

from .conftest import record, write

#: Direction marks, embeddings, overrides and isolates (U+202E then "evil" shows "live"), every C0 and C1 control.
BIDI_AND_CONTROLS = "".join(map(chr, [*range(0x202a, 0x202f), *range(0x2066, 0x206a), 0x200e, 0x200f, 0x061c,
                                      *range(0x00, 0x20), *range(0x7f, 0xa0)]))
HOSTILE = ("<script>alert(1)</script><img src=x onerror=alert(2)>|`[click](javascript:alert(3))`[r][x] **b** _i_ "
           "~~s~~ <https://evil.example> \x1b[2J\x1b]0;title\x07\r\n\t\x00\x9b\u202e\u2028 &amp; \\| ``` # "
           f"\u202eevil {BIDI_AND_CONTROLS}")
MARK = "HOSTILE-"
#: Raw control characters (newline and tab aside), direction marks and overrides, and lone surrogates.
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                         r"\ud800-\udfff]")
#: A cell id a shell would act on, and a record whose ``reproduce`` plants commands: the report must show the command
#: derived from the id, quoted, instead.
PLANTED_ID = "shellib.$(touch ID_RAN)`touch ID_TICKS`'q\"|eager|forward_matches_spec|cpu|float32"
PLANTED = "python -m conformance.cell ok; touch PLANTED_RAN $(touch PLANTED_SUB) `touch PLANTED_TICKS`"
UNTOUCHED = {"schema", "kind", "outcome", "max_abs_err", "max_rel_err", "atol", "rtol", "tie_excluded", "duration_s"}


def hostile(where: str) -> str:
    return f"{MARK}{where} {HOSTILE}"


def poison(value, where: str):
    """Every string in ``value`` replaced by hostile text naming where it is; the keys of a mapping too."""
    if isinstance(value, str):
        return hostile(where)
    if isinstance(value, dict):
        return {(k if where == "record" and k in UNTOUCHED else hostile(f"{where}.key:{k}") if where.endswith(
            "libraries") else k): (v if where == "record" and k in UNTOUCHED else poison(v, f"{where}.{k}"))
            for k, v in value.items()}
    if isinstance(value, list):
        return [poison(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def hostile_record(outcome: str, **fixed) -> dict:
    rec = record("s", "t", "c", outcome, cause="x", message="x", example="x",
                 known={"reason": "x", "link": "x", "cause": "x", "reproducer": "x"},
                 extra={"process_state_restored": ["x", "y"]})
    rec["library_version"] = "x"
    rec["env"] = dict(rec["env"], cuda="x", suite_time="x", suite_version="x", device_name="x")
    rec = poison(rec, "record")
    assert not [k for k, v in rec.items() if isinstance(v, str) and k not in UNTOUCHED and MARK not in v]
    rec.update(fixed)
    return rec


def bench_document(case: str, ratio: float, *, skipped: dict[str, str]) -> dict:
    """A benchmark results file (schema 1, as conformance.bench.gate reads it) of one case."""
    subject, size, mode = case.split("|")[:3]  # as the gate labels a case (hostile parts may hold "|")
    entry = {"subject": subject, "library": subject.split(".")[0], "spec": "neuron.leaky", "size": size,
             "mode": mode, "against": "spec", "ratio": ratio, "ratios": [ratio] * 3, "subject_s": 0.01 * ratio,
             "reference_s": 0.01, "mem_subject": 3 * 2**20, "mem_reference": 2**21}
    return {"schema": 1, "kind": "conformance.bench", "profile": "quick", "device": "cpu", "repeats": 3,
            "sample_s": 0.01, "started": "2026-01-01T00:00:00Z", "duration_s": 1.0, "env": {},
            "attempted": sorted({case, *skipped}), "entries": {case: entry}, "skipped": skipped}


@pytest.fixture
def hostile_outputs(tmp_path, capfd):
    records = [hostile_record("fail"), hostile_record("xfail", subject=hostile("xfail.subject")),
               hostile_record("fail", transform="cpu_vs_cuda", device="cuda"),  # the CPU/CUDA agreement table
               hostile_record("fail", transform="bdpy_" + hostile("bdpy")),  # a transform library's page
               hostile_record("fail", transform="nir_" + hostile("nir")),  # the cross-framework table
               dict(record(*PLANTED_ID.split("|")[:3], "fail", cause="x", message=hostile("planted")),
                    reproduce=PLANTED)]
    results = write(tmp_path / "results" / "gw0.jsonl", records).parent
    bad = dict(records[0], outcome=hostile("bad-outcome"))  # an unreadable line quoting hostile text
    surrogate = dict(records[0], message=hostile("surrogate") + "\ud800")  # unreadable too (not encodable)
    with open(results / "gw0.jsonl", "ab") as handle:  # a raw lone surrogate too: not UTF-8
        handle.write((json.dumps(bad) + "\n" + json.dumps(surrogate) + "\n" + hostile("not-json") + "\ud800\n")
                     .encode("utf-8", "surrogatepass"))
    before = write(tmp_path / "before" / "gw0.jsonl", [dict(r, outcome="pass", cause=None) for r in records])
    case = f"{hostile('bench-subject')}|{hostile('size')}|{hostile('mode')}"
    bench = bench_document(case, 1.5, skipped={hostile("skipped-case"): hostile("skip-reason")})
    bench["entries"][case]["library"] = hostile("bench-library")
    bench.update(device=hostile("bench-device"), profile=hostile("bench-profile"), started=hostile("bench-started"))
    bench_file = tmp_path / "bench.json"
    bench_file.write_text(json.dumps(bench))
    # an earlier release of the same library, in which the first two cells passed (the history view)
    history = write(tmp_path / "history" / "old.jsonl", [dict(r, library_version=hostile("old-release"),
                                                              outcome="pass", cause=None) for r in records[:2]])
    out = tmp_path / "out"
    expected = tmp_path / "expected.json"
    assert main(["--results", str(results), "--out", str(out), "--no-run", "--bench", str(bench_file),
                 "--diff-against", str(before), "--write-expectations", str(expected), "--env", "lab",
                 "--report-url", "javascript:alert(1)", "--history", str(history.parent)]) == 0
    assert libdocs.main(["--results", str(results), "--out", str(tmp_path / "docs"),
                         "--history", str(history.parent)]) == 0
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": 1, "env": "lab", "cells": {
        hostile("a|b|c|d|e").replace("|", "/") + "|t|c|cpu|e": {"outcome": "pass", "cause": hostile("cause")}}}))
    assert expectations.main(["check", "--env", "lab", "--results", str(results), "--file", str(other)]) == 1
    terminal = capfd.readouterr()
    return tmp_path, out, terminal.out + terminal.err


class Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_html_has_no_markup_from_a_record(hostile_outputs):
    _, out, _ = hostile_outputs
    page = (out / "matrix.html").read_text(encoding="utf-8")
    assert MARK in page and not RAW_CONTROL.search(page)
    parser = Tags()
    parser.feed(page)
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    assert scripts == [{"type": "application/json", "id": "report-data"}, {}]
    assert not [tag for tag, _ in parser.tags if tag in ("img", "iframe", "object", "embed", "a", "base", "form")]
    assert not [(tag, name) for tag, attrs in parser.tags for name in attrs if name.startswith("on")]
    outside_js = page.replace(report_html._JS, "")  # the page's own script names "<script" in its self-test
    assert len(re.findall(r"<script", outside_js, re.I)) == 2 and not re.search(r"<img", page, re.I)
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))
    assert any(HOSTILE[:40] in s for s in data["strings"] if s)


def unescaped(line: str, char: str) -> int:
    return len(re.findall(rf"(?<!\\)(?:\\\\)*{re.escape(char)}", line))


def check_markdown(text: str, name: str) -> None:
    assert MARK in text, name
    assert not RAW_CONTROL.search(text), (name, RAW_CONTROL.search(text))
    fence = None
    table_columns = None
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{name}:{number}: {line[:200]!r}"
        if fence:
            if line == fence:
                fence = None
            else:
                assert not line.startswith(fence), where  # no line inside can close the block
            continue
        opening = re.match(r"(`{3,})", line)
        if opening:
            fence = opening.group(1)
            continue
        tags = {t.lower() for t in re.findall(r"</?([A-Za-z][A-Za-z0-9-]*)", line)}
        assert tags <= {"code"}, where
        # no link but to http(s) or to the report's own files beside summary.md (fixed targets, never a record's)
        assert not re.search(r"(?<!\\)\]\((?!https?://|(?:matrix\.(?:html|md|json)|diff\.md)\))", line), where
        assert not re.search(r"(?<!\\)\]\[", line), where
        assert unescaped(line, "`") % 2 == 0, where  # code spans open and close on their line
        if line.startswith("|"):
            columns = unescaped(line, "|")
            table_columns = table_columns or columns
            assert columns == table_columns, where  # a recorded '|' never adds a column
        else:
            table_columns = None
    assert fence is None, name


def test_the_history_view_is_in_every_output(hostile_outputs):
    tmp_path, out, _ = hostile_outputs
    release = f"{MARK}old-release"
    assert release in (out / "matrix.md").read_text().split("## Across releases", 1)[1]
    assert 'id="history"' in (out / "matrix.html").read_text() and release in (out / "matrix.html").read_text()
    assert json.loads((out / "matrix.json").read_text())["history"]
    assert any("## Across releases" in p.read_text() for p in (tmp_path / "docs").iterdir())


def test_markdown_outputs_escape_every_recorded_string(hostile_outputs):
    tmp_path, out, _ = hostile_outputs
    pages = sorted((tmp_path / "docs").iterdir())
    for path in [out / "matrix.md", out / "summary.md", out / "diff.md", *pages]:
        check_markdown(path.read_text(encoding="utf-8"), path.name)
    assert {p.parent for p in pages} == {tmp_path / "docs"} and len(pages) >= 2
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+\.md", p.name) for p in pages), pages
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "javascript:alert(1)" not in summary  # a --report-url that is not http(s) is not linked


def test_json_outputs_are_valid_and_carry_the_text_escaped(hostile_outputs):
    tmp_path, out, _ = hostile_outputs
    for path in (out / "matrix.json", tmp_path / "expected.json"):
        text = path.read_text(encoding="utf-8")
        assert not RAW_CONTROL.search(text) and "<" not in text and ">" not in text, path
        data = json.loads(text)
        assert MARK in json.dumps(data)
    check = json.loads((out / "matrix.json").read_text())["checks"][0]
    assert HOSTILE[:60] in check["message"]  # the text itself survives, as data


def test_terminal_lines_carry_no_control_characters_and_no_line_breaks_from_records(hostile_outputs):
    _, _, printed = hostile_outputs
    assert MARK in printed and not RAW_CONTROL.search(printed)
    for line in printed.splitlines():
        if MARK in line:
            assert re.match(r"(conformance\.report|libdocs|expectations): |  (REGRESSION|fixed) |\| ", line), line


@pytest.mark.parametrize("text", [HOSTILE, "a|b", "x`y", "<b>", "[a](javascript:b)", "![i](http://x)", "\\|"])
def test_markdown_escaping_round_trips_through_a_table_cell(text):
    for escaped in (md_text(text), md_code(text)):
        assert not RAW_CONTROL.search(escaped) and "\n" not in escaped
        assert unescaped(escaped.replace("\\|", ""), "|") == 0 or escaped.startswith("`")
        assert not re.search(r"<(?!/?code>)", escaped)


def test_checked_in_library_pages_have_safe_names():
    pages = sorted(Path(__file__).resolve().parents[2].joinpath("docs", "libraries").glob("*.md"))
    assert pages and all(libdocs.page_name(p.stem) == p.name for p in pages)


#: The place of a row's reproduce command in the page's embedded rows (REPRO in html._JS).
PAGE_REPRO = 14


def page_data(page: str) -> dict:
    return json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))


def strings_in(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def test_the_interactive_table_and_detail_panel_get_no_control_or_direction_character(hostile_outputs):
    """The page's script puts the embedded strings on screen as they are (textContent), so once parsed none may hold
    a control or direction character (U+202E shows "evil" as "live"); \\x01 is the page's placeholder for the id."""
    _, out, _ = hostile_outputs
    shown = [text.replace("\x01", "") for text in strings_in(page_data((out / "matrix.html").read_text()))]
    assert [text for text in shown if RAW_CONTROL.search(text)] == []
    assert any("\\u202eevil" in text for text in shown) and any("\\x9b" in text for text in shown)  # marked


def rendered_commands(tmp_path, out) -> dict[str, str]:
    """The planted cell's reproduce command as each output that shows one shows it."""
    checks = json.loads((out / "matrix.json").read_text())["checks"]
    data = page_data((out / "matrix.html").read_text())
    subject = next(i for i, s in enumerate(data["subjects"]) if s[0] == PLANTED_ID.split("|")[0])
    row = next(r for r in data["rows"] if r[0] == subject)
    page = (tmp_path / "docs" / "shellib.md").read_text().split("Reproduce:\n\n", 1)[1].splitlines()
    assert page[0] == "```bash" and page[2] == "```", page[:3]
    return {"matrix.json": next(c["reproduce"] for c in checks if c["cell"] == PLANTED_ID),
            "matrix.html": data["strings"][row[PAGE_REPRO]].replace("\x01", PLANTED_ID), "shellib.md": page[1]}


def test_every_output_shows_the_reproduce_command_made_from_the_cell_id(hostile_outputs):
    tmp_path, out, _ = hostile_outputs
    derived = f"CONFORMANCE_PROFILE=ci python -m conformance.cell {shlex.quote(PLANTED_ID)}"
    assert rendered_commands(tmp_path, out) == dict.fromkeys(("matrix.json", "matrix.html", "shellib.md"), derived)
    checks = json.loads((out / "matrix.json").read_text())["checks"]
    # a record's own command is never shown; a profile only when it is one of the suite's (the hostile ones aren't)
    assert {c["cell"]: c["reproduce"] for c in checks} == {
        c["cell"]: cell_command(c["cell"], profile="ci" if c["cell"] == PLANTED_ID else None) for c in checks}


def test_a_pasted_reproduce_command_runs_the_cell_and_nothing_else(hostile_outputs, tmp_path_factory):
    tmp_path, out, _ = hostile_outputs
    shell = tmp_path_factory.mktemp("shell")
    fake = shell / "bin" / "python"  # records its arguments, NUL-separated
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s\\0" "$@" > "$ARGV_FILE"\n')
    fake.chmod(0o755)
    commands = rendered_commands(tmp_path, out)
    for where, command in commands.items():
        argv = shell / f"{where}.argv"
        done = subprocess.run(["bash", "-c", command], cwd=shell, capture_output=True, text=True, timeout=10,
                              env={"PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}", "ARGV_FILE": str(argv)})
        assert done.returncode == 0, (where, command, done.stderr)
        assert argv.read_text().split("\0")[:-1] == ["-m", "conformance.cell", PLANTED_ID], (where, command)
    assert sorted(p.name for p in shell.iterdir()) == sorted(["bin", *(f"{w}.argv" for w in commands)])
