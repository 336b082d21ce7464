"""The static site of published reports: every run under its own address, the newest as the landing page, an index
linking every run, and every string read from a run escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conformance.report.cli import main

from .conftest import record, write

HOSTILE = "<img src=x onerror=alert(1)>"


def report(tmp_path: Path, name: str, subject: str) -> Path:
    results = write(tmp_path / f"results-{name}" / "gw0.jsonl",
                    [record(subject, "eager", "forward_matches_spec", "pass"),
                     record(subject, "pickle", "preserves_forward", "fail", cause="forward-mismatch")]).parent
    out = tmp_path / f"report-{name}"
    assert main(["--results", str(results), "--out", str(out), "--no-run", "--quiet", "--no-bench", "--no-history"]) == 0
    return out


def test_a_site_built_from_two_runs_lands_on_the_newest_and_keeps_both_addresses(tmp_path, capsys):
    older, newer = report(tmp_path, "older", "lib.Older"), report(tmp_path, "newer", f"lib.{HOSTILE}")
    data = json.loads((older / "matrix.json").read_text())
    data["generated"] = "2026-01-01T00:00:00Z" + HOSTILE  # older, by the time it was generated (and hostile)
    (older / "matrix.json").write_text(json.dumps(data))

    # the first publication; then the second reads the first site back and extends it
    assert main(["site", "--add", str(older), "--run-id", "20", "--out", str(tmp_path / "published")]) == 0
    (tmp_path / "published" / "runs" / "bad<id>").mkdir()
    site = tmp_path / "published"  # written in place, as the workflow does on its checkout of gh-pages
    assert main(["site", "--runs-from", str(site), "--add", str(newer), "--run-id", "3", "--out", str(site)]) == 0

    landing = (site / "index.html").read_text(encoding="utf-8")
    assert "lib.&lt;img" in landing or "lib.\\u003cimg" in landing  # the newest run's matrix (run id 3) ...
    assert "lib.Older" not in landing and 'Run <code>3</code>' in landing and "the newest run" in landing
    for run, subject in (("20", "lib.Older"), ("3", "lib.\\u003cimg")):
        page = (site / "runs" / run / "index.html").read_text(encoding="utf-8")
        assert subject in page and page.count('id="site-run"') == 1, run  # one banner, even read back published
        assert (site / "runs" / run / "matrix.json").is_file() and (site / "runs" / run / "summary.md").is_file()
    assert "an earlier run; the newest is" in (site / "runs" / "20" / "index.html").read_text(encoding="utf-8")

    index = (site / "runs" / "index.html").read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]*)/"><code>', index)
    assert links == ["3", "20"]  # both runs, newest first (by generation time, not by id)
    assert [r["run"] for r in json.loads((site / "runs.json").read_text())] == ["3", "20"]
    assert HOSTILE not in index and "&lt;img src=x onerror=alert(1)&gt;" in index  # matrix.json's text, escaped
    assert "bad&lt;id&gt;: not a run id" in index and "<id>" not in index  # a directory that is not a run, named
    assert "left out bad<id>" in capsys.readouterr().err


def test_a_report_without_a_matrix_or_with_a_path_unsafe_id_is_refused(tmp_path, capsys):
    older = report(tmp_path, "older", "lib.Older")
    assert main(["site", "--add", str(older), "--run-id", "../x", "--out", str(tmp_path / "site")]) == 2
    assert main(["site", "--add", str(tmp_path), "--run-id", "1", "--out", str(tmp_path / "site")]) == 2
    assert "no matrix.html" in capsys.readouterr().err and not (tmp_path / "site").exists()


def test_the_workflow_publishes_the_merged_report_with_this_command():
    workflow = (Path(__file__).resolve().parents[2] / ".github" / "workflows" / "matrix.yml").read_text()
    job = workflow.split("\n  publish:\n", 1)[1]
    assert "needs: report" in job and "actions/deploy-pages" in job and "pages: write" in job
    assert re.search(r'python -m conformance\.report site --runs-from (\S+) --add \S+ --run-id "\$\{\{ github\.run_id \}\}" '
                     r"--out \1\n", job)  # the site read back and written in place, as the test above does
