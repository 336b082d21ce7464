"""The pytest plugin: isolation of cells, one streamed record per cell, resuming, shards (``--shard i/n``,
conformance.shards), progress, hypothesis profiles.

Registered through the ``pytest11`` entry point when the package is installed (nothing to pass), or with
``-p conformance.plugin`` / ``pytest_plugins``. It does nothing to a session that runs no cell (a test with a
``conformance.api.Cell`` parameter): no thread settings, no hypothesis profile, no files.

Records go to ``<results-dir>/<worker>-<pid>.jsonl`` (default ``<rootdir>/reports/results/<run id>``), flushed per
cell, so a killed run loses nothing recorded. Faults cost one cell:

- under pytest-xdist, a worker writes ``.inflight/<worker>`` (the cell it runs) before each cell. When the worker
  dies, the controller reads it, records that cell as ``crash`` once and marks it ended (``.ended/``); the dead
  worker's other unfinished cells go back in the queue without it (``conformance.scheduling``), and a cell marked
  ended is skipped, never run again in that run. The rest of a subject that crashed a worker runs in forked
  children (one worker lost, not one per cell);
- without xdist, every CPU cell runs in a forked child (``--isolation fork``, the default there), so a crash or a
  hang in C costs that cell only;
- a hard watchdog ends a worker whose cell hangs where the in-process alarm cannot reach (C code) and records
  ``timeout``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .core.escape import terminal_text, visible
from .core.settings import (
    DEFAULT_TIMEOUT_S,
    PROFILES,
    UsageError,
    cell_timeout_s,
    configure_process,
    hard_limit_s,
    profile_name,
    register_hypothesis_profiles,
)
from .records.io import CellResult, RecordWriter, environment, iter_records, make_record, write_suite_file

if TYPE_CHECKING:  # conformance.core.types imports torch: not loaded in sessions that run no cell
    from .core.types import Cell

#: What must match for a record to count as done in this run (--resume): the suite, the versions, the profile.
RESUME_KEYS = ("suite_sha", "python", "torch", "libraries", "hypothesis_profile", "platform", "device_name", "cuda")
#: Workers xdist may replace after crashes before it gives up (its own default, 4 per worker, ends a run at the
#: ninth crashing cell of a 2-worker run; here a crashing cell costs that cell only).
MAX_WORKER_RESTARTS = 400


# ------------------------------------------------------------------------------------------------ options
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption("--results-dir", default=None,
                    help="directory for the JSONL cell records (default <rootdir>/reports/results/<run id>)")
    group.addoption("--conformance-profile", default=None, choices=list(PROFILES),
                    help="hypothesis profile of the cells (also CONFORMANCE_PROFILE; default ci)")
    group.addoption("--cell-timeout", type=float, default=None,
                    help=f"seconds before a cell is stopped and recorded as timeout (default {DEFAULT_TIMEOUT_S:g})")
    group.addoption("--resume", action="store_true",
                    help="finish a stopped run: cells already recorded in --results-dir by the same suite version, "
                         "libraries and profile are not run again")
    group.addoption("--isolation", choices=("auto", "fork", "none"), default="auto",
                    help="auto (default): under xdist cells run in the worker (a crashing subject's other cells "
                         "forked), without xdist each CPU cell in a forked child; fork: every CPU cell forked; "
                         "none: in this process (a crash ends the run)")
    group.addoption("--progress-every", type=float, default=30.0, metavar="SECONDS",
                    help="print a progress line (done/total, failures, slowest test, ETA) this often; 0: never")
    group.addoption("--shard", default=None, metavar="I/N",
                    help="run only the I-th of N deterministic parts of the collected tests (1 <= I <= N; "
                         "conformance.shards): the N parts together run every test once")
    group.addoption("--shard-durations", default=None, metavar="FILE",
                    help="seconds per unit that balance the shards (default <rootdir>/reports/shard-durations.json "
                         "where it exists, else the number of tests)")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _distributed(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and getattr(config.option, "dist", "no") != "no"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): cells of one (subject, transform) share a worker "
                                       "(pytest-xdist --dist loadgroup); harmless without xdist")
    if config.getoption("--conformance-profile"):
        os.environ["CONFORMANCE_PROFILE"] = config.getoption("--conformance-profile")
    if config.getoption("--cell-timeout"):
        os.environ["CONFORMANCE_CELL_TIMEOUT"] = str(config.getoption("--cell-timeout"))
    try:
        profile_name()
        cell_timeout_s()
        if config.getoption("--shard"):
            from .shards import parse_shard

            parse_shard(config.getoption("--shard"))
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    if _distributed(config) and config.option.maxworkerrestart is None and not _is_worker(config):
        config.option.maxworkerrestart = str(MAX_WORKER_RESTARTS)
    # The controller names the run; xdist workers inherit the environment when they start.
    os.environ.setdefault("CONFORMANCE_RUN_ID", time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6])
    results = config.getoption("--results-dir") or str(config.rootpath / "reports" / "results"
                                                       / os.environ["CONFORMANCE_RUN_ID"])
    os.environ["CONFORMANCE_RESULTS_DIR"] = str(Path(results).resolve())
    register_hypothesis_profiles()
    if config.getoption("--resume") and not _is_worker(config):  # the controller (or a run without xdist)
        if not config.getoption("--results-dir"):
            raise pytest.UsageError("--resume needs --results-dir: the directory of the run to finish")
        # Read once, by the controller, before any worker starts: every worker must collect the same cells while
        # the run appends to the same directory.
        done = recorded_cells(Path(os.environ["CONFORMANCE_RESULTS_DIR"]))
        fd, listing = tempfile.mkstemp(prefix="conformance-resume-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("\n".join(sorted(done)))
        os.environ["CONFORMANCE_RESUME_FILE"] = listing
        config.add_cleanup(lambda: os.unlink(listing) if os.path.exists(listing) else None)
        print(f"conformance: resuming {os.environ['CONFORMANCE_RESULTS_DIR']}: {len(done)} cell(s) already recorded "
              "are not run again", flush=True)
    isolation = config.getoption("--isolation")
    if isolation == "auto":
        isolation = "worker" if _is_worker(config) or _distributed(config) else "fork"
    recorder = Recorder(config, Path(os.environ["CONFORMANCE_RESULTS_DIR"]), isolation)
    config.pluginmanager.register(recorder, "conformance-recorder")
    if not _is_worker(config) and config.getoption("--progress-every") > 0:
        config.pluginmanager.register(Progress(config, config.getoption("--progress-every")), "conformance-progress")


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Scope schedulers that survive dead workers (conformance.scheduling explains xdist's bugs they avoid)."""
    from .scheduling import crash_safe_scheduler

    return crash_safe_scheduler(config, log)


