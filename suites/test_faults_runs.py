"""Runs that lose workers, stop, or race: a run under ``--dist loadgroup`` ends whatever order its workers die in,
a layer that raises KeyboardInterrupt or SystemExit costs its cell only, and two runs into one results directory
do not both run.

The scheduler is driven here by a simulation of xdist's controller and workers (every order of death, in
milliseconds); the end-to-end tests run real pytest sessions on the fault library of ``suites/test_faults.py``
(``slow``: about a minute each on 2 cores, so ``./run test`` leaves them out; ``CONFORMANCE_SLOW_TESTS=1`` runs
them, and ``scripts/fault-experiment.py --scenario hang|concurrent`` runs the same cases at length).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance import registry
from conformance.core.settings import UsageError
from conformance.core.types import Cell, Subject
from conformance.plugin import ResultsLock
from conformance.records.io import iter_records
from conformance.runner import run_cell
from conformance.scheduling import crash_safe_scheduler
from conformance.subjects.reference import SpecModule
from qsnn_reference import quant
from suites.test_faults import FAULTY, MATRIX, install_faulty_library, per_cell, pytest_run

#: The fault library with plain subject ids: xdist's loadgroup takes the text after the last '@' of a node id as
#: its group, and the ids of test_faults (with an '@' of their own) would all fall in one group.
PLAIN_IDS = FAULTY + textwrap.dedent('''
    def subjects():
        return [Subject(id=f"faulty.{name}", spec="quant.sign_ste", build=BUILDS[name], library="faultylib",
                        fixed={"zero_value": 1.0}) for name in os.environ["FAULTY_SUBJECTS"].split(",")]
''')
slow = pytest.mark.skipif(os.environ.get("CONFORMANCE_SLOW_TESTS") != "1",
                          reason="a whole pytest run with workers, about a minute: CONFORMANCE_SLOW_TESTS=1 runs it")
TWO_CHECKS = "faulty and cpu and float32 and eager and not compile and not checkpoint and " \
             "(forward_matches_spec or grad_matches_spec)"


# ---------------------------------------------------------------------------------- the scheduler, simulated
class SimulatedWorker:
    """What the scheduler sees of an xdist worker, and the worker's rule: it runs the first test it holds only when
    it holds a second one too or has been told to shut down."""

    def __init__(self, name: str):
        self.gateway = SimpleNamespace(id=name)
        self.held: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices) -> None:
        self.held.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def can_run(self) -> bool:
        return bool(self.held) and (len(self.held) >= 2 or self.shutting_down)


def simulate(unit_sizes: list[int], deadly: set[int], order: str) -> tuple[list[int], bool]:
    """Run tests in units of ``unit_sizes`` on two workers with the crash-safe scheduler, as xdist's controller
    does; a test in ``deadly`` kills the worker that runs it (once: a replacement runs the subject's other cells in
    forked children). Returns the tests run (in order) and whether the run ended (False: it hangs)."""
    from xdist.remote import Producer

    config = SimpleNamespace(getvalue={"dist": "loadgroup", "tx": ["2*popen"]}.get,
                             option=SimpleNamespace(loadscopereorder=True))
    scheduler = crash_safe_scheduler(config, Producer("simulated", enabled=False))
    ids = [f"t.py::test[{unit}-{i}]@unit{unit}" for unit, size in enumerate(unit_sizes) for i in range(size)]
    names = (f"gw{n}" for n in itertools.count())
    workers = [SimulatedWorker(next(names)) for _ in range(2)]
    collecting: list[SimulatedWorker] = []
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, ids)
    scheduler.schedule()
    ran: list[int] = []
    while workers or collecting:
        for worker in collecting:  # a replacement's collection arrives one step after it started
            scheduler.add_node_collection(worker, ids)
            scheduler.schedule()
        workers += collecting
        collecting = []
        ready = [w for w in workers if w.can_run() or (w.shutting_down and not w.held)]
        if not ready:
            return ran, False
        worker = ready[0] if order == "first" else ready[-1]
        if not worker.held:  # shut down with nothing left: it leaves
            assert scheduler.remove_node(worker) is None
            workers.remove(worker)
        elif worker.held[0] in deadly and worker.held[0] not in ran:
            ran.append(worker.held[0])
            scheduler.remove_node(worker)
            workers.remove(worker)
            replacement = SimulatedWorker(next(names))
            scheduler.add_node(replacement)
            collecting.append(replacement)
        else:
            index = worker.held.pop(0)
            ran.append(index)
            scheduler.mark_test_complete(worker, index)
        if scheduler.tests_finished:  # the controller's end of the run
            for other in scheduler.nodes:
                other.shutdown()
    return ran, True


SCHEDULES = [[2, 2, 2], [2, 1, 2], [1, 2, 1, 3], [3, 1, 1], [2, 3]]


@pytest.mark.parametrize("unit_sizes", SCHEDULES, ids=["-".join(map(str, s)) for s in SCHEDULES])
def test_every_order_of_worker_deaths_ends_with_every_test_run_once(unit_sizes):
    """One or two deadly tests, anywhere, with either worker acting first: the run ends and runs each test once
    (the worker's rule that keeps a last test waiting for the next one is what hung xdist's own scheduler)."""
    tests = range(sum(unit_sizes))
    hung, wrong = [], []
    for deadly in itertools.chain(itertools.combinations(tests, 1), itertools.combinations(tests, 2)):
        for order in ("first", "last"):
            ran, ended = simulate(unit_sizes, set(deadly), order)
            if not ended:
                hung.append((deadly, order, len(ran)))
            elif sorted(ran) != list(tests):
                wrong.append((deadly, order, ran))
    assert not hung, f"runs that hang (deadly tests, order, tests run): {hung}"
    assert not wrong, wrong


def test_a_worker_is_not_shut_down_while_the_queue_holds_work():
    """No worker is told to shut down before the queue is empty (it would get no more work)."""
    from xdist.remote import Producer

    config = SimpleNamespace(getvalue={"dist": "loadgroup", "tx": ["2*popen"]}.get,
                             option=SimpleNamespace(loadscopereorder=True))
    scheduler = crash_safe_scheduler(config, Producer("simulated", enabled=False))
    ids = [f"t.py::test[{unit}-{i}]@unit{unit}" for unit in range(6) for i in range(3)]
    first, second = SimulatedWorker("gw0"), SimulatedWorker("gw1")
    for worker in (first, second):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, ids)
    scheduler.schedule()
    while scheduler.workqueue:
        assert not first.shutting_down and not second.shutting_down
        index = first.held.pop(0)
        scheduler.mark_test_complete(first, index)
    assert len(first.held) >= 2 or first.shutting_down


# --------------------------------------------------------------------- KeyboardInterrupt and SystemExit in a layer
class StopsInForward(SpecModule):
    def __init__(self, example, stop):
        super().__init__(quant.sign_ste, {}, example.hyper)
        self.stop = stop

    def forward(self, x):
        raise self.stop


def _raise(stop):
    def build(example):
        raise stop
    return build


STOPS = {"KeyboardInterrupt": KeyboardInterrupt("gave up"), "SystemExit": SystemExit(3)}


@pytest.mark.parametrize("where", ["build", "forward"])
@pytest.mark.parametrize("stop", sorted(STOPS))
def test_a_layer_raising_a_program_stop_fails_its_cell_with_that_cause(stop, where):
    build = _raise(STOPS[stop]) if where == "build" else (lambda example: StopsInForward(example, STOPS[stop]))
    subject = registry.register(Subject(id=f"runs.{stop}_in_{where}", spec="quant.sign_ste", build=build,
                                        library="runs", fixed={"zero_value": 1.0}))
    for check in ("forward_matches_spec", "grad_matches_spec"):
        try:
            result = run_cell(Cell(subject.id, "eager", check, "cpu", "float32"), timeout_s=30)
        except (KeyboardInterrupt, SystemExit) as escaped:
            pytest.fail(f"{escaped!r} left run_cell: it would stop the run")
        assert (result.outcome, result.cause) == ("fail", f"raised-{stop}"), (result.outcome, result.cause,
                                                                              result.message)
        assert stop in result.message


def test_a_sigint_received_during_a_cell_still_stops_it():
    """The user's Ctrl-C: a KeyboardInterrupt raised by the SIGINT handler leaves run_cell as it came."""

    def build(example):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler runs before this returns
        return SpecModule(quant.sign_ste, {}, example.hyper)

    subject = registry.register(Subject(id="runs.sigint", spec="quant.sign_ste", build=build, library="runs",
                                        fixed={"zero_value": 1.0}))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a program run from a terminal
    try:
        with pytest.raises(KeyboardInterrupt):
            run_cell(Cell(subject.id, "eager", "forward_matches_spec", "cpu", "float32"), timeout_s=30)
    finally:
        signal.signal(signal.SIGINT, previous)


