"""Shards (``--shard i/n``): together they run every test exactly once, a unit (one subject x transform) never
split, balanced by recorded seconds; their records merge into one report, which names a missing shard."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from conformance import shards
from conformance.core.settings import UsageError
from conformance.records.io import iter_records, missing_shards
from conformance.report.cli import main as report_main
from suites.test_faults import MATRIX, ROOT, pytest_run


@pytest.mark.parametrize("text", ["0/4", "5/4", "a/b", "1/0", "2", "", "-1/3", "1/-1"])
def test_a_bad_shard_is_one_usage_line(text):
    with pytest.raises(UsageError, match="expected i/n with 1 <= i <= n"):
        shards.parse_shard(text)


def _tests(seed: int) -> list[tuple[str, str | None]]:
    """Cells in groups of uneven size and tests of other files, as a collection yields them."""
    rng = random.Random(seed)
    tests = []
    for g in range(40):
        tests += [(f"suites/test_matrix.py::test_cell[s{g}|t|c{k}]", f"s{g}|t") for k in range(rng.randint(1, 9))]
    for f in range(6):
        tests += [(f"suites/test_other{f}.py::test_{k}", None) for k in range(rng.randint(1, 5))]
    return tests


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 60])
def test_the_shards_run_every_test_once_and_split_no_unit_whatever_the_collection_order(count):
    tests = _tests(count)
    durations = {shards.unit_of("", f"s{g}|t"): float(g % 7) * 3 + 0.5 for g in range(0, 40, 2)}  # half known
    ran = Counter()
    shard_of_unit = {}
    for i in range(1, count + 1):
        for (nodeid, group), runs in zip(tests, shards.select(tests, (i, count), durations)):
            if runs:
                ran[nodeid] += 1
                assert shard_of_unit.setdefault(shards.unit_of(nodeid, group), i) == i, "a unit was split"
    assert ran == Counter(nodeid for nodeid, _ in tests)
    shuffled = tests[:]
    random.Random(1).shuffle(shuffled)
    for i in range(1, count + 1):
        mine = {nodeid for (nodeid, _), runs in zip(shuffled, shards.select(shuffled, (i, count), durations)) if runs}
        groups = dict(tests)
        assert mine == {nodeid for nodeid, _ in tests if shard_of_unit[shards.unit_of(nodeid, groups[nodeid])] == i}


def test_the_plan_balances_recorded_seconds_not_test_counts():
    """Greedy heaviest-first: no shard exceeds the mean by more than the heaviest unit. A plan that weighed units by
    their number of tests would put the one slow unit's 100 s beside others here."""
    sizes = {f"u{k}": 1 for k in range(12)} | {"slow": 1}
    durations = {f"u{k}": 10.0 for k in range(12)} | {"slow": 100.0}
    shard_of = shards.plan(sizes, durations, 4)
    loads = [sum(durations[u] for u, s in shard_of.items() if s == i) for i in range(1, 5)]
    assert max(loads) <= sum(loads) / 4 + max(durations.values())
    assert [u for u, s in shard_of.items() if s == shard_of["slow"]] == ["slow"]
    assert shards.imbalance(loads) == pytest.approx(100 / 55)


def test_the_checked_in_durations_weigh_the_matrix_groups():
    durations = shards.load_durations(ROOT / shards.DEFAULT_DURATIONS)
    assert len(durations) > 1000 and all(u.startswith("group:") and u.count("|") == 1 for u in durations)
    assert all(seconds >= 0 for seconds in durations.values())


def test_a_corrupt_durations_file_is_a_usage_error(tmp_path):
    (tmp_path / "d.json").write_text('{"kind": "something else", "units": {}}')
    with pytest.raises(UsageError, match="not a conformance.shard-durations file"):
        shards.load_durations(tmp_path / "d.json")
    assert shards.load_durations(tmp_path / "absent.json") == {}


SUBSET = "sign_ste and cpu and float32 and not compile and not export and not jit"


def _outcomes(directory):
    return {r["cell"]: (r["outcome"], r.get("cause")) for r in iter_records([directory])}


def test_four_shards_run_one_after_another_record_what_one_run_records_and_merge_into_one_report(tmp_path, capsys):
    common = [str(MATRIX), "-q", "-p", "no:xdist", "--isolation", "none", "--subjects", "*sign_ste*", "-k", SUBSET]
    whole = pytest_run([*common, "--results-dir", str(tmp_path / "whole")], cwd=ROOT, timeout=300)
    assert whole.returncode == 0, whole.stdout[-2000:]
    for i in range(1, 5):
        part = pytest_run([*common, "--shard", f"{i}/4", "--results-dir", str(tmp_path / f"shard{i}")], cwd=ROOT,
                          timeout=300)
        assert part.returncode in (0, 5), part.stdout[-2000:]  # 5: a shard may hold no test of a small subset
    expected = _outcomes(tmp_path / "whole")
    assert len(expected) > 20
    merged = {}
    for i in range(1, 5):
        mine = _outcomes(tmp_path / f"shard{i}") if (tmp_path / f"shard{i}").exists() else {}
        assert not set(mine) & set(merged), "a cell ran in two shards"
        merged.update(mine)
    assert merged == expected

    recorded = [tmp_path / f"shard{i}" for i in range(1, 5) if (tmp_path / f"shard{i}").exists()]
    described = json.loads((recorded[0] / "suite.json").read_text())["shard"]
    assert described["part"].endswith("/4") and described["environment"]
    assert missing_shards(recorded) == []
    out = tmp_path / "report"
    assert report_main(["--results", *map(str, recorded), "--out", str(out), "--no-bench", "--quiet"]) == 0
    assert json.loads((out / "matrix.json").read_text())["n_records_read"] == len(expected)
    capsys.readouterr()
    dropped = [d for d in recorded if not d.name.endswith(described["part"].split("/")[0])]
    assert report_main(["--results", *map(str, dropped), "--out", str(out), "--no-bench", "--quiet"]) == 0
    said = capsys.readouterr().err
    assert f"shard(s) {described['part']} of {described['environment']} not found" in said


def test_a_shard_out_of_range_stops_pytest_with_one_line():
    done = pytest_run([str(MATRIX), "-q", "-p", "no:xdist", "--shard", "5/4", "--collect-only"], cwd=ROOT, timeout=120)
    assert done.returncode == 4
    assert "--shard '5/4': expected i/n with 1 <= i <= n" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
