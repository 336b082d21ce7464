"""The pytest plugin: per-worker set-up, hypothesis profiles, and streaming one record per cell.

Loaded by ``suites/conftest.py`` (``pytest_plugins``) or by a third-party suite with ``-p conformance.plugin``.
Records go to ``<results-dir>/<worker>.jsonl``, flushed per cell, so a killed run loses nothing recorded.
A worker that dies mid-cell gets a ``crash`` record from the controller (pytest-xdist's crash hook); a cell that
hangs past the hard limit gets a ``timeout`` record from a watchdog before its worker is ended.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from .results import CellResult, RecordWriter, environment, make_record

ROOT = Path(__file__).resolve().parent.parent


def configure_process() -> None:
    """One torch thread per worker (xdist oversubscription is a 10-50x slowdown; strict tolerances need a fixed
    reduction order) and compile caches in a known directory, kept between runs."""
    cache = Path(os.environ.setdefault("CONFORMANCE_CACHE_DIR", str(ROOT / ".cache")))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache / "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", str(cache / "triton"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    # On CUDA, cuDNN may pick non-deterministic algorithms (atomic adds in convolution backward): two runs of the
    # same module then differ in the last bits, which a "transform preserves the gradient" check would charge to
    # the transform (seen on Resnet18V2's hooks/functional_call/state_dict cells on the H200). TF32 stays at
    # torch's default: the cpu_vs_cuda cells report what users get.
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    if hasattr(torch, "set_num_interop_threads"):
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass  # already set once in this process


def register_hypothesis_profiles() -> None:
    from hypothesis import HealthCheck, settings

    from .runner import PROFILES

    for name, options in PROFILES.items():
        kwargs = dict(max_examples=options["max_examples"], derandomize=options["derandomize"], deadline=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        if "database" in options:
            kwargs["database"] = options["database"]
        settings.register_profile(name, **kwargs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption("--results-dir", default=None,
                    help="directory for the JSONL cell records (default reports/results/<run id>)")
    group.addoption("--conformance-profile", default=None, choices=["ci", "dev", "thorough"],
                    help="hypothesis profile for cells and suites (also CONFORMANCE_PROFILE; default ci)")
    group.addoption("--cell-timeout", type=float, default=None,
                    help="seconds before a cell is stopped and recorded as timeout (default 300)")
    group.addoption("--resume", action="store_true",
                    help="finish a stopped run: cells already recorded in --results-dir by the same suite version, "
                         "libraries and profile are not run again (crash and timeout cells are)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--conformance-profile"):
        os.environ["CONFORMANCE_PROFILE"] = config.getoption("--conformance-profile")
    os.environ.setdefault("CONFORMANCE_PROFILE", "ci")
    if config.getoption("--cell-timeout"):
        os.environ["CONFORMANCE_CELL_TIMEOUT"] = str(config.getoption("--cell-timeout"))
    # The controller names the run; xdist workers inherit the environment when they start.
    os.environ.setdefault("CONFORMANCE_RUN_ID", time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6])
    results = config.getoption("--results-dir") or str(ROOT / "reports" / "results" / os.environ["CONFORMANCE_RUN_ID"])
    os.environ["CONFORMANCE_RESULTS_DIR"] = str(Path(results).resolve())
    configure_process()
    register_hypothesis_profiles()
    from hypothesis import settings

    settings.load_profile(os.environ["CONFORMANCE_PROFILE"])
    if config.getoption("--resume") and not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
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
    config.pluginmanager.register(Recorder(config), "conformance-recorder")


#: What must match for a record to count as done in this run (--resume): the suite, the versions, the profile.
RESUME_KEYS = ("suite_sha", "python", "torch", "libraries", "hypothesis_profile", "platform", "device_name", "cuda")


def recorded_cells(directory: Path) -> set[str]:
    """Cell ids recorded in ``directory`` by this same environment, except crash and timeout records (worth
    another try). Records of another suite version or library set make resuming an error, not a silent mix."""
    from .results import cell_key, environment, iter_records

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
        if record.get("outcome") not in ("crash", "timeout"):
            done.add(cell_key(record))
    return done


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    listing = os.environ.get("CONFORMANCE_RESUME_FILE")
    if not config.getoption("--resume") or not listing:
        return
    done = set(Path(listing).read_text(encoding="utf-8").split("\n")) - {""}
    keep, skipped = [], []
    for item in items:
        cell = cell_from_nodeid(item.nodeid)
        (skipped if cell is not None and cell.id in done else keep).append(item)
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = keep


class Recorder:
    """Writes cell records for this process (a worker, or the controller for crash records)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.dir = Path(os.environ["CONFORMANCE_RESULTS_DIR"])
        self.path = self.dir / f"{worker}-{os.getpid()}.jsonl"
        self._writer: RecordWriter | None = None
        self._lock = threading.Lock()

    def writer(self) -> RecordWriter:
        if self._writer is None:
            self._writer = RecordWriter(self.path)
        return self._writer

    def write(self, cell, result: CellResult, nodeid: str) -> None:
        from . import registry

        subject = registry.subjects().get(cell.subject)
        record = make_record(run=os.environ["CONFORMANCE_RUN_ID"], cell=cell, subject=subject, result=result,
                             reproduce=reproduce_command(cell), env=environment())
        with self._lock:
            self.writer().write(record)

    def pytest_unconfigure(self) -> None:
        if self._writer is not None:
            self._writer.close()

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report, sched) -> None:
        """pytest-xdist: a worker died while running ``crashitem``: record ``crash`` unless the watchdog
        already recorded the cell as a timeout."""
        cell = cell_from_nodeid(crashitem)
        if cell is None or timeout_marker(self.dir, cell.id).exists():
            return
        message = str(getattr(report, "longrepr", "") or "worker crashed")[-2000:]
        self.write(cell, CellResult("crash", cause="crash", message=message), crashitem)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if os.environ.get("PYTEST_XDIST_WORKER") is None and self.dir.exists():
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"conformance: cell records in {self.dir}")


