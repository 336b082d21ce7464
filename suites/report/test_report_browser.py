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


COPY_TRANSFORMS = ("deepcopy", "deepcopy_used", "pickle", "pickle_used", "state_dict")
#: library -> (passing checks under copy transforms, failing ones, passing eager checks): "alpha" passes most checks
#: overall, "beta" fails least under copy transforms, "<gamma>" tests the escaping of a library's name
LIBRARIES = {"alpha": (2, 3, 40), "beta": (4, 1, 2), "<gamma>": (1, 4, 10)}


@pytest.fixture(scope="module")
def rates_page(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("rates")
    records = []
    for library, (passing, failing, eager) in LIBRARIES.items():
        outcomes = ["pass"] * passing + ["fail"] * failing
        for i, outcome in enumerate(outcomes):
            records.append(record(f"{library}.Layer", COPY_TRANSFORMS[i % 5], f"check_{i}", outcome, library=library,
                                  cause=None if outcome == "pass" else "state-lost"))
        records += [record(f"{library}.Layer", "eager", f"check_{i}", "pass", library=library) for i in range(eager)]
        records.append(record(f"{library}.Layer", "pickle", "skipped_check", "skip", library=library))
    write(tmp / "results" / "gw0.jsonl", records)
    earlier = record("alpha.Layer", "eager", "check_0", "fail", library="alpha")
    earlier["library_version"] = "0.1"  # a record of an earlier release: the history view
    history = write(tmp / "history" / "alpha-0.1.jsonl", [earlier])
    assert main(["--results", str(tmp / "results"), "--history", str(history.parent), "--out", str(tmp / "out"),
                 "--no-run", "--quiet", "--no-bench"]) == 0
    return tmp / "out" / "matrix.html"


def dump_dom(tmp_path: Path, url: str) -> str:
    done = run_chromium(tmp_path, url, "--virtual-time-budget=5000", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert console_lines(done.stderr) == []
    return done.stdout


def rates_shown(dom: str, table: str, key: str) -> dict[str, tuple[int, int]]:
    body = re.search(rf'<table class="list" id="{table}">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    return {html.unescape(name): (int(passing), int(total)) for name, passing, total in
            re.findall(rf'<tr data-{key}="([^"]*)" data-pass="(\d+)" data-total="(\d+)">', body)}


def fewest_failures(rates: dict[str, tuple[int, int]]) -> str:
    return max(rates, key=lambda library: rates[library][0] / rates[library][1])


def test_which_library_fails_least_under_copy_transforms_from_the_filtered_pass_rates(rates_page, tmp_path):
    data = json.loads((rates_page.parent / "matrix.json").read_text(encoding="utf-8"))
    expected: dict[str, list[int]] = {}
    for check in data["checks"]:
        if check["transform"] in COPY_TRANSFORMS and check["outcome"] != "skip":
            counts = expected.setdefault(check["library"], [0, 0])
            counts[0] += check["outcome"] == "pass"
            counts[1] += 1
    answer = fewest_failures({library: tuple(c) for library, c in expected.items()})
    assert answer == "beta"

    dom = dump_dom(tmp_path, rates_page.as_uri() + "#transform=" + ",".join(COPY_TRANSFORMS))
    shown = rates_shown(dom, "rates-library", "library")
    assert shown == {library: tuple(c) for library, c in expected.items()}
    assert fewest_failures(shown) == answer
    assert set(rates_shown(dom, "rates-transform", "transform")) == set(COPY_TRANSFORMS)
    scope = html.unescape(re.search(r'<p class="muted" id="rates-scope">(.*?)</p>', dom, re.S).group(1))
    assert "transform=" + ",".join(COPY_TRANSFORMS) in scope
    assert "&lt;gamma&gt;" in dom and "<gamma>" not in dom  # a library's name is text, never markup

    unfiltered = rates_shown(dump_dom(tmp_path, rates_page.as_uri()), "rates-library", "library")
    assert fewest_failures(unfiltered) == "alpha"  # without the filter the answer differs: the rates follow it


@pytest.mark.parametrize("section", ["history", "summary"])
def test_a_section_anchor_in_the_address_scrolls_to_it_after_the_page_is_rendered(rates_page, tmp_path, section):
    dom = dump_dom(tmp_path, rates_page.as_uri() + f"#{section}&selftest")
    result = json.loads(html.unescape(re.search(r'<pre id="selftest">(.*?)</pre>', dom, re.S).group(1)))
    assert result["errors"] == [] and result["anchor"] == section
    assert result["scroll_y"] > 0 and 0 <= result["anchor_top"] <= 120, result  # at the top, below the controls
