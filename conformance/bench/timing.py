"""Measuring cases: interleaved repeats of subject and reference, the median of the per-repeat ratios, peak memory.

Load on a shared machine comes and goes on a scale of seconds; one repeat times the subject and then the reference
(or the other way round, alternating) back to back, each for about ``sample_s``, so both see the same load and the
ratio of the two cancels most of it. The median over repeats drops the repeats a burst of load hit unevenly.

On the CPU the clock is the process's CPU time, not the wall clock: with one torch thread a case computes on the
calling thread, and time spent waiting for a core that another process holds is not the layer's cost. Under a
concurrent test run (load 4 on 2 cores) wall-clock ratios of one case spread over a factor of 2.4 between processes,
CPU-time ratios over 6% (docs/benchmarks.md). CUDA work is asynchronous, so on cuda the clock is the wall clock
around a synchronised loop. Both are recorded; the ratio uses the device's clock.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

import torch

from .cases import Case, Pair, Skip, build_pair, describe, selected
from .examples import prepare
from .rounds import SHARED_EXAMPLES

MAX_LOOPS = 100_000
SCHEMA = 1


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def clock(device: str) -> Callable[[], float]:
    """The clock a ratio is measured with: CPU time of this process on the CPU, the wall clock on cuda."""
    return time.perf_counter if device == "cuda" else time.process_time


def calibrate(step: Callable[[], None], sample_s: float, device: str = "cpu") -> int:
    """How many calls of ``step`` take about ``sample_s`` of the device's clock (at least one), from the fastest of
    three calls: the rule the gate's experiment measured (from one call a round costs 8% less CPU and spreads its
    ratios about 8% wider, docs/benchmarks.md)."""
    now = clock(device)
    best = float("inf")
    for _ in range(3):
        started = now()
        step()
        _sync(device)
        best = min(best, now() - started)
        if best >= sample_s:
            break
    return max(1, min(MAX_LOOPS, round(sample_s / max(best, 1e-9))))


def timed(step: Callable[[], None], loops: int, device: str = "cpu") -> tuple[float, float]:
    """Seconds per call of ``step`` over ``loops`` calls: by the device's clock, and by the wall clock."""
    now = clock(device)
    _sync(device)
    started, wall = now(), time.perf_counter()
    for _ in range(loops):
        step()
    _sync(device)
    return (now() - started) / loops, (time.perf_counter() - wall) / loops


def slowed(step: Callable[[], None], fraction: float, device: str = "cpu") -> Callable[[], None]:
    """``step`` made ``fraction`` slower by spinning after it for ``fraction`` of the time it took on the device's
    clock: the artificial regression of the noise experiment, proportional under any load."""
    now = clock(device)

    def slow_step() -> None:
        started = now()
        step()
        _sync(device)
        until = started + (now() - started) * (1.0 + fraction)
        while now() < until:
            pass

    return slow_step


@dataclass
class Measurement:
    ratio: float               # median over blocks of subject time / reference time (the device's clock)
    ratios: list[float]        # one per block, in order
    subject_s: float           # median seconds per call (of the builds' medians when combined)
    reference_s: float
    loops: tuple[int, int]     # calls per sample (subject, reference)
    wall_ratios: list[float] = field(default_factory=list)  # the blocks' ratios by the wall clock


