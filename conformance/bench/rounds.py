"""Rounds: every case measured once per fresh Python process, the processes repeated.

Where a process's tensors land in memory moves some subject/spec ratios by 10-40% for the life of that process
(docs/benchmarks.md), more than the load of a shared machine moves them within it. Samples taken inside one process
share that shift, so they are not independent; one sample per case per process is. A *round* is one process that
builds and times every case once (one build, ``repeats`` interleaved blocks, the cases in a shuffled order), and a
*session* is ``rounds`` such processes, ``jobs`` of them at a time, run by one command on one machine. A session
document keeps, per case, the ratio of every round: the samples of the gate's rank test.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

SCHEMA = 2
#: The environment variable naming a session's folder of shared small examples (:mod:`conformance.bench.examples`):
#: set for its rounds by ``run`` and ``gate``; a round without it draws its own.
SHARED_EXAMPLES = "CONFORMANCE_BENCH_EXAMPLES"


def positive_number(value) -> bool:
    """A positive finite number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= sys.float_info.max


def read_document(path: Path | str) -> dict:
    """A conformance.bench file of a version this one reads, checked for the fields every reader uses; anything else
    is a ValueError whose message is one line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read it ({getattr(error, 'strerror', None) or error})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:  # RecursionError: nested too deep
        raise ValueError(f"{path}: not JSON ({str(error)[:200]})") from None
    if not isinstance(data, dict) or data.get("kind") != "conformance.bench":
        raise ValueError(f"{path}: not a conformance.bench file (no \"kind\": \"conformance.bench\")")
    if data.get("schema") not in (1, SCHEMA):
        raise ValueError(f"{path}: schema {data.get('schema')!r} is not one this version reads (1 or {SCHEMA})")
    for key, kind in (("entries", dict), ("skipped", dict), ("attempted", list)):
        if not isinstance(data.get(key), kind):
            raise ValueError(f"{path}: {key!r} missing or not a {kind.__name__}")
    for case_id, entry in data["entries"].items():
        if not isinstance(entry, dict) or not positive_number(entry.get("ratio")):
            raise ValueError(f"{path}: entry {case_id!r} has no positive finite ratio")
        if len(str(case_id).split("|")) != 3:
            raise ValueError(f"{path}: entry {case_id!r} is not a case id (subject|size|mode)")
    return data


def load_round(path: Path | str) -> dict:
    """The document of one process (``conformance.bench round``, or a schema-1 ``run`` of older versions)."""
    data = read_document(path)
    if data["schema"] != 1:
        raise ValueError(f"{path}: a round document is schema 1, this is schema {data['schema']}")
    return data


def machine_label(env: dict, device: str) -> str:
    """What a session's machine is called in a baseline: the GPU's name on cuda, else the CPU model. Only a label
    for grouping and reading; the gate decides which recorded machines a run resembles from its ratios."""
    if device == "cuda":
        return str(env.get("device_name") or "cuda")
    return str(env.get("cpu_model") or env.get("cpu") or "cpu")


def round_command(*, profile: str, device: str, seed: int, out: Path, repeats: int, sample_s: float, threads: int,
                  subjects: Sequence[str] | None, case_ids: Sequence[str] | None, slowdown: Sequence[str],
                  memory: bool) -> list[str]:
    command = [sys.executable, "-m", "conformance.bench", "round", "--profile", profile, "--device", device,
               "--order-seed", str(seed), "--out", str(out), "--repeats", str(repeats), "--sample-s", str(sample_s),
               "--threads", str(threads)]
    for pattern in subjects or ():
        command += ["--subjects", pattern]
    if case_ids:
        command += ["--cases", *case_ids]
    for slow in slowdown:
        command += ["--slowdown", slow]
    if not memory:
        command.append("--no-memory")
    return command


def combine(round_docs: Sequence[dict], *, session: dict, session_id: str, attempted: Sequence[str]) -> dict:
    """One session document from the documents of its rounds (``conformance.bench round``, one process each)."""
    entries: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    for case_id in attempted:
        found = [doc["entries"][case_id] for doc in round_docs if case_id in doc["entries"]]
        if not found:
            reason = next((doc["skipped"][case_id] for doc in round_docs if case_id in doc["skipped"]), None)
            if reason is not None or round_docs:
                skipped[case_id] = reason or "not measured"
            continue
        first = found[0]
        with_memory = next((e for e in found if e.get("mem_subject") is not None), first)
        labels = {k: first[k] for k in ("subject", "library", "spec", "size", "mode", "against") if k in first}
        samples = [e["ratio"] for e in found]
        entries[case_id] = {
            **labels, "ratio": round(statistics.median(samples), 5), "samples": {session_id: samples},
            "blocks": {session_id: [e.get("ratios", [e["ratio"]]) for e in found]},
            "wall_samples": {session_id: [round(statistics.median(e["wall_ratios"]), 5) if e.get("wall_ratios")
                                          else None for e in found]},
            "subject_s": statistics.median(e["subject_s"] for e in found),
            "reference_s": statistics.median(e["reference_s"] for e in found),
            "mem_subject": with_memory.get("mem_subject"), "mem_reference": with_memory.get("mem_reference"),
            **({"slowdown": first["slowdown"]} if first.get("slowdown") else {})}
    env = round_docs[0]["env"] if round_docs else {}
    return {"schema": SCHEMA, "kind": "conformance.bench", "profile": session["profile"],
            "device": session["device"], "started": session["started"], "duration_s": session.get("duration_s"),
            "env": env, "sessions": {session_id: session}, "attempted": list(attempted), "entries": entries,
            "skipped": skipped, "complete": session["rounds"] == session["rounds_planned"]}


def run_rounds(tasks: Sequence[tuple[object, list[str], Path | None]], *, jobs: int, folder: Path,
               finished: Callable[[object, dict | None, str, float], None], env: dict | None = None) -> None:
    """Run round commands, ``jobs`` at a time, in the order given: each task is (key, command, working directory),
    the command writing its document to the path after ``--out``. ``finished(key, document, error, seconds)`` is
    called as each ends, with the loaded document, or None and a one-line error (exit status and the log's tail);
    when it returns True the run ends there: no further task starts and the rounds still running are stopped."""
    pending = list(tasks)
    running: dict[object, tuple[subprocess.Popen, float, Path, object]] = {}
    try:
        _run(pending, running, jobs=jobs, folder=folder, finished=finished, env=env)
    finally:  # stopped (Ctrl-C, SIGTERM, an error): no round outlives the run, none holds a file in its folder
        for process, _, _, _ in running.values():
            process.terminate()
        for process, _, _, log in running.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


@contextlib.contextmanager
def stop_signals_held():
    """SIGINT and SIGTERM wait until the block ends, then act as they would have. A handler that raises (Ctrl-C,
    ``stop_on_sigterm``) inside ``Popen`` would leave its child started but unknown: running on, writing into a
    folder the cleanup had removed. Python runs handlers in the main thread only; elsewhere this holds nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.signal(signum, lambda signum, frame: caught.append(signum)) for signum in held}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)