def recorded_cells(directory: Path) -> set[str]:
    """Cell ids recorded in ``directory`` by this same environment, whatever their outcome (a crash or a timeout
    is recorded once, not tried again). Records of another suite version or library set make resuming an error,
    not a silent mix."""
    from .records.io import cell_key

    if not directory.exists():
        return set()
    ours = {key: environment().get(key) for key in RESUME_KEYS}
    done: set[str] = set()
    for record in iter_records([directory]):
        theirs = {key: (record.get("env") or {}).get(key) for key in RESUME_KEYS}
        if theirs != ours:
            differ = ", ".join(f"{key} {theirs[key]!r} here vs {ours[key]!r} now" for key in RESUME_KEYS
                               if theirs[key] != ours[key])
            raise pytest.UsageError(f"--resume: {directory} holds records of another environment ({differ}); "
                                    "finish it with that suite and libraries, or start a new --results-dir")
        done.add(cell_key(record))
    return done


def cell_of(item: pytest.Item) -> Cell | None:
    """The matrix cell a test item runs (its ``Cell`` parameter), or None for any other test."""
    types = sys.modules.get("conformance.core.types")  # not imported: no test has a Cell
    if types is None:
        return None
    for value in getattr(getattr(item, "callspec", None), "params", {}).values():
        if isinstance(value, types.Cell):
            return value
    return None


@pytest.hookimpl(trylast=True)  # after -k and -m: the shards split what this run selects
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    _keep_shard(config, items)  # first: a resumed shard must plan the same units as when it started
    listing = os.environ.get("CONFORMANCE_RESUME_FILE")
    if not config.getoption("--resume") or not listing:
        return
    done = set(Path(listing).read_text(encoding="utf-8").split("\n")) - {""}
    keep, skipped = [], []
    for item in items:
        cell = cell_of(item)
        (skipped if cell is not None and cell.id in done else keep).append(item)
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = keep


def _keep_shard(config: pytest.Config, items: list) -> None:
    if not config.getoption("--shard"):
        return
    from .shards import DEFAULT_DURATIONS, load_durations, parse_shard, select, xdist_group

    try:
        shard = parse_shard(config.getoption("--shard"))
        durations = load_durations(config.getoption("--shard-durations") or config.rootpath / DEFAULT_DURATIONS)
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    chosen = select([(item.nodeid, xdist_group(item)) for item in items], shard, durations)
    others = [item for item, runs in zip(items, chosen) if not runs]
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [item for item, runs in zip(items, chosen) if runs]


