"""Shards: a deterministic partition of a pytest run into ``n`` parts that separate machines (a CI job matrix) run.

``pytest suites/test_matrix.py --shard 2/4`` runs the second of four parts. The unit of the partition is what must
stay on one worker: a cell's ``xdist_group`` (one subject x transform, whose compiled module and outcomes its checks
share) and, for any other test, its file (module fixtures). Units are weighed by the seconds their cells took in a
recorded run (the checked-in ``reports/shard-durations.json``, or ``--shard-durations FILE``) and, where no record
exists, by their number of tests times the median seconds per test of the recorded units; then each unit, heaviest
first, goes to the lightest shard (ties: the lower shard, units by name). Every shard computes the same plan from the
same collected tests and the same file, so the n shards together run every test exactly once; a shard's records
name it (``shard`` in the run's ``suite.json``), and the report merges them like any records.

    python -m conformance.shards durations --results reports/results/<run> --out reports/shard-durations.json
    python -m conformance.shards plan --shards 4 [-- -k EXPR]  # the plan: tests and seconds per shard
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from .core.escape import terminal_text
from .core.fileio import atomic_write
from .core.settings import UsageError
from .core.usage import OneLineParser

#: The checked-in weights (seconds per unit from a recorded CPU run), relative to the repository root.
DEFAULT_DURATIONS = Path("reports") / "shard-durations.json"
KIND = "conformance.shard-durations"


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` (1 <= i <= n) as (i, n); a usage error in one line otherwise."""
    index, sep, count = str(text).partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: expected i/n with 1 <= i <= n, e.g. --shard 2/4")
    return i, n


def unit_of(nodeid: str, group: str | None) -> str:
    """The unit a test is planned with: its xdist group, else its file."""
    return f"group:{group}" if group else f"file:{nodeid.split('::', 1)[0]}"