def measure(pair: Pair, *, repeats: int, sample_s: float, device: str = "cpu", slowdown: float = 0.0) -> Measurement:
    """Interleaved timing of ``pair`` in ``repeats`` blocks of four samples, subject-reference-reference-subject:
    whichever side runs second pays for what the first left behind (caches, allocator), and a block has each order
    once, so order effects and a linear drift of the load cancel in its ratio (sum of subject times over sum of
    reference times)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    subject = slowed(pair.subject, slowdown, device) if slowdown else pair.subject
    loops = (calibrate(subject, sample_s, device), calibrate(pair.reference, sample_s, device))
    ratios, wall_ratios, subject_times, reference_times = [], [], [], []
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()  # a collection inside one side's sample would be charged to it
    try:
        for _ in range(repeats):
            s1 = timed(subject, loops[0], device)
            r1 = timed(pair.reference, loops[1], device)
            r2 = timed(pair.reference, loops[1], device)
            s2 = timed(subject, loops[0], device)
            ratios.append((s1[0] + s2[0]) / (r1[0] + r2[0]))
            wall_ratios.append((s1[1] + s2[1]) / (r1[1] + r2[1]))
            subject_times += [s1[0], s2[0]]
            reference_times += [r1[0], r2[0]]
    finally:
        if enabled:
            gc.enable()
    return Measurement(statistics.median(ratios), ratios, statistics.median(subject_times),
                       statistics.median(reference_times), loops, wall_ratios)


# ------------------------------------------------------------------------------------------------------ memory
def pin_allocator() -> None:
    """Serve every CPU tensor below 32 MiB from the heap, from the first call of the first case on.

    glibc's default mmap threshold starts at 128 KiB and grows each time a mapped block is freed, so whether a
    tensor of a given size costs a fresh mapping (page faults on every call) depended on what ran before in the
    process: in the noise experiment the first case's spec ran 5x slower in one run of four. A fixed threshold
    makes the allocator behave the same for every case, subject and spec."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None)
            libc.mallopt(-3, 32 * 2**20)  # M_MMAP_THRESHOLD (glibc's largest dynamic value)
            libc.mallopt(-1, 64 * 2**20)  # M_TRIM_THRESHOLD: keep up to 64 MiB of freed heap for reuse
        except (OSError, AttributeError):
            pass


