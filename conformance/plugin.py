"""The pytest plugin: isolation of cells, one streamed record per cell, resuming, shards (``--shard i/n``,
conformance.shards), progress, hypothesis profiles.

Registered through the ``pytest11`` entry point when the package is installed (nothing to pass), or with
``-p conformance.plugin`` / ``pytest_plugins``. It does nothing to a session that runs no cell (a test with a
``conformance.api.Cell`` parameter): no thread settings, no hypothesis profile, no files.

Records go to ``<results-dir>/<worker>-<pid>.jsonl``, flushed per cell, so a killed run loses nothing recorded
(default ``<output dir>/results/<run id>``; the output directory is ``<rootdir>/.conformance``, the ``conformance_dir``
ini option or ``CONFORMANCE_DIR``; the ``conformance_results_dir`` ini option moves the records alone). Faults cost
one cell:

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

import fnmatch
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .core.escape import cell_command, terminal_text, visible
from .core.settings import (
    DEFAULT_TIMEOUT_S,
    OUTPUT_DIR_NAME,
    PROFILES,
    UsageError,
    cell_timeout_s,
    configure_process,
    hard_limit_s,
    output_dir,
    profile_name,
    register_hypothesis_profiles,
)
from .records.io import (CellResult, RecordWriter, environment, iter_records, make_record, unwritable,
                         write_suite_file)

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
                    help="directory for the JSONL cell records (default <output dir>/results/<run id>)")
    parser.addini("conformance_dir", default=OUTPUT_DIR_NAME,
                  help="the one directory the kit writes into, relative to the rootdir (default .conformance; "
                       "CONFORMANCE_DIR overrides it)")
    parser.addini("conformance_results_dir", default="",
                  help="where each run's records directory goes, relative to the rootdir "
                       "(default <output dir>/results)")
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
    group.addoption("--subjects", action="append", default=None, metavar="GLOB",
                    help="collect only the cells of this subject (an id, or an fnmatch pattern; repeatable; "
                         "a few subjects collect in a fraction of the time that -k over the whole matrix takes); "
                         "the run is partial")
    group.addoption("--conformance-partial", action="store_true",
                    help="a partial run: a known failure that matches no collected cell is not an error (implied by "
                         "-k, -m, --shard, --resume and test ids; conformance.strict)")
    group.addoption("--collect-unrunnable", action="store_true",
                    help="keep cells that cannot run here (no CUDA, a missing optional library, not applicable) as "
                         "tests that skip; by default they are recorded as skip at collection and not run")
    group.addoption("--shard-durations", default=None, metavar="FILE",
                    help="seconds per unit that balance the shards (default <rootdir>/reports/shard-durations.json "
                         "where it exists, else the number of tests)")


def matrix_cells(config: pytest.Config) -> list[Cell]:
    """The cells a matrix file parametrizes: every registered subject's, or those of the subjects ``--subjects``
    names (in registration order either way)."""
    from . import registry

    patterns = config.getoption("--subjects")
    if not patterns:
        return registry.cells()
    chosen = [sid for sid in registry.subjects() if any(sid == p or fnmatch.fnmatchcase(sid, p) for p in patterns)]
    if not chosen:
        raise UsageError(f"--subjects {' '.join(map(repr, patterns))}: no registered subject matches")
    return registry.cells(chosen)


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
    # Workers and forked children read the output directory from here (settings.output_dir).
    os.environ["CONFORMANCE_DIR"] = str(output_dir(config.rootpath, config.getini("conformance_dir")))
    results = config.getoption("--results-dir") or str(_results_root(config) / os.environ["CONFORMANCE_RUN_ID"])
    os.environ["CONFORMANCE_RESULTS_DIR"] = str(Path(results).resolve())
    unwritable_because = None if _is_worker(config) else unwritable(os.environ["CONFORMANCE_RESULTS_DIR"])
    if unwritable_because:  # before the first cell, not after each
        raise pytest.UsageError(f"--results-dir {results}: records cannot be written there ({unwritable_because})")
    if config.getoption("--results-dir") and not _is_worker(config):  # before reading it for --resume
        lock = ResultsLock(Path(os.environ["CONFORMANCE_RESULTS_DIR"]))
        try:
            lock.acquire()
        except UsageError as error:
            raise pytest.UsageError(str(error)) from None
        config.add_cleanup(lock.release)
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
    if _is_worker(config) and getattr(config.option, "loadgroup", False):
        from . import xdist_groups

        config.pluginmanager.register(xdist_groups, "conformance-xdist-groups")
    isolation = config.getoption("--isolation")
    if isolation == "auto":
        isolation = "worker" if _is_worker(config) or _distributed(config) else "fork"
    recorder = Recorder(config, Path(os.environ["CONFORMANCE_RESULTS_DIR"]), isolation)
    config.pluginmanager.register(recorder, "conformance-recorder")
    if not _is_worker(config) and config.getoption("--progress-every") > 0:
        config.pluginmanager.register(Progress(config, config.getoption("--progress-every")), "conformance-progress")


def _results_root(config: pytest.Config) -> Path:
    """Where a run's records directories go: the ``conformance_results_dir`` ini option, else
    ``<output dir>/results``."""
    configured = config.getini("conformance_results_dir")
    return config.rootpath / configured if configured else Path(os.environ["CONFORMANCE_DIR"]) / "results"


@pytest.hookimpl(trylast=True)  # after hypothesis' own: it counts drawing strategies before then as a plugin's
def pytest_sessionstart(session: pytest.Session) -> None:
    """``--subjects`` that names no registered subject: one line before anything is collected."""
    if session.config.getoption("--subjects"):
        try:
            matrix_cells(session.config)
        except UsageError as error:
            raise pytest.UsageError(str(error)) from None


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
    _drop_resumed(config, items)
    _set_aside_unrunnable(config, items)


def _drop_resumed(config: pytest.Config, items: list) -> None:
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


def _set_aside_unrunnable(config: pytest.Config, items: list) -> None:
    """Cells that cannot run here (no CUDA, an optional library missing, not applicable) are not run through pytest:
    each is recorded as ``skip`` with its reason at collection, by one process of the run, and still counts for the
    strict known failures. ``--collect-unrunnable`` keeps them as tests that skip."""
    if config.getoption("--collect-unrunnable"):
        return
    aside: list[tuple[pytest.Item, Cell, str]] = []
    keep = []
    for item in items:
        cell = cell_of(item)
        reason = _skip_reason_or_none(cell) if cell is not None else None
        if reason is None:
            keep.append(item)
        else:
            aside.append((item, cell, reason))
    if not aside:
        return
    config.stash[_UNRUNNABLE] = [cell for _, cell, _ in aside]
    records = not config.option.collectonly and (not _is_worker(config) or config.workerinput.get("workerid") == "gw0")
    if records:  # one process of the run records them; --collect-only records nothing
        recorder: Recorder = config.pluginmanager.get_plugin("conformance-recorder")
        try:
            recorder.write_skipped([(cell, reason) for _, cell, reason in aside])
        except OSError as error:  # a full disk before the first cell: one line, and nothing runs
            raise pytest.UsageError(f"conformance: cannot write the records of the cells that cannot run here into "
                                    f"{terminal_text(str(recorder.dir))}: {error.strerror or error}; nothing was run "
                                    "(the records written so far are kept)") from None
    config.stash[_SETTING_ASIDE] = True
    try:
        config.hook.pytest_deselected(items=[item for item, _, _ in aside])
    finally:
        config.stash[_SETTING_ASIDE] = False
    items[:] = keep
    if config.option.collectonly:
        return
    config.stash[_UNRUNNABLE_COUNT] = len(aside)
    if _is_worker(config):
        config.workeroutput["conformance_unrunnable"] = len(aside)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """The controller learns from a worker how many cells were set aside (every worker sets aside the same)."""
    count = getattr(node, "workeroutput", {}).get("conformance_unrunnable")
    if count:
        node.config.stash[_UNRUNNABLE_COUNT] = count


def _skip_reason_or_none(cell: Cell) -> str | None:
    from .runner import skip_reason

    try:
        return skip_reason(cell)
    except Exception:  # an unknown subject or transform: the cell itself reports it when it runs
        return None


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


def pytest_deselected(items: list) -> None:
    """Remember that this run is partial (-k, -m, --shard, --resume): conformance.strict then relaxes. Cells set
    aside because they cannot run here do not make a run partial."""
    if items and not items[0].config.stash.get(_SETTING_ASIDE, False):
        items[0].config.stash[_DESELECTED] = True


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Strict known failures in every repository (conformance.strict): one line, and the session stops (under
    xdist, every cell fails with that line)."""
    cells = [cell for cell in map(cell_of, session.items) if cell is not None]
    cells += session.config.stash.get(_UNRUNNABLE, [])
    if not cells:
        return
    from .strict import problems

    config = session.config
    partial = config.getoption("--conformance-partial") or config.getoption("--subjects") \
        or config.stash.get(_DESELECTED, False) \
        or any("::" in arg for arg in config.args)
    found = problems(cells, rootpath=config.rootpath, partial=partial)
    if found and _is_worker(config):  # an xdist worker cannot stop the session: each of its cells fails with it
        config.stash[_STRICTNESS] = "conformance: " + terminal_text("; ".join(found))
    elif found:
        raise pytest.UsageError("conformance: " + terminal_text("; ".join(found)))