# ------------------------------------------------------------------------------------- one run per directory
def test_a_second_lock_on_a_results_directory_names_the_holder(tmp_path):
    held = ResultsLock(tmp_path / "results")
    held.acquire()
    try:
        with pytest.raises(UsageError) as refused:
            ResultsLock(tmp_path / "results").acquire()
        assert str(tmp_path / "results") in str(refused.value) and f"pid {os.getpid()}" in str(refused.value)
        assert "\n" not in str(refused.value)
    finally:
        held.release()
    again = ResultsLock(tmp_path / "results")
    again.acquire()  # released: the next run may start
    again.release()


def test_the_lock_of_a_killed_holder_is_free(tmp_path):
    """SIGKILL of the run that held it (then --resume) finds the directory free."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            ResultsLock(tmp_path / "results").acquire()
            os.write(write_end, b"locked")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 16) == b"locked"
    os.close(read_end)
    with pytest.raises(UsageError, match=f"pid {pid}"):
        ResultsLock(tmp_path / "results").acquire()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    lock = ResultsLock(tmp_path / "results")
    lock.acquire()
    lock.release()


# ---------------------------------------------------------------------------------------- real runs (slow)
def _run_matrix(tmp_path: Path, subjects: str, *extra: str, timeout: float = 240, wait: bool = True,
                env: dict | None = None):
    """A slice of the matrix (two cells of each subject) under -n 2 --dist loadgroup into ``tmp_path/results``."""
    site = tmp_path / "site"
    if not site.exists():
        install_faulty_library(tmp_path, PLAIN_IDS)
    args = [str(MATRIX), "-n", "2", "--dist", "loadgroup", "-q", "--results-dir", str(tmp_path / "results"),
            "--subjects", "faulty.*", "--cell-timeout", "1", "-k", TWO_CHECKS, *extra]
    return pytest_run(args, cwd=tmp_path, site=site, env={"FAULTY_SUBJECTS": subjects, **(env or {})},
                      timeout=timeout, new_session=True, wait=wait)


# One order runs in every `./run test` (the hang, end to end, fails it without the fix); the others with the slow ones.
@pytest.mark.parametrize("subjects", ["crash,slow,fine", pytest.param("segfault,fine,hang_c", marks=slow),
                                      pytest.param("hang_c,fine,exit", marks=slow)])
def test_a_loadgroup_run_ends_whatever_order_its_workers_die_in(tmp_path, subjects):
    """Three groups of two cells on two workers: one worker holds the first and third groups and every other worker
    has been told to shut down when the first group's first cell kills it. Its replacement takes back a group of one
    cell and one of two (xdist 3.8 gave it the one cell, which a worker never runs alone: the run hung)."""
    run = _run_matrix(tmp_path, subjects, wait=False)
    try:
        output, _ = run.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        output, _ = run.communicate()
        pytest.fail(f"the run hung: {sum(per_cell(tmp_path / 'results').values())} of 6 cells recorded\n"
                    + output[-2000:])
    counts = per_cell(tmp_path / "results")
    assert run.returncode == 1 and len(counts) == 6 and max(counts.values()) == 1, (counts, output[-3000:])
    outcomes = {r["cell"].split("|")[0]: r["outcome"] for r in iter_records([tmp_path / "results"])}
    assert {outcomes[f"faulty.{name}"] for name in ("fine", "slow") if f"faulty.{name}" in outcomes} == {"pass"}


@slow
def test_program_stops_raised_by_layers_cost_their_cells_under_xdist(tmp_path):
    done = _run_matrix(tmp_path, "interrupt,sys_exit,fine")
    log = done.stdout + done.stderr
    found = {r["cell"]: (r["outcome"], r["cause"]) for r in iter_records([tmp_path / "results"])}
    assert done.returncode == 1 and len(found) == 6, (found, log[-3000:])
    assert {found[c] for c in found if c.startswith("faulty.interrupt")} == {("fail", "raised-KeyboardInterrupt")}
    assert {found[c] for c in found if c.startswith("faulty.sys_exit")} == {("fail", "raised-SystemExit")}
    assert "Interrupted" not in log and "KeyboardInterrupt" in log, log[-3000:]


@slow
def test_a_second_run_into_a_busy_results_directory_stops_at_once(tmp_path):
    """Two runs into one directory: the second stops with one line naming the directory and the first's pid, before
    any cell; the first records every cell once."""
    first = _run_matrix(tmp_path, "slow,fine", "--cell-timeout", "120", wait=False, env={"FAULTY_SLOW_S": "1.5"})
    results = tmp_path / "results"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not per_cell(results):
        time.sleep(0.5)
    second = _run_matrix(tmp_path, "slow,fine", timeout=120)
    output, _ = first.communicate(timeout=240)
    lines = second.stderr.strip().splitlines()
    assert second.returncode == 4 and len(lines) == 1, second.stdout[-2000:] + second.stderr
    assert str(results) in lines[0] and f"pid {first.pid}" in lines[0] and "Traceback" not in second.stderr
    counts = per_cell(results)
    assert first.returncode == 0 and len(counts) == 4 and max(counts.values()) == 1, (counts, output[-2000:])