def _trim_heap() -> None:
    """Hand freed heap pages back to the OS (glibc ``malloc_trim``), so the resident set starts at what is live and
    a step that reuses freed blocks still raises the peak. Changing ``mallopt`` thresholds instead would change how
    fast every allocation is, and with it the timings."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):
            pass


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"{field} not in /proc/self/status")


def peak_memory(step: Callable[[], None], device: str = "cpu") -> int | None:
    """Bytes by which one call of ``step`` raises the peak above what was in use before it (CUDA: allocated by
    the caching allocator; CPU: resident set size, reset through /proc/self/clear_refs). None where unavailable."""
    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        return max(0, torch.cuda.max_memory_allocated() - before)
    _trim_heap()
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # resets VmHWM (the peak RSS) to the current RSS
        before = _status_kib("VmRSS")
        step()
        return max(0, _status_kib("VmHWM") - before) * 1024
    except OSError:
        return None


# --------------------------------------------------------------------------------------------------------- run
def environment(device: str) -> dict:
    from ..records.io import environment as cell_environment

    env = dict(cell_environment())
    env["threads"] = torch.get_num_threads()
    env["cpu_model"] = _cpu_model()
    if device == "cuda" and torch.cuda.is_available():
        env["device_name"] = torch.cuda.get_device_name(0)
    return env


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _combine(first: Measurement | None, more: Measurement) -> Measurement:
    """Two measurements of one case as one: the median over all their blocks."""
    if first is None:
        return more
    ratios = first.ratios + more.ratios
    return Measurement(statistics.median(ratios), ratios, statistics.median([first.subject_s, more.subject_s]),
                       statistics.median([first.reference_s, more.reference_s]), more.loops,
                       first.wall_ratios + more.wall_ratios)


def _settle_heap(case_list: list[Case], device: str) -> dict[str, int]:
    """Import the libraries the cases need and give every case its small example (read from the session's shared
    examples where a round of this code left them, :mod:`conformance.bench.examples`), then move every object alive
    so far out of the collector's reach (``gc.freeze``): the full collection before each case's timing then scans
    only what later cases made (60 ms a case with torch and six libraries loaded, about 1 ms after). Returns how
    many examples were read and drawn."""
    import importlib

    from .. import registry

    for case in case_list:
        subject = registry.subjects().get(case.base_subject)
        for module in (subject.requires if subject else ()):
            try:
                importlib.import_module(module)
            except Exception:  # noqa: BLE001 - a library that cannot load is the case's skip, reported there
                pass
    shared = os.environ.get(SHARED_EXAMPLES)
    counts = prepare(case_list, device, Path(shared) if shared else None)
    gc.collect()
    gc.freeze()
    return counts


def run(case_list: Iterable[Case], *, profile: str, device: str = "cpu", repeats: int, sample_s: float,
        builds: int = 1, slowdown: Mapping[str, float] | None = None, memory: bool = True,
        progress: Callable[[str], None] | None = None, order_seed: int | None = None) -> dict:
    """Measure every case; a case that cannot run is recorded under ``skipped`` with its reason, never raised.

    Each case is built ``builds`` times, ``repeats`` blocks each, and its ratio is the median over all blocks.
    Fresh modules and tensors land elsewhere in memory, and the noise experiment found that where they land
    moves a ratio by up to 25% between builds in one process, more than the load of a shared machine does
    within a build: several builds sample that spread instead of betting on one.

    ``slowdown`` maps a subject glob to an artificial slowdown fraction (for the noise experiment only).
    ``order_seed`` shuffles the order in which cases are measured (a round of the gate: what ran before a case
    differs from round to round). Returns the one-process document (see :func:`conformance.bench.gate.load`),
    which the ``round`` command writes once, at its end: a session reads a round's file only when the round ended
    well, and keeps the rounds it has itself (``rounds.measure``)."""
    pin_allocator()
    case_list = list(case_list)
    order = list(case_list)
    if order_seed is not None:
        random.Random(order_seed).shuffle(order)
    examples = _settle_heap(case_list, device)
    clock_name = "wall" if device == "cuda" else "cpu"
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    clock = time.perf_counter()
    entries: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    env = environment(device)

    def document() -> dict:
        return {"schema": SCHEMA, "kind": "conformance.bench", "profile": profile, "device": device,
                "repeats": repeats, "builds": builds, "sample_s": sample_s, "clock": clock_name, "started": started,
                "duration_s": round(time.perf_counter() - clock, 1), "env": env,
                "attempted": [c.id for c in case_list], "entries": dict(entries), "skipped": dict(skipped),
                "complete": True, "examples": examples,
                **({"order_seed": order_seed} if order_seed is not None else {})}

    try:
        for n, case in enumerate(order, 1):
            fraction = next((f for pattern, f in (slowdown or {}).items() if selected(case.subject, [pattern])), 0.0)
            try:
                # Some layers print on every call (bitorch's STE heaviside): keep the log readable, the cost counted.
                with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
                    result, pair = None, None
                    for _ in range(builds):  # fresh modules and tensors each time (see the docstring)
                        pair = build_pair(case, device)
                        result = _combine(result, measure(pair, repeats=repeats, sample_s=sample_s, device=device,
                                                          slowdown=fraction))
                    mem = (peak_memory(pair.subject, device), peak_memory(pair.reference, device)) \
                        if memory and case.mode == "forward+backward" else (None, None)
            except Skip as reason:
                skipped[case.id] = str(reason)
                if progress:
                    progress(f"[{n}/{len(case_list)}] skip {case.id}: {reason}")
                continue
            except Exception as error:  # noqa: BLE001 - a subject failing mid-measurement is reported, not raised
                skipped[case.id] = f"{case.mode} failed: {type(error).__name__}: {error}"[:300]
                if progress:
                    progress(f"[{n}/{len(case_list)}] skip {case.id}: {skipped[case.id]}")
                continue
            finally:
                pair = None  # free both modules before the next case's memory is measured
            entries[case.id] = {**describe(case), "ratio": round(result.ratio, 5),
                                "ratios": [round(r, 5) for r in result.ratios], "clock": clock_name,
                                "wall_ratios": [round(r, 5) for r in result.wall_ratios],
                                "subject_s": result.subject_s,
                                "reference_s": result.reference_s, "loops": list(result.loops),
                                "mem_subject": mem[0], "mem_reference": mem[1],
                                **({"slowdown": fraction} if fraction else {})}
            if progress:
                progress(f"[{n}/{len(case_list)}] {result.ratio:6.3f}  {case.id}  "
                         f"({result.subject_s * 1e3:.3g} ms / {result.reference_s * 1e3:.3g} ms)")
    finally:
        gc.unfreeze()
    return document()