def _run(pending: list, running: dict, *, jobs: int, folder: Path, finished: Callable, env: dict | None) -> None:
    """:func:`run_rounds`' loop: moves tasks from ``pending`` through ``running`` (which its caller cleans up)."""
    n = 0
    while pending or running:
        while pending and len(running) < jobs:
            key, command, cwd = pending.pop(0)
            n += 1
            out = Path(command[command.index("--out") + 1])
            with stop_signals_held():  # a round started is a round registered, so the cleanup stops it
                log = open(folder / f"round-{n:03d}.log", "w+")
                running[key] = (subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=log),
                                time.perf_counter(), out, log)
        time.sleep(0.05)
        for key, (process, began, out, log) in list(running.items()):
            if process.poll() is None:
                continue
            del running[key]
            log.seek(0)
            tail = log.read()[-400:].strip().replace("\n", " | ")
            log.close()
            try:
                if process.returncode != 0:
                    raise ValueError(f"exit {process.returncode}: {tail}")
                document, error = load_round(out), ""
            except (OSError, ValueError) as problem:
                document, error = None, str(problem)[:400]
            if finished(key, document, error, time.perf_counter() - began):
                pending.clear()
                return  # run_rounds stops what is still running


def new_session(*, profile: str, device: str, rounds: int, jobs: int, repeats: int, sample_s: float, threads: int,
                seed: int, slowdown: Sequence[str], started: str) -> dict:
    """The description of a session kept in its document; :func:`record_round` fills in what its rounds did."""
    return {"profile": profile, "device": device, "started": started, "rounds_planned": rounds, "rounds": 0,
            "jobs": jobs, "repeats": repeats, "builds": 1, "sample_s": sample_s, "threads": threads, "seed": seed,
            "slowdown": list(slowdown), "load": [], "round_s": [], "failed_rounds": [],
            "load_start": [round(v, 2) for v in os.getloadavg()]}


