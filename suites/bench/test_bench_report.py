"""The report's benchmark section: a bar chart per library beside the matrix, every recorded string escaped."""

from __future__ import annotations

import json
import re

from conformance.report.cli import main
from suites.report.conftest import record, write

from .test_gate import session

EVIL = "<script>alert('x')</script>&"


def bench_file(tmp_path):
    data = session({"snntorch.Leaky[subtract]|lif-1024x50-b8|forward": [0.5],
                    "snntorch.Leaky[subtract]|lif-1024x50-b8|forward+backward": [1.9],
                    f"evil.Layer{EVIL}|32x4096|forward": [1.2]},
                   skipped={"bitorch.QLinear|linear-256|forward": f"build failed: {EVIL}"})
    data["entries"][f"evil.Layer{EVIL}|32x4096|forward"]["library"] = f"evil{EVIL}"
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    return path


def render(tmp_path, *extra):
    results = write(tmp_path / "records" / "w.jsonl", [record("snntorch.Leaky", "eager", "forward_matches_spec",
                                                             "pass")])
    out = tmp_path / "out"
    assert main(["--results", str(results), "--out", str(out), "--no-run", "--quiet", *extra]) == 0
    return (out / "matrix.html").read_text(), (out / "matrix.md").read_text(), json.loads((out / "matrix.json")
                                                                                           .read_text())


def test_bench_section_renders_bars_per_library_escaped(tmp_path):
    page, markdown, data = render(tmp_path, "--bench", str(bench_file(tmp_path)))
    section = re.search(r'<section id="bench">.*?</section>', page, re.S).group(0)
    assert "<h4>snntorch</h4>" in section and section.count('<svg class="chart bench"') == 2
    assert "0.50×" in section and "1.90×" in section and "peak 3.0 / 2.0 MiB" in section
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;" in section
    assert "1 case(s) not measured" in section and "build failed: &lt;script&gt;" in section
    assert "## Speed relative to the spec (cpu, quick profile)" in markdown and "1.90×" in markdown
    assert "<script>alert" not in markdown
    bench = data["bench"][0]
    assert bench["device"] == "cpu" and len(bench["libraries"]["snntorch"]) == 2
    assert "bench" in data["doc"]


def test_no_bench_section_without_results_or_with_no_bench(tmp_path):
    page, markdown, data = render(tmp_path, "--no-bench")
    assert 'id="bench"' not in page and "Speed relative" not in markdown and data["bench"] == []


def test_an_unreadable_bench_file_is_a_problem_not_an_error(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    page, _, data = render(tmp_path, "--bench", str(broken))
    assert any("benchmark results not shown" in p["reason"] for p in data["problems"])
    assert 'id="bench"' not in page