_DESELECTED = pytest.StashKey[bool]()
_SETTING_ASIDE = pytest.StashKey[bool]()
_UNRUNNABLE = pytest.StashKey[list]()
_UNRUNNABLE_COUNT = pytest.StashKey[int]()
_STRICTNESS = pytest.StashKey[str]()


# ------------------------------------------------------------------------------------------ markers on disk
class ResultsLock:
    """One run at a time per results directory (two would run and record the same cells): an exclusive ``flock``
    on ``<dir>/.lock``, taken by the controller or the lone process before the first cell and held to its end.
    The kernel drops it when the holder ends, however it ends, so a run killed with SIGKILL can be resumed."""

    def __init__(self, directory: Path):
        self.path = directory / ".lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise UsageError(f"{terminal_text(str(self.path))}: cannot take the run's lock "
                             f"({terminal_text(error.strerror or str(error))})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise UsageError(f"{terminal_text(str(self.path.parent))} is in use by another run (pid "
                             f"{holder if holder.isdigit() else 'unknown'}): wait for it to end, or choose another "
                             "--results-dir") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


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
                             reproduce=reproduce_command(cell, origin, root=self.config.rootpath),
                             env=environment())
        with self._lock:
            self.writer().write(record)
            if result.outcome in ("crash", "timeout"):
                self.mark_ended(cell.id, cell.subject, result.outcome)
            marker = self.inflight_path(self.worker)
            if (_read_json(marker) or {}).get("cell") == cell.id:
                marker.unlink(missing_ok=True)

    def write_skipped(self, cells: list[tuple[Cell, str]]) -> None:
        """Records of cells that were not run, each with the reason, in one batch."""
        from . import registry

        subjects = registry.subjects()
        env = environment()
        with self._lock:
            writer = self.writer()
            for cell, reason in cells:
                writer.write(make_record(run=self.run_id, cell=cell, subject=subjects.get(cell.subject),
                                         result=CellResult("skip", message=reason, duration_s=0.0),
                                         reproduce=reproduce_command(cell, root=self.config.rootpath), env=env))

    # -- hooks (in the process that runs the cell)
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        cell = cell_of(item)
        if cell is None:
            return
        if self.config.stash.get(_STRICTNESS, None):
            pytest.fail(self.config.stash[_STRICTNESS], pytrace=False)
        configure_process(self.config.rootpath)
        if self.isolation != "fork":  # cells share this process: their compiler settings are put back after each
            from .core.isolation import watch_compiler_configs

            watch_compiler_configs()
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
        unrunnable = self.config.stash.get(_UNRUNNABLE_COUNT, 0)
        if unrunnable:
            terminalreporter.write_line(f"conformance: {unrunnable} cell(s) cannot run here (no CUDA, a missing "
                                        "optional library, not applicable): recorded as skip with the reason, not "
                                        "run as tests (--collect-unrunnable runs them)")
        if self.dir.exists():
            terminalreporter.write_line(f"conformance: cell records in {terminal_text(self.dir)}")

    def pytest_unconfigure(self) -> None:
        if self._writer is not None:
            self._writer.close()