# ------------------------------------------------------------------------------------------ markers on disk
def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Recorder:
    """Writes cell records for this process (a worker, the controller for crash records, or a lone process) and
    keeps the run's markers: which cell each worker is running, which cells ended a worker."""

    def __init__(self, config: pytest.Config, directory: Path, isolation: str):
        self.config = config
        self.dir = directory
        self.isolation = isolation
        self.run_id = os.environ["CONFORMANCE_RUN_ID"]
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.path = self.dir / f"{self.worker}-{os.getpid()}.jsonl"
        self._writer: RecordWriter | None = None
        self._lock = threading.Lock()
        self._watchdog: threading.Timer | None = None

    # -- files
    def writer(self) -> RecordWriter:
        if self._writer is None:
            from . import registry

            self._writer = RecordWriter(self.path)
            description = registry.suite_description()  # the report's column order and legend
            if self.config.getoption("--shard"):
                from .records.expectations import environment_name

                description["shard"] = {"part": self.config.getoption("--shard"), "environment": environment_name()}
            write_suite_file(self.dir, description)
        return self._writer

    def inflight_path(self, worker: str) -> Path:
        return self.dir / ".inflight" / worker

    def ended_path(self, cell_id: str) -> Path:
        return self.dir / ".ended" / _digest(cell_id)

    def crashed_subject_path(self, subject_id: str) -> Path:
        return self.dir / ".crashed-subjects" / _digest(subject_id)

    def ended(self, cell_id: str) -> dict | None:
        """The marker of a cell that ended a process earlier in this run (crash or timeout), or None."""
        marker = _read_json(self.ended_path(cell_id))
        return marker if marker and marker.get("run") == self.run_id and marker.get("cell") == cell_id else None

    def subject_crashed(self, subject_id: str) -> bool:
        marker = _read_json(self.crashed_subject_path(subject_id))
        return bool(marker) and marker.get("run") == self.run_id

    def mark_ended(self, cell_id: str, subject_id: str, outcome: str) -> None:
        _write_json(self.ended_path(cell_id), {"run": self.run_id, "cell": cell_id, "outcome": outcome})
        _write_json(self.crashed_subject_path(subject_id), {"run": self.run_id, "subject": subject_id})

    # -- records
    def write(self, cell: Cell, result: CellResult, *, subject_fields: dict | None = None,
              origin: str | None = None) -> None:
        from . import registry

        subject = registry.subjects().get(cell.subject)
        if subject is None and subject_fields:  # the controller does not collect a third party's subjects
            from types import SimpleNamespace

            subject = SimpleNamespace(**subject_fields)
        record = make_record(run=self.run_id, cell=cell, subject=subject, result=result,
                             reproduce=reproduce_command(cell, origin), env=environment())
        with self._lock:
            self.writer().write(record)
            if result.outcome in ("crash", "timeout"):
                self.mark_ended(cell.id, cell.subject, result.outcome)
            marker = self.inflight_path(self.worker)
            if (_read_json(marker) or {}).get("cell") == cell.id:
                marker.unlink(missing_ok=True)

    # -- hooks (in the process that runs the cell)
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        cell = cell_of(item)
        if cell is None:
            return
        configure_process(self.config.rootpath)
        ended = self.ended(cell.id)
        if ended is not None:
            pytest.skip(f"recorded as {ended.get('outcome')} earlier in this run (it ended a process); "
                        "not run again")
        if self.isolation == "worker":
            from . import registry

            subject = registry.subjects().get(cell.subject)
            _write_json(self.inflight_path(self.worker), {
                "run": self.run_id, "cell": cell.id, "pid": os.getpid(), "origin": registry.origin(cell.subject),
                "library": getattr(subject, "library", "unknown"), "spec": getattr(subject, "spec", "unknown")})
        if self.isolation != "fork" or not _forkable(cell):
            self._arm_watchdog(cell)

    def _arm_watchdog(self, cell: Cell) -> None:
        limit = hard_limit_s(cell_timeout_s())

        def expire() -> None:
            self.write(cell, CellResult("timeout", cause="timeout", message=f"hard limit {limit:g} s: the cell "
                                        "hung where the in-process alarm cannot reach (C code); worker ended"))
            os._exit(3)

        self._watchdog = threading.Timer(limit, expire)
        self._watchdog.daemon = True
        self._watchdog.start()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        cell = cell_of(item)
        marker = self.inflight_path(self.worker)
        if cell is not None and (_read_json(marker) or {}).get("cell") == cell.id:
            marker.unlink(missing_ok=True)

    # -- hooks (in the xdist controller)
    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report, sched) -> None:
        """pytest-xdist: a worker died while running ``crashitem``. Record that cell as ``crash`` once (unless the
        watchdog recorded it as a timeout) and mark it ended, so the copy xdist queues again is not run."""
        gateway = getattr(getattr(report, "node", None), "gateway", None)
        inflight = _read_json(self.inflight_path(getattr(gateway, "id", ""))) if gateway is not None else None
        subject_fields = origin = None
        if inflight and inflight.get("run") == self.run_id and isinstance(inflight.get("cell"), str):
            from .registry import parse_cell_id

            cell = parse_cell_id(inflight["cell"])
            subject_fields = {"library": inflight.get("library", "unknown"), "spec": inflight.get("spec", "unknown")}
            origin = inflight.get("origin")
        else:
            cell = cell_from_nodeid(crashitem)  # died before the cell's marker was written
        if cell is None or self.ended(cell.id) is not None:
            return
        message = f"{getattr(report, 'longrepr', '') or 'worker crashed'} (pid {(inflight or {}).get('pid', '?')})"
        self.write(cell, CellResult("crash", cause="crash", message=message), subject_fields=subject_fields,
                   origin=origin)

    def ended_this_run(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for path in sorted((self.dir / ".ended").glob("*")) if (self.dir / ".ended").is_dir() else []:
            marker = _read_json(path)
            if marker and marker.get("run") == self.run_id:
                found.setdefault(str(marker.get("outcome")), []).append(str(marker.get("cell")))
        return found

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if _is_worker(self.config):
            return
        ended = self.ended_this_run()
        for outcome in ("crash", "timeout"):
            cells = ended.get(outcome, [])
            if cells:
                shown = "; ".join(terminal_text(c) for c in cells[:10])
                more = f"; and {len(cells) - 10} more" if len(cells) > 10 else ""
                what = "crashed (ended their process)" if outcome == "crash" else "timed out"
                terminalreporter.write_line(f"conformance: {len(cells)} cell(s) {what}, each recorded once: "
                                            f"{shown}{more}")
        if self.dir.exists():
            terminalreporter.write_line(f"conformance: cell records in {terminal_text(self.dir)}")

    def pytest_unconfigure(self) -> None:
        if self._writer is not None:
            self._writer.close()


# ------------------------------------------------------------------------------------------------ progress
class Progress:
    """A line every few seconds during a long run: tests done of the total, failures and crashes so far, the
    slowest test, elapsed time and an ETA. Plain lines through pytest's terminal reporter (readable in CI logs)."""

    def __init__(self, config: pytest.Config, every_s: float):
        self.config = config
        self.every_s = every_s
        self.total: int | None = None
        self.done = self.failed = self.crashed = 0
        self.slowest: tuple[float, str] = (0.0, "")
        self.started = self.last = time.monotonic()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not _distributed(self.config):
            self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.total = len(ids) if self.total is None else max(self.total, len(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        finished = report.when == "call" or (report.when == "setup" and report.outcome != "passed") \
            or report.when not in ("setup", "call", "teardown")  # xdist's report of a crashed worker
        if not finished:
            return
        self.done += 1
        if report.failed:
            self.failed += 1
            if report.when not in ("setup", "call"):
                self.crashed += 1
        if report.when == "call" and report.duration > self.slowest[0]:
            self.slowest = (report.duration, report.nodeid)
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                # on a line of its own, also after a row of xdist's progress characters
                started_line = getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0)
                reporter.write_line(("\n" if started_line else "") + self.line(now))

    def line(self, now: float) -> str:
        elapsed = now - self.started
        total = self.total or 0
        share = f" ({100 * self.done / total:.0f}%)" if total else ""
        eta = _clock(elapsed / self.done * (total - self.done)) if total and self.done else "?"
        cell = cell_from_nodeid(self.slowest[1]) if self.slowest[1] else None
        name = cell.id if cell is not None else self.slowest[1].rpartition("::")[2]
        slowest = f"; slowest {self.slowest[0]:.1f} s: {terminal_text(name)[:160]}" if self.slowest[1] else ""
        return (f"[conformance] {self.done}/{total or '?'} tests{share}, {self.failed} failed "
                f"({self.crashed} crashed){slowest}; elapsed {_clock(elapsed)}, ETA {eta}")


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


# ------------------------------------------------------------------------------------------- node ids
def cell_from_nodeid(nodeid: str) -> Cell | None:
    """The cell of a test node id as pytest and pytest-xdist write it: the parametrize id in brackets (pytest
    shows non-ASCII characters as ``\\uXXXX`` escapes) and, under ``--dist loadgroup``, ``@<subject>|<transform>``
    after the bracket. Subject ids may contain ``[``, ``]``, ``|``, ``@``, spaces and any letter."""
    from .registry import parse_cell_id

    start = nodeid.find("[")
    if start < 0:
        return None
    for end in range(len(nodeid) - 1, start, -1):
        if nodeid[end] != "]" or not (end == len(nodeid) - 1 or nodeid[end + 1] == "@"):
            continue
        try:
            cell = parse_cell_id(_unescape(nodeid[start + 1:end]))
        except UsageError:
            continue
        suffix = nodeid[end + 1:]
        if suffix in ("", f"@{cell.subject}|{cell.transform}"):
            return cell
    return None


def _unescape(text: str) -> str:
    """Undo pytest's escaping of a parametrize id (non-ASCII as ``\\uXXXX``, a backslash doubled)."""
    if "\\" not in text or not text.isascii():
        return text
    try:
        return text.encode("ascii").decode("unicode_escape")
    except UnicodeDecodeError:
        return text


# --------------------------------------------------------------------------------------- running a cell
def reproduce_command(cell: Cell, origin: str | None = None) -> str:
    """The one-line command that re-runs this cell alone and prints what it found (loading the subject from where
    it is defined when a test suite registered it)."""
    from . import registry

    profile = os.environ.get("CONFORMANCE_PROFILE", "ci")
    origin = origin or registry.origin(cell.subject)
    load = f" --load {shlex.quote(origin)}" if origin else ""
    return f"CONFORMANCE_PROFILE={profile} python -m conformance.cell{load} {shlex.quote(cell.id)}"


def _forkable(cell: Cell) -> bool:
    from .core import isolation

    return isolation.can_fork(cell.device)


def run_isolated(cell: Cell, config: pytest.Config | None = None) -> CellResult:
    """Run ``cell`` as this session's isolation asks: in a forked child (without xdist, or for a subject that
    already crashed a worker in this run), else in this process under the watchdog."""
    from .core import isolation
    from .runner import run_cell

    recorder = config.pluginmanager.get_plugin("conformance-recorder") if config is not None else None
    forked = recorder is not None and (recorder.isolation == "fork" or (
        recorder.isolation == "worker" and recorder.subject_crashed(cell.subject)))
    if not forked or not _forkable(cell):
        return run_cell(cell)
    if recorder.isolation == "worker" and recorder._watchdog is not None:
        recorder._watchdog.cancel()  # the child is watched by its parent: the worker itself is not at risk
    limit = cell_timeout_s()
    started = time.perf_counter()
    child = isolation.run_forked(lambda: run_cell(cell, timeout_s=limit), timeout_s=hard_limit_s(limit))
    if child.ended == "returned":
        return child.value
    return CellResult(child.ended, cause=child.ended, message=child.detail,
                      duration_s=time.perf_counter() - started)


@pytest.fixture
def record_cell(request: pytest.FixtureRequest):
    """``record_cell(cell, result)``: stream the cell's record, then turn it into the pytest outcome."""
    recorder: Recorder = request.config.pluginmanager.get_plugin("conformance-recorder")

    def record(cell: Cell, result: CellResult) -> None:
        recorder.write(cell, result)
        to_pytest_outcome(result, reproduce_command(cell))

    record.run = lambda cell: run_isolated(cell, request.config)  # check_cell runs the cell through this
    return record


@pytest.fixture
def cell_watchdog():
    """Kept for suites written against earlier releases: every cell now has the watchdog without asking."""
    return {}


def to_pytest_outcome(result: CellResult, reproduce: str | None = None) -> None:
    if result.outcome == "pass":
        return
    if result.outcome == "skip":
        pytest.skip(visible(result.message))
    if result.outcome == "xfail":
        pytest.xfail(visible(f"known failure: {result.known['reason']} [{result.cause}]"))
    header = {"fail": f"[{result.cause}]", "xpass": "[xpass] unexpected pass of a known failure:",
              "timeout": "[timeout]", "crash": "[crash]"}[result.outcome]
    also = "".join(f"\nalso found: [{found['cause']}] {found['message']}" for found in result.also)
    example = f"\nminimal example: {result.example}" if result.example else ""
    again = f"\nreproduce: {reproduce}" if reproduce else ""
    pytest.fail(visible(f"{header} {result.message}{also}{example}{again}"), pytrace=False)
