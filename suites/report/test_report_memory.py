"""Memory and size: loading a results file takes at most about twice its size in memory (each line is parsed,
capped and reduced to what the report shows, one at a time), and a huge free-text field does not make a huge
report. Peak memory is measured in a fresh process: its resident-set high-water mark (restarted after the imports)
minus its resident set after the imports (Linux)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import synthetic

ROOT = Path(__file__).resolve().parents[2]
MEASURE = textwrap.dedent("""
    import json, sys
    import conformance.report.cli as report
    from conformance.report.data import load_records
    def status_kib(field):
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))
    before = status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # restart the high-water mark here (getrusage's counts the forked parent's too)
    if sys.argv[1] == "load":
        loaded = load_records([sys.argv[2]])
        shown = len(loaded.rows)
    else:
        shown = report.main(["--results", sys.argv[2], "--out", sys.argv[3], "--no-run", "--quiet", "--no-bench"])
    print(json.dumps({"peak_bytes": (status_kib("VmHWM") - before) * 1024, "shown": shown}))
""")


pytestmark = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(),
                                reason="measures memory through /proc (Linux)")


def measure(*argv) -> dict:
    done = subprocess.run([sys.executable, "-c", MEASURE, *map(str, argv)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def results_file(path: Path, megabytes: float) -> tuple[Path, int]:
    """A realistic results file of about ``megabytes``: every line a distinct cell (nothing merges away)."""
    templates = synthetic(2000)
    size = n = 0
    with open(path, "w", encoding="utf-8") as out:
        while size < megabytes * 1e6:
            rec = dict(templates[n % len(templates)])
            rec["subject"] = f"{rec['subject']}_{n // len(templates)}"
            rec["cell"] = "|".join(rec[k] for k in ("subject", "transform", "check", "device", "dtype"))
            rec["reproduce"] = f"python -m conformance.cell '{rec['cell']}'"
            line = json.dumps(rec, sort_keys=True) + "\n"
            out.write(line)
            size += len(line)
            n += 1
    return path, n


def test_loading_takes_at_most_twice_the_file_size(tmp_path):
    path, n = results_file(tmp_path / "big.jsonl", 30)
    size = path.stat().st_size
    loaded = measure("load", path)
    assert loaded["shown"] == n
    ratio = loaded["peak_bytes"] / size
    rendered = measure("main", path, tmp_path / "out")
    print(f"{size / 1e6:.0f} MB, {n} records: loading peaks at {ratio:.2f}x the file size, the whole report at "
          f"{rendered['peak_bytes'] / size:.2f}x")
    assert ratio < 2.0
    assert rendered["shown"] == 0 and rendered["peak_bytes"] < 2.5 * size


def test_a_huge_field_is_capped_when_loaded(tmp_path):
    rec = synthetic(1)[0]
    huge = "x" * 20_000_000
    rec.update(message=huge, example=huge, cause="c" * 1_000_000, run="r" * 1_000_000,
               known={"reason": huge, "link": huge, "cause": None},
               env=dict(rec["env"], platform=huge, libraries={"k" * 1_000_000: huge}),
               extra={"process_state_restored": [huge] * 3})
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(synthetic(2)[1]) + "\n")
    rendered = measure("main", path, tmp_path / "out")
    assert rendered["shown"] == 0
    sizes = {p.name: p.stat().st_size for p in (tmp_path / "out").iterdir()}
    print(f"{path.stat().st_size / 1e6:.0f} MB of free text in one line -> {sizes}; peak "
          f"{rendered['peak_bytes'] / 1e6:.0f} MB")
    assert all(size < 300_000 for size in sizes.values()), sizes
    # the one line and its parsed fields are in memory together while it is read (conformance.records.io)
    assert rendered["peak_bytes"] < 3 * path.stat().st_size
    check = json.loads((tmp_path / "out" / "matrix.json").read_text())["checks"][0]
    assert check["message"].startswith("x" * 4000) and "more characters cut when loaded" in check["message"]
    assert len(check["message"]) < 4200 and len(check["example"]) < 4200 and len(check["run"]) < 600