# ------------------------------------------------------------------------------------------------ progress
class ExpectedDurations:
    """The seconds each test of a run is expected to take, by its unit (a matrix cell's subject x transform, else its
    file; conformance.shards): the unit's recorded seconds shared by its tests; for a unit without a record, the mean
    of its tests finished in this run, else the median per test of the recorded units. The ETA is the remaining
    tests' expected seconds, scaled by how the finished tests' expected seconds compare with the time they took
    (workers, machine speed), so a slow tail counts for what it costs, not for how many tests it holds."""

    def __init__(self, tests: list[tuple[str, str | None]], recorded: dict[str, float]):
        from collections import Counter
        from statistics import median

        from .shards import unit_of

        self.unit = {nodeid: unit_of(nodeid, group) for nodeid, group in tests}
        sizes = Counter(self.unit.values())
        self.per_test = {unit: recorded[unit] / sizes[unit] for unit in sizes if unit in recorded}
        self.default = median(self.per_test.values()) if self.per_test else 1.0
        self.observed: dict[str, list[float]] = {}  # unit -> [seconds, tests] finished in this run
        self.pending = set(self.unit)
        self.done: list[str] = []

    def finished(self, nodeid: str, seconds: float) -> None:
        if nodeid not in self.pending:
            return
        self.pending.discard(nodeid)
        self.done.append(nodeid)
        seen = self.observed.setdefault(self.unit[nodeid], [0.0, 0])
        seen[0] += seconds
        seen[1] += 1

    def of(self, nodeid: str) -> float:
        unit = self.unit[nodeid]
        if unit in self.per_test:
            return self.per_test[unit]
        seen = self.observed.get(unit)
        return seen[0] / seen[1] if seen else self.default

    def eta_s(self, elapsed_s: float) -> float | None:
        """Seconds left, or None before any finished test had an expected cost."""
        done = sum(self.of(nodeid) for nodeid in self.done)
        return elapsed_s / done * sum(self.of(nodeid) for nodeid in self.pending) if done > 0 else None

    def units_seen(self) -> dict[str, float]:
        """Seconds per unit of the units every test of which finished in this run (what the next run expects)."""
        left = {self.unit[nodeid] for nodeid in self.pending}
        return {unit: round(seen[0], 3) for unit, seen in self.observed.items() if unit not in left}