def cell_from_nodeid(nodeid: str):
    from .registry import parse_cell_id

    if "@" in nodeid.rsplit("]", 1)[-1]:
        nodeid = nodeid[:nodeid.rindex("@")]  # pytest-xdist's loadgroup suffix
    if "[" not in nodeid or not nodeid.endswith("]"):
        return None
    try:
        return parse_cell_id(nodeid[nodeid.index("[") + 1:-1])
    except ValueError:
        return None


def timeout_marker(directory: Path, cell_id: str) -> Path:
    return directory / "timeouts" / hashlib.sha1(cell_id.encode()).hexdigest()


def reproduce_command(cell) -> str:
    """The one-line command that re-runs this cell alone and prints its traceback."""
    profile = os.environ.get("CONFORMANCE_PROFILE", "ci")
    return f"CONFORMANCE_PROFILE={profile} python -m conformance.cell {shlex.quote(cell.id)}"


@pytest.fixture
def record_cell(request: pytest.FixtureRequest):
    """``record_cell(cell, result)``: stream the cell's record, then turn it into the pytest outcome."""
    recorder: Recorder = request.config.pluginmanager.get_plugin("conformance-recorder")

    def record(cell, result: CellResult) -> None:
        recorder.write(cell, result, request.node.nodeid)
        to_pytest_outcome(result)

    return record


def to_pytest_outcome(result: CellResult) -> None:
    if result.outcome == "pass":
        return
    if result.outcome == "skip":
        pytest.skip(result.message)
    if result.outcome == "xfail":
        pytest.xfail(f"known failure: {result.known['reason']} [{result.cause}]")
    header = {"fail": f"[{result.cause}]", "xpass": "[xpass] unexpected pass of a known failure:",
              "timeout": "[timeout]", "crash": "[crash]"}[result.outcome]
    example = f"\nminimal example: {result.example}" if result.example else ""
    pytest.fail(f"{header} {result.message}{example}", pytrace=False)


@pytest.fixture
def cell_watchdog(request: pytest.FixtureRequest):
    """A hard limit behind the in-process alarm: if a cell hangs in C code, record a timeout and end the worker
    (xdist starts a new one and the run goes on)."""
    from .runner import DEFAULT_TIMEOUT_S

    limit = float(os.environ.get("CONFORMANCE_CELL_TIMEOUT", DEFAULT_TIMEOUT_S))
    recorder: Recorder = request.config.pluginmanager.get_plugin("conformance-recorder")
    holder: dict = {}

    def expire() -> None:
        cell = holder.get("cell")
        if cell is None:
            return
        marker = timeout_marker(recorder.dir, cell.id)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        recorder.write(cell, CellResult("timeout", cause="timeout",
                                        message=f"hard limit {limit * 1.5 + 30:g} s: worker ended"),
                       request.node.nodeid)
        os._exit(3)

    timer = threading.Timer(limit * 1.5 + 30, expire)
    timer.daemon = True
    timer.start()
    yield holder
    timer.cancel()