def load_durations(path: Path | str) -> dict[str, float]:
    """Seconds per unit from a durations file; a missing file is no weights (every unit weighed by its size), a
    corrupt one a usage error."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("kind") != KIND:
            raise ValueError(f"not a {KIND} file")
        units = {str(unit): float(seconds) for unit, seconds in dict(data["units"]).items()}
        if not all(0 <= seconds < float("inf") for seconds in units.values()):
            raise ValueError("seconds must be finite and not negative")
        return units
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError) as error:
        raise UsageError(f"--shard-durations {path}: {str(error).splitlines()[0][:200]}") from None


def plan(sizes: Mapping[str, int], durations: Mapping[str, float], count: int) -> dict[str, int]:
    """Shard (1..count) of every unit in ``sizes`` (unit -> number of tests), balanced by ``durations``."""
    known = [durations[u] / sizes[u] for u in sizes if u in durations and sizes[u] > 0]
    per_test = statistics.median(known) if known else 1.0
    weight = {u: durations[u] if u in durations else sizes[u] * per_test for u in sizes}
    load = [0.0] * count
    shard_of = {}
    for unit in sorted(sizes, key=lambda u: (-weight[u], u)):
        lightest = min(range(count), key=lambda s: (load[s], s))
        shard_of[unit] = lightest + 1
        load[lightest] += weight[unit]
    return shard_of


def shards_of(tests: Sequence[tuple[str, str | None]], count: int, durations: Mapping[str, float]) -> list[int]:
    """The shard (1..count) of each (nodeid, xdist group) of ``tests``."""
    units = [unit_of(nodeid, group) for nodeid, group in tests]
    shard_of = plan(Counter(units), durations, count)
    return [shard_of[unit] for unit in units]


def select(tests: Sequence[tuple[str, str | None]], shard: tuple[int, int],
           durations: Mapping[str, float]) -> list[bool]:
    """For each (nodeid, xdist group) of ``tests``: whether shard ``(i, n)`` runs it."""
    i, n = shard
    return [s == i for s in shards_of(tests, n, durations)]


def xdist_group(item) -> str | None:
    """The ``xdist_group`` a pytest item is marked with (a matrix cell's subject x transform), or None."""
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker and marker.args else None


def durations_from_records(paths: Iterable[Path | str]) -> dict[str, float]:
    """Seconds per cell unit (``group:<subject>|<transform>``, as the matrix groups cells) in recorded runs; a cell
    recorded twice counts once (its latest record)."""
    from .records.io import cell_key, iter_records

    latest: dict[str, tuple[str, float]] = {}
    for record in iter_records(paths):
        if record.get("kind", "cell") != "cell":
            continue
        seconds = float(record.get("duration_s") or 0.0)
        key = cell_key(record)
        stamp = str(record.get("started") or "")
        if key not in latest or stamp >= latest[key][0]:
            latest[key] = (stamp, seconds)
    units: dict[str, float] = defaultdict(float)
    for key, (_, seconds) in latest.items():
        subject, transform = key.split("|")[:2]
        units[unit_of("", f"{subject}|{transform}")] += seconds
    return {unit: round(seconds, 3) for unit, seconds in sorted(units.items())}


def write_durations(units: Mapping[str, float], out: Path | str, source: str) -> None:
    atomic_write(out, json.dumps({"kind": KIND, "schema": 1, "source": source, "units": dict(units)},
                                 indent=0, sort_keys=True) + "\n")


def imbalance(loads: Sequence[float]) -> float:
    """The heaviest shard's load over the mean load (1.0: perfectly balanced)."""
    mean = sum(loads) / len(loads) if loads else 0.0
    return max(loads) / mean if mean else 1.0


# ----------------------------------------------------------------------------------------------- command line
def _collect(pytest_args: Sequence[str]) -> list[tuple[str, str | None]]:
    """(nodeid, xdist group) of every test pytest collects with ``pytest_args`` (in this process)."""
    import pytest

    found: list[tuple[str, str | None]] = []

    class Collector:
        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, items):
            found.extend((item.nodeid, xdist_group(item)) for item in items)

    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *pytest_args], plugins=[Collector()])
    if code not in (0, 5):
        raise UsageError(f"collection failed (pytest exit {int(code)})")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m conformance.shards", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("durations", help="write the seconds per unit of recorded runs (the plan's weights)")
    made.add_argument("--results", nargs="+", required=True, help="result files or directories of a whole run")
    made.add_argument("--out", default=str(DEFAULT_DURATIONS))
    shown = sub.add_parser("plan", help="print the plan: units, tests and expected seconds per shard")
    shown.add_argument("--shards", type=int, required=True)
    shown.add_argument("--shard-durations", default=str(DEFAULT_DURATIONS))
    shown.add_argument("--tests", default="suites/test_matrix.py", help="what pytest collects (default %(default)s)")
    shown.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --: e.g. -- -k cpu")
    args = parser.parse_args(argv)
    try:
        if args.command == "durations":
            units = durations_from_records(args.results)
            if not units:
                raise UsageError(f"no cell records under {' '.join(args.results)}")
            try:
                write_durations(units, args.out, source=" ".join(Path(p).name for p in args.results))
            except OSError as error:
                raise UsageError(f"--out {args.out}: cannot write it: {error.strerror or error}") from None
            print(f"{args.out}: {len(units)} units, {sum(units.values()):.0f} s recorded")
            return 0
        if args.shards < 1:
            raise UsageError("--shards must be at least 1")
        durations = load_durations(args.shard_durations)
        tests = _collect([args.tests, *args.pytest_args])
        counts = [0] * args.shards
        units: list[set[str]] = [set() for _ in range(args.shards)]
        for (nodeid, group), shard in zip(tests, shards_of(tests, args.shards, durations)):
            counts[shard - 1] += 1
            units[shard - 1].add(unit_of(nodeid, group))
        loads = [sum(durations.get(u, 0.0) for u in mine) for mine in units]
        for i in range(args.shards):
            print(f"shard {i + 1}/{args.shards}: {counts[i]} tests, {len(units[i])} units, "
                  f"{loads[i]:.0f} s recorded")
        print(f"imbalance (heaviest / mean, recorded seconds): {imbalance(loads):.3f}")
        return 0
    except UsageError as error:
        print(f"python -m conformance.shards: {terminal_text(error)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