class Progress:
    """A line every few seconds during a long run: tests done of the total, failures and crashes so far, the
    slowest test, elapsed time and an ETA from the remaining tests' expected durations (``ExpectedDurations``:
    ``reports/shard-durations.json``, and the seconds of units outside it as the last run here took them, kept in
    ``<output dir>/test-durations.json``). Plain lines through pytest's terminal reporter (readable in CI logs)."""

    def __init__(self, config: pytest.Config, every_s: float):
        self.config = config
        self.every_s = every_s
        self.total: int | None = None
        self.done = self.failed = self.crashed = 0
        self.slowest: tuple[float, str] = (0.0, "")
        self.started = self.last = time.monotonic()
        self.expected: ExpectedDurations | None = None

    def last_run_path(self) -> Path:
        return output_dir(self.config.rootpath, self.config.getini("conformance_dir")) / "test-durations.json"

    def recorded(self) -> dict[str, float]:
        from .shards import DEFAULT_DURATIONS, load_durations

        found: dict[str, float] = {}
        for path in (self.last_run_path(), self.config.rootpath / DEFAULT_DURATIONS):  # the checked-in file wins
            try:
                found.update(load_durations(path))
            except UsageError:  # a broken file costs the estimate, never the run
                pass
        return found

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not _distributed(self.config):
            from .shards import xdist_group

            self.total = len(session.items)
            self.expected = ExpectedDurations([(i.nodeid, xdist_group(i)) for i in session.items], self.recorded())

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.total = len(ids) if self.total is None else max(self.total, len(ids))
        if self.expected is None:  # every worker collects the same tests; their ids carry the xdist group
            self.expected = ExpectedDurations([(nodeid, _group_of(nodeid)) for nodeid in ids], self.recorded())

    def pytest_sessionfinish(self) -> None:
        seen = self.expected.units_seen() if self.expected is not None else {}
        ran_cells = any(unit.startswith("group:") for unit in seen)  # a session without cells writes nothing
        if ran_cells and not self.config.stash.get(_DESELECTED, False):  # a unit cut by -k, --shard is not whole
            from .shards import KIND

            try:
                _write_json(self.last_run_path(), {"kind": KIND, "schema": 1, "source": "progress", "units": seen})
            except OSError:
                pass

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        finished = report.when == "call" or (report.when == "setup" and report.outcome != "passed") \
            or report.when not in ("setup", "call", "teardown")  # xdist's report of a crashed worker
        if not finished:
            return
        self.done += 1
        if self.expected is not None:
            self.expected.finished(report.nodeid, report.duration)
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
        left = self.expected.eta_s(elapsed) if self.expected is not None else None
        eta = "?" if left is None else _clock(left)
        cell = cell_from_nodeid(self.slowest[1]) if self.slowest[1] else None
        name = cell.id if cell is not None else self.slowest[1].rpartition("::")[2]
        slowest = f"; slowest {self.slowest[0]:.1f} s: {terminal_text(name)[:160]}" if self.slowest[1] else ""
        return (f"[conformance] {self.done}/{total or '?'} tests{share}, {self.failed} failed "
                f"({self.crashed} crashed){slowest}; elapsed {_clock(elapsed)}, ETA {eta}")


