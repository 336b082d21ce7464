"""matrix.html in a real browser: it renders, filters, opens a cell's details, runs no injected script and
logs no console error. Uses headless Chromium's ``--dump-dom`` with the page's own ``#selftest`` mode, which
performs the interactions and writes what it saw into ``<pre id="selftest">``; a screenshot is saved to
reports/artifacts/ for people to look at.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.report.cli import main

from .conftest import record, write

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "reports" / "artifacts"
INJECTED = "<script>document.title='pwned';window.__injected=1</script></script> at <lambda>"


def chromium() -> str | None:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


pytestmark = pytest.mark.skipif(chromium() is None, reason="headless Chromium not installed "
                                "(Debian: apt-get install -y chromium; or set CHROMIUM=/path/to/chrome)")


def run_chromium(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-extensions", "--enable-logging=stderr", "--v=0",
               f"--user-data-dir={tmp_path / 'chromium-profile'}", *args, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=90)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    records = [
        record("snntorch.Leaky", "eager", "forward_matches_spec", "pass"),
        record("snntorch.Leaky", "eager", "grad_matches_spec", "fail", cause="grad-mismatch", message=INJECTED,
               max_abs_err=0.25, max_rel_err=0.5, atol=1e-5, rtol=1.3e-6, example="Example(x=tensor([0.5]))",
               known={"reason": "cause differs from the listed one", "link": "javascript:alert(1)", "cause": "x"}),
        record("snntorch.Leaky", "vmap", "preserves_forward", "xfail", cause="autograd-function-without-setup_context",
               known={"reason": "autograd.Function without setup_context", "link": "javascript:alert(1)",
                      "cause": None}),
        record("snntorch.Leaky", "compile_inductor", "no_graph_breaks", "pass", dtype="float64"),
        record("bitorch.QConv2d", "eager", "forward_matches_spec", "pass", library="bitorch", spec="conv.binary"),
        record("bitorch.QConv2d", "deepcopy", "preserves_forward", "crash", library="bitorch", spec="conv.binary",
               cause="deepcopy-getattr-recursion", message="RecursionError: maximum recursion depth exceeded"),
        record("bitorch.QConv2d", "eager", "forward_matches_spec", "timeout", device="cuda", library="bitorch",
               spec="conv.binary"),
    ]
    write(tmp / "results" / "gw0.jsonl", records)
    (tmp / "results" / "gw1.jsonl").write_text('{"schema": 1, "kind": "cell", "subj\n')
    assert main(["--results", str(tmp / "results"), "--out", str(tmp / "out"), "--no-run", "--quiet"]) == 0
    return tmp / "out" / "matrix.html"


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_page_renders_filters_opens_details_and_runs_no_injected_script(page, tmp_path):
    done = run_chromium(tmp_path, page.as_uri() + "#selftest", "--virtual-time-budget=5000", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="selftest">(.*?)</pre>', done.stdout, re.S)
    assert found, "self-test did not run: " + done.stdout[-2000:]
    result = json.loads(html.unescape(found.group(1)))
    assert result["errors"] == []
    assert console_lines(done.stderr) == []
    assert result["rows"] == 2 and result["cells"] == 5            # 2 subjects; eager/vmap/compile/deepcopy cells
    assert result["rows_library_filter"] == 1                      # library filter hides the other library
    assert result["rows_device_cuda"] == 1                         # the device switch: only bitorch ran on cuda
    assert result["rows_outcome_filter"] == 1                      # only snntorch.Leaky has a failing check
    assert result["rows_after_reset"] == 2
    assert result["target_has_script_message"] and result["details_open"]
    assert result["details_checks"] == 2                           # both checks of snntorch.Leaky x eager
    assert INJECTED in result["details_text"]                      # shown as text...
    assert result["details_script_elements"] == 0                  # ...never as an element
    assert not result["injected_global"] and result["title_after"] == result["title_before"] == "Conformance matrix"
    assert "javascript:alert(1)" in result["details_text"] and result["unsafe_links"] == 0  # a link only if http(s)


def test_screenshot_of_the_page_with_a_cell_open(page, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "matrix.png"
    if shot.exists():
        shot.unlink()
    url = page.as_uri() + "#open=" + "snntorch.Leaky%7Ceager"
    done = run_chromium(tmp_path, url, "--window-size=1400,900", "--hide-scrollbars", f"--screenshot={shot}",
                        "--virtual-time-budget=3000")
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.stat().st_size > 10_000
    assert console_lines(done.stderr) == []
