"""The history view: releases in order, what changed where (fixed, broken, changed cause), records of an earlier
release never displacing the pinned release's cells, stale environments flagged, and the library page's lists."""

from __future__ import annotations

import time

import pytest

from conformance.report import libdocs
from conformance.report.cli import main
from conformance.report.data import normalise
from conformance.report.history import build_history, version_key

from .conftest import ENV, read_json, record, write

NOW = "2026-12-05T10:00:00Z"


def rows(version: str, outcomes: dict[tuple[str, str], str], *, cause: str = "forward-mismatch",
         started: str = NOW) -> list[dict]:
    env = dict(ENV, libraries={"torch": "2.13.0", "lib": version})
    made = []
    for (subject, transform), outcome in outcomes.items():
        for check in ("preserves_forward", "preserves_grad"):
            failing = outcome in ("fail", "xfail") and check == "preserves_forward"
            made.append(dict(record(f"lib.{subject}", transform, check, outcome if failing else "pass",
                                    library="lib", cause=cause if failing else None, started=started, env=env),
                             library_version=version))
    return made


@pytest.mark.parametrize("older, newer", [("0.0.0.0.14", "2.0.0"), ("0.9.4", "1.0.0"), ("1.9", "1.10"),
                                          ("1.0.0", "1.0.0.post1"), ("3.0.4", "3.1.3")])
def test_releases_are_ordered_as_numbers(older, newer):
    assert version_key(older) < version_key(newer)


def test_a_change_is_named_with_the_release_where_it_happened():
    old = rows("0.9.4", {("A", "vmap"): "pass", ("B", "vmap"): "xfail", ("C", "export"): "fail",
                         ("D", "export"): "pass", ("E", "export"): "pass"})
    old += rows("0.9.4", {("C", "jit_trace"): "fail"}, cause="state-lost")
    middle = rows("0.9.9", {("A", "vmap"): "pass"})
    new = rows("1.0.0", {("A", "vmap"): "xfail", ("B", "vmap"): "pass", ("D", "export"): "pass",
                         ("C", "export"): "fail", ("F", "export"): "pass"})
    new += rows("1.0.0", {("C", "jit_trace"): "fail"}, cause="state-lost-between-calls")
    history = build_history([normalise(r) for r in new], [normalise(r) for r in old + middle], time.time())
    entry = history["lib"]
    assert entry["releases"] == ["0.9.4", "0.9.9", "1.0.0"] and entry["pinned"] == ["1.0.0"]
    changes = {(c["subject"], c["transform"]): (c["from"], c["to"], c["kind"]) for c in entry["changes"]}
    assert changes == {("lib.A", "vmap"): ("0.9.9", "1.0.0", "broken"),  # known failures count as failures
                       ("lib.B", "vmap"): ("0.9.4", "1.0.0", "fixed"),
                       ("lib.C", "jit_trace"): ("0.9.4", "1.0.0", "changed")}  # same status, another cause
    by_row = {(r["subject"], r["transform"]): r for r in entry["rows"]}
    assert "0.9.9" not in by_row[("lib.E", "export")]["by_release"]  # a release that did not record it
    assert by_row[("lib.F", "export")]["changed_in"] == []  # new in the pinned release: nothing to compare
    assert by_row[("lib.C", "export")]["by_release"]["1.0.0"] == {
        "status": "fails", "causes": ["forward-mismatch"], "n_fails": 1, "n_total": 2}
    assert {e["name"]: e["cells"] for e in entry["environments"]} == {"lib-0.9.4": 12, "lib-0.9.9": 2}


def test_no_history_without_records_of_another_release():
    pinned = [normalise(r) for r in rows("1.0.0", {("A", "vmap"): "pass"})]
    assert build_history(pinned, [], time.time()) == {}
    assert build_history(pinned, pinned, time.time()) == {}  # the pinned release again is not a history


def test_the_report_keeps_the_pinned_cells_shows_the_history_and_flags_a_stale_environment(tmp_path, capsys):
    results = write(tmp_path / "results" / "gw0.jsonl", rows("1.0.0", {("A", "vmap"): "xfail"})).parent
    history = write(tmp_path / "history" / "lib-0.9.4.jsonl",
                    rows("0.9.4", {("A", "vmap"): "pass"}, started="2026-01-01T00:00:00Z")).parent
    out = tmp_path / "out"
    assert main(["--results", str(results), "--history", str(history), "--out", str(out), "--no-run",
                 "--no-bench"]) == 0
    said = capsys.readouterr().err
    assert "stale history records (older than 7 days): lib-0.9.4" in said
    model = read_json(out / "matrix.json")
    assert {c["cell"]: c["outcome"] for c in model["checks"]}["lib.A|vmap|preserves_forward|cpu|float32"] == "xfail"
    assert model["history"]["lib"]["changes"][0]["kind"] == "broken"
    markdown = (out / "matrix.md").read_text()
    assert "## Across releases" in markdown and "| lib.A     | vmap        | ✓ passes" in markdown
    assert main(["--results", str(results), "--history", str(tmp_path / "none"), "--out", str(out),
                 "--no-run"]) == 2  # a named history without records is an error, as --results is
    docs = tmp_path / "docs"
    assert libdocs.main(["--results", str(results), "--history", str(history), "--out", str(docs)]) == 0
    page = (docs / "lib.md").read_text()
    assert "### Broken in 1.0.0" in page and "`lib.A` × vmap: ✓ passes in 0.9.4 → ✗ fails 1/2" in page


def test_a_release_that_cannot_build_any_subject_is_listed_with_its_error_not_compared_cell_by_cell():
    broken = [dict(r, cause="build-failed", message="[build] ImportError: norse_op.so: undefined symbol _ZN5torch")
              for r in rows("1.0.0", {("A", "vmap"): "fail", ("B", "export"): "fail"})]
    for r in broken:
        r["outcome"] = "fail"
    uninstalled = [dict(r, library_version=None, outcome="skip") for r in rows("0.5", {("A", "vmap"): "pass"})]
    pinned = [normalise(r) for r in rows("1.1.0", {("A", "vmap"): "pass", ("B", "export"): "pass"})]
    history = build_history(pinned, [normalise(r) for r in broken + uninstalled], time.time())
    entry = history["lib"]
    assert entry["releases"] == ["1.1.0"] and entry["changes"] == []
    (environment,) = entry["environments"]  # the skips of an uninstalled library belong to no release
    assert environment["version"] == "1.0.0"
    assert environment["unusable"] == {"cause": "build-failed",
                                       "message": "[build] ImportError: norse_op.so: undefined symbol _ZN5torch"}