def _group_of(nodeid: str) -> str | None:
    """The xdist group in a test id as a worker reports it (a matrix cell's ``@<subject>|<transform>``), or None."""
    if "]@" not in nodeid:
        return None
    cell = cell_from_nodeid(nodeid)
    return f"{cell.subject}|{cell.transform}" if cell is not None else None


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
def reproduce_command(cell: Cell, origin: str | None = None, *, root: Path | None = None) -> str:
    """The one-line command that re-runs this cell alone and prints what it found (loading the subject from where
    it is defined when a test suite registered it). A file inside ``root`` (pytest's rootdir) is named relative to
    it: ``python -m conformance.cell`` finds it from any directory below the rootdir, and records stay portable."""
    from . import registry

    load = origin or registry.origin(cell.subject)
    if load and root is not None and load.endswith(".py"):
        located = Path(load).resolve()
        if located.is_relative_to(root.resolve()):
            load = located.relative_to(root.resolve()).as_posix()
    return cell_command(cell.id, profile=os.environ.get("CONFORMANCE_PROFILE", "ci"), load=load)


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
        try:
            recorder.write(cell, result)
        except OSError as error:  # a full disk: one line and the run stops, not a traceback per cell
            request.session.shouldstop = (f"conformance: cannot write the record of {terminal_text(cell.id)} into "
                                          f"{recorder.dir}: {error.strerror or error}; the run stops (the cells "
                                          "recorded so far are kept)")
        to_pytest_outcome(result, reproduce_command(cell, root=request.config.rootpath))

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
    if result.outcome == "xfail":  # without pytest's traceback of this frame (58 ms of formatting per xfail cell)
        raise pytest.xfail.Exception(visible(f"known failure: {result.known['reason']} [{result.cause}]"),
                                     pytrace=False)
    header = {"fail": f"[{result.cause}]", "xpass": "[xpass] unexpected pass of a known failure:",
              "timeout": "[timeout]", "crash": "[crash]"}[result.outcome]
    also = "".join(f"\nalso found: [{found['cause']}] {found['message']}" for found in result.also)
    example = f"\nminimal example: {result.example}" if result.example else ""
    again = f"\nreproduce: {reproduce}" if reproduce else ""
    pytest.fail(visible(f"{header} {result.message}{also}{example}{again}"), pytrace=False)