def record_round(session: dict, docs: list[dict], index: int, document: dict | None, error: str, seconds: float,
                 device: str) -> bool:
    """Add a finished round to its session (or its error); whether it succeeded."""
    if document is None:
        session["failed_rounds"].append({"round": index, "error": error})
        return False
    docs.append(document)
    session.setdefault("machine", machine_label(document["env"], device))
    session.setdefault("clock", document.get("clock", "wall"))
    session["rounds"] += 1
    session["round_s"].append(round(seconds, 1))
    session.setdefault("examples", []).append(document.get("examples"))  # read and drawn (None: older code)
    session["load"].append([round(v, 2) for v in os.getloadavg()])
    return True


def measure(*, profile: str, device: str, rounds: int, jobs: int, repeats: int, sample_s: float, threads: int,
            attempted: Sequence[str], subjects: Sequence[str] | None = None, case_ids: Sequence[str] | None = None,
            slowdown: Sequence[str] = (), memory: bool = True, seed: int | None = None,
            progress: Callable[[str], None] | None = None, checkpoint: Callable[[dict], None] | None = None) -> dict:
    """Run ``rounds`` fresh processes, ``jobs`` at a time, and combine them into one session document.

    Round ``i`` shuffles the case order with seed ``seed + i``; only the first round measures peak memory (it does not
    depend on the round). ``checkpoint`` receives the session so far after every finished round, so a run stopped
    by a time limit keeps its rounds. A round that fails is reported and left out; all failing is an error."""
    if rounds < 1 or jobs < 1:
        raise ValueError(f"rounds and jobs must be at least 1, got {rounds} and {jobs}")
    seed = random.SystemRandom().randrange(1_000_000) if seed is None else seed
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    session_id = f"{started}/{seed:06d}"
    clock = time.perf_counter()
    session = new_session(profile=profile, device=device, rounds=rounds, jobs=jobs, repeats=repeats,
                          sample_s=sample_s, threads=threads, seed=seed, slowdown=slowdown, started=started)
    docs: list[dict] = []

    def finished(i, document, error, seconds):
        if not record_round(session, docs, i, document, error, seconds, device):
            if progress:
                progress(f"round {i + 1}/{rounds} failed: {error[:200]}")
            return
        session["duration_s"] = round(time.perf_counter() - clock, 1)
        if progress:
            progress(f"round {session['rounds']}/{rounds} done in {seconds:.0f} s (load {session['load'][-1][0]:.2f})")
        if checkpoint:
            checkpoint(combine(docs, session=session, session_id=session_id, attempted=attempted))

    with tempfile.TemporaryDirectory(prefix="conformance-bench-rounds-") as tmp:
        tasks = [(i, round_command(profile=profile, device=device, seed=seed + i, out=Path(tmp) / f"round-{i:03d}.json",
                                   repeats=repeats, sample_s=sample_s, threads=threads, subjects=subjects,
                                   case_ids=case_ids, slowdown=slowdown, memory=memory and i == 0), None)
                 for i in range(rounds)]
        run_rounds(tasks, jobs=jobs, folder=Path(tmp), finished=finished,
                   env={**os.environ, SHARED_EXAMPLES: str(Path(tmp) / "examples")})
    if not docs:
        raise RuntimeError("every round failed: " + "; ".join(f["error"][:200] for f in session["failed_rounds"]))
    session["duration_s"] = round(time.perf_counter() - clock, 1)
    return combine(docs, session=session, session_id=session_id, attempted=attempted)
