"""Run one cell: draw examples with hypothesis, apply the transform, run the check, classify the outcome.

``run_cell`` is the single entry point used by the pytest suite, the mutant tests, ``python -m
conformance.cell`` and third-party test suites. It never raises for a finding: it returns a CellResult.
"""

from __future__ import annotations

import hashlib
import signal
import threading
import time
import traceback
from collections import OrderedDict
from contextlib import contextmanager
from typing import Callable, Iterator

import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from . import registry
from .checks import CHECKS
from .checks.harness import Check, Truth, spec_truth
from .core import isolation, strategies
from .core.causes import CheckFailed, ProgramStopRaised, TransformFailed, classify
from .core.extras import EXTRA_OF_MODULE, install_hint
from .core.settings import PROFILES, cell_timeout_s, profile_name
from .core.strategies import stable_draws
from .core.types import Cell, Example
from .records.io import NO_DEVICE, NOT_APPLICABLE, CellResult
from .transforms import Context, TransformRun
from .transforms.harness import DTYPES, leaks


class CellTimeout(BaseException):
    """Raised by the alarm in the cell's thread. A BaseException so hypothesis does not shrink it."""


class _StopAtTransformFailure(BaseException):
    """A transform raised: the finding is the exception, not a value that shrinking could make smaller, and
    every shrink step would run the failing transform again. A BaseException so hypothesis stops at once."""

    def __init__(self, failure: TransformFailed):
        super().__init__(str(failure))
        self.failure = failure


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):
        raise CellTimeout(f"cell exceeded {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# Outcomes and spec answers are shared by the checks of one (subject, transform, device, dtype) and example:
# each compile happens once, not once per check. Failures are cached too, as (stage, error).
_OUTCOMES: "OrderedDict[tuple, TransformRun | TransformFailed]" = OrderedDict()
_TRUTHS: "OrderedDict[tuple, Truth]" = OrderedDict()
#: The examples a passing derandomized cell ran, in order, for the other cells that draw the same (run_cell).
_EXAMPLES: "OrderedDict[tuple, list[Example]]" = OrderedDict()
#: Each subject's edge examples (_edges_of); one small list per subject, kept for the process.
_EDGES: dict[tuple, list[Example]] = {}
_CACHE_SIZE = 64


class _CellState(dict):
    """A cell's bookkeeping (the example being judged, the tie-excused count) that also keeps every example it was
    given, in order."""

    def __init__(self) -> None:
        super().__init__(example=None, excused=0)
        self.examples: list[Example] = []

    def __setitem__(self, key, value) -> None:
        if key == "example":
            self.examples.append(value)
        super().__setitem__(key, value)


def example_key(example: Example) -> str:
    digest = hashlib.sha1()
    for t in (example.x, *example.params.values()):
        digest.update(str(tuple(t.shape)).encode())
        digest.update(t.detach().contiguous().numpy().tobytes())
    digest.update(repr(sorted(example.hyper.items(), key=lambda kv: kv[0])).encode())
    digest.update(repr(list(example.params)).encode())
    return digest.hexdigest()


def _remember(cache: OrderedDict, key: tuple, value) -> None:
    cache[key] = value
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)


def round_through(example: Example, dtype: torch.dtype) -> Example:
    """The example as a subject in ``dtype`` sees it, back in float64: the spec is judged on the same values."""

    def rounded(t: torch.Tensor) -> torch.Tensor:
        return t.to(dtype).to(torch.float64) if t.is_floating_point() else t

    return Example(rounded(example.x), {k: rounded(v) for k, v in example.params.items()}, dict(example.hyper))


#: Where outcome_for reports process-wide state it had to put back, for the cell being run (run_cell sets it).
_UNDONE: list[str] | None = None


def outcome_for(cell: Cell, ctx: Context, key: str) -> TransformRun:
    """The transform's run for this example (computed once for every check; the name, used inside
    ``cell_property``, stays: the hypothesis seed of every cell derives from that function's source). Process-wide
    state the transform left behind is put back (conformance.core.isolation); what had to be undone goes to the run's
    leaks and to the cell's record."""
    transform = registry.transforms()[cell.transform]
    # the checks see the same context: they compare call by call when the transform drove the subject's protocol
    ctx.persistent = transform.protocol and ctx.subject.protocol is not None
    cache_key = (cell.subject, cell.transform, cell.device, cell.dtype, key)
    cached = _OUTCOMES.get(cache_key)
    if cached is None:
        before = isolation.snapshot()
        ctx.watched = []
        try:
            cached = transform.fn(ctx)
        except TransformFailed as failure:
            failure.left_in_module = _left_in_watched(ctx)
            cached = failure
        except (KeyboardInterrupt, SystemExit) as raised:
            if isolation.stop_requested(raised):
                raise
            cached = TransformFailed(cell.transform, ProgramStopRaised(raised))
            cached.left_in_module = _left_in_watched(ctx)
        finally:
            left_behind = isolation.restore(before)
        if isinstance(cached, TransformRun):
            cached.findings.process_leaks = left_behind
            cached.findings.leaks = [*cached.findings.leaks, *left_behind]
        else:
            cached.process_leaks = left_behind
        _remember(_OUTCOMES, cache_key, cached)
    if _UNDONE is not None:
        found = cached.findings.process_leaks if isinstance(cached, TransformRun) else cached.process_leaks
        _UNDONE.extend(line for line in found if line not in _UNDONE)
    if isinstance(cached, TransformFailed):
        again = TransformFailed(cached.stage, cached.error)
        again.left_in_module = cached.left_in_module
        raise again from cached.error
    return cached


def _left_in_watched(ctx: Context) -> list[str]:
    """What a transform that raised left in the modules it watched (a failure must leave a module as it found it:
    a user catches the error and goes on with the module)."""
    found = []
    for module, before in ctx.watched:
        try:
            found.extend(leaks(module, *before))
        except Exception as error:  # noqa: BLE001 - a module too broken to inspect is a finding too
            found.append(f"the module could not be inspected: {type(error).__name__}: {error}"[:300])
    return found


def truth_for(cell: Cell, ctx: Context, key: str) -> Truth:
    cache_key = (cell.subject, cell.dtype, key)
    if cache_key not in _TRUTHS:
        _remember(_TRUTHS, cache_key, spec_truth(ctx))
    return _TRUTHS[cache_key]


def skip_reason(cell: Cell) -> str | None:
    """Why this cell cannot run here (missing library, no CUDA, inapplicable), or None."""
    subject = registry.subjects()[cell.subject]
    spec = registry.specs()[subject.spec]
    transform = registry.transforms()[cell.transform]
    reason = registry.not_applicable(cell, subject, spec, transform)
    if reason:
        return f"{NOT_APPLICABLE}{reason}"
    missing = registry.missing_requirement(subject.requires + transform.requires)
    if missing:
        hint = f" ({install_hint(missing)})" if missing in EXTRA_OF_MODULE else ""
        return f"optional library {missing!r} is not installed{hint}"
    if cell.device == "cuda" and not torch.cuda.is_available():
        return NO_DEVICE
    return None


def run_cell(cell: Cell, *, profile: str | None = None, timeout_s: float | None = None) -> CellResult:
    """Run one cell to an outcome: pass, fail, xfail, xpass, skip or timeout (crash is the plugin's). The alarm
    stops it after ``timeout_s`` seconds (default ``CONFORMANCE_CELL_TIMEOUT``)."""
    started = time.perf_counter()
    timeout_s = cell_timeout_s() if timeout_s is None else timeout_s
    subject = registry.subjects()[cell.subject]
    reason = skip_reason(cell)
    if reason:
        return CellResult("skip", message=reason, duration_s=time.perf_counter() - started)
    len(subject.param_map)  # a spec subject draws its parameter names on first use: here, not inside the cell's draws
    spec = registry.specs()[subject.spec]
    transform = registry.transforms()[cell.transform]
    options = PROFILES[profile or profile_name()]
    dtype, device = DTYPES[cell.dtype], torch.device(cell.device)
    check = _stops_as_findings(_judge(CHECKS[cell.check]))
    state = _CellState()

    # Compiling cells do not shrink a failure: every shrink step would compile again (minutes per cell). Nor do
    # cells with a known failure: the finding and its minimal reproduction are already recorded in the entry.
    known = registry.known_failure(cell, subject)
    no_shrink = transform.compiles or known is not None
    phases = [Phase.explicit, Phase.reuse, Phase.generate] if no_shrink else list(Phase)

    scale = subject.examples_scale.get(cell.device, 1.0)
    examples = options["costly_examples" if transform.costly else "compile_examples" if transform.compiles
                       else "max_examples"]
    examples = max(1, round(examples * scale))
    # The spec's edge examples come first, scaled as the draws are (at least one); a compiling transform (a compile
    # per example) takes the first in place of one drawn example (with one example in all: only the edge).
    edges = _edges_of(spec.edges, subject) if spec.edges is not None else []
    edges = edges[:max(1, round(len(edges) * scale))]
    if transform.compiles and edges:
        edges, examples = edges[:1], examples - 1
    # Past a kernel's tiles and accumulators (long sequences, wide K): judged against the spec where the subject
    # computes as built, after the cell's other examples and outside their replay (other checks replay that list).
    sizes = (_edges_of(spec.size_edges, subject) if spec.size_edges is not None and _judges_sizes(cell, transform)
             else [])
    sizes = sizes[:round(len(sizes) * scale)]
    draws, examples = examples > 0, max(1, examples)  # hypothesis asks for at least one

    # hypothesis derives the derandomized seed from this function's source: an edit to cell_property draws other
    # examples in every cell (and can move the recorded results), so per-cell bookkeeping lives outside it.
    @settings(max_examples=examples,
              phases=phases,
              derandomize=options["derandomize"], deadline=None, print_blob=False,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
              **({"database": options["database"]} if "database" in options else {}))
    @given(data=st.data())
    def cell_property(data):
        example = round_through(data.draw(spec.examples(**subject.fixed), label="example"), dtype)
        state["example"] = example
        ctx = Context(subject, spec, example, dtype, device)
        key = example_key(example)
        try:
            outcome = outcome_for(cell, ctx, key)
        except TransformFailed as failure:
            raise _StopAtTransformFailure(failure) from failure
        state["excused"] += check(ctx, outcome, truth_for(cell, ctx, key), cell.transform)

    # Same examples for every check and transform of a subject: outcomes and spec answers are reused.
    cell_property._hypothesis_internal_add_digest = f"{cell.subject}|{cell.device}|{cell.dtype}".encode()

    def judge(given_example: Example) -> None:
        """cell_property's steps for a given example, an edge or a replayed one (kept out of cell_property, whose
        source seeds the draws). The given one is shared by other cells: this cell gets its own tensors, as a drawn
        example is its own."""
        example = round_through(_own_copy(given_example), dtype)
        state["example"] = example
        ctx = Context(subject, spec, example, dtype, device)
        key = example_key(example)
        try:
            outcome = outcome_for(cell, ctx, key)
        except TransformFailed as failure:
            raise _StopAtTransformFailure(failure) from failure
        state["excused"] += check(ctx, outcome, truth_for(cell, ctx, key), cell.transform)

    global _UNDONE
    error: BaseException | None = None
    _UNDONE = undone = []
    # A derandomized cell draws what every cell of its subject, device and dtype with as many examples draws: once
    # one of them has passed, the others replay its examples instead of drawing them again (a third of a cell's
    # time), and run hypothesis only when a replayed example fails, to shrink it as before.
    long_draws = options["long_draws"] and _judges_sizes(cell, transform)
    replay_key = (cell.subject, cell.device, cell.dtype, len(edges), examples if draws else 0,
                  profile or profile_name(), long_draws)
    replay = _EXAMPLES.get(replay_key) if options["derandomize"] else None
    with _compile_settings(transform.compiles), isolation.sigints_counted():
        try:
            with time_limit(timeout_s), stable_draws(), strategies.long_draws(long_draws):
                if replay is not None and _first_failure(judge, replay) is not None:
                    replay, state = None, _CellState()  # found again below, with hypothesis' shrinking
                if replay is None:
                    edge_failure = _first_failure(judge, edges)
                    failed_edge = state["example"]
                    # the drawn examples run even after an edge failed: a failure among them is shrunk, and the
                    # cell shows that smaller example; the edge's only when no drawn example fails
                    if draws:
                        cell_property()
                    if edge_failure is not None:
                        state["example"] = failed_edge
                        raise edge_failure
                    if options["derandomize"]:
                        _remember(_EXAMPLES, replay_key, list(state.examples))
                size_failure = _first_failure(judge, sizes)
                if size_failure is not None:
                    raise size_failure
        except _StopAtTransformFailure as stop:
            error = stop.failure
        except CellTimeout as timeout:
            return CellResult("timeout", cause="timeout", message=str(timeout), example=_describe(state),
                              duration_s=time.perf_counter() - started)
        except Exception as raised:  # noqa: BLE001 - every library error is a finding
            error = _unwrap(raised)
        finally:
            _UNDONE = None
    result = _result(error, state, time.perf_counter() - started, transform.stage_causes_of())
    after_failure = CHECKS[cell.check].after_failure
    if isinstance(error, TransformFailed) and after_failure is not None:
        result.also = [{"cause": found.cause, "message": found.message}
                       for found in after_failure(cell.transform, error)]
    if isinstance(error, CheckFailed) and error.also:  # the check's further findings on the failing example
        result.also = [{"cause": found.cause, "message": found.message} for found in error.also]
    if undone:
        result.extra["process_state_restored"] = undone
    return _apply_known(result, known)


def _own_copy(example: Example) -> Example:
    return Example(example.x.clone(), {k: v.clone() for k, v in example.params.items()}, dict(example.hyper))


def _first_failure(judge: Callable[[Example], None], examples: list[Example]) -> BaseException | None:
    """Judge ``examples`` in order up to the first that fails, and return its error (None when all pass); a timeout
    or an interrupt propagates."""
    for example in examples:
        try:
            judge(example)
        except (CellTimeout, KeyboardInterrupt):
            raise
        except BaseException as failure:  # noqa: BLE001 - the caller decides: raise it, or find it again
            return failure
    return None


#: The dtypes whose spec checks judge the size edges: in bfloat16 and float16 a sequence of 33 steps accumulates
#: rounding past the tolerance (the spec's own row fails), and float64 would repeat float32's sizes at their cost.
SIZE_EDGE_DTYPES = ("float32",)


def _judges_sizes(cell: Cell, transform) -> bool:
    """Whether the cell checks the spec's size edges: a check against the spec, in a transform that neither compiles
    (a longer sequence is a longer graph: seconds of compilation) nor computes in a dtype of its own."""
    return (CHECKS[cell.check].against_spec and not transform.compiles and transform.compute_dtype is None
            and cell.dtype in SIZE_EDGE_DTYPES)


def _edges_of(edges: Callable[..., list[Example]], subject) -> list:
    """A spec's edge examples (``edges`` or ``size_edges``) for ``subject``'s fixed values, built once per process (a
    fixed strategy is searched for its value: over a second for a recurrent weight matrix)."""
    key = (edges, subject.id, repr(sorted(subject.fixed.items(), key=lambda kv: kv[0])))
    if key not in _EDGES:
        _EDGES[key] = edges(**subject.fixed)
    return _EDGES[key]


@contextmanager
def _compile_settings(compiles: bool) -> Iterator[None]:
    """Fail loudly instead of silently running eager when dynamo's recompile limit is hit."""
    if not compiles:
        yield
        return
    import torch._dynamo.config as dynamo_config

    with dynamo_config.patch(fail_on_recompile_limit_hit=True, recompile_limit=64):
        yield


def _unwrap(error: BaseException) -> BaseException:
    """Hypothesis wraps flaky or multiple failures in exception groups; the first inner error is the finding."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _describe(state: dict) -> str | None:
    return state["example"].describe() if state["example"] is not None else None


def _result(error: BaseException | None, state: dict, duration: float, stage_causes: dict[str, str]) -> CellResult:
    if error is None:
        return CellResult("pass", tie_excluded=state["excused"], duration_s=duration)
    cause = "harness-error" if _raised_by_harness(error) else classify(error, stage_causes)
    detail = error.message if isinstance(error, CheckFailed) else _short_trace(error)
    numbers = {}
    if isinstance(error, CheckFailed):
        numbers = dict(max_abs_err=error.max_abs_err, max_rel_err=error.max_rel_err, atol=error.atol,
                       rtol=error.rtol)
    return CellResult("fail", cause=cause, message=detail, example=_describe(state), tie_excluded=state["excused"],
                      duration_s=duration, **numbers)


def _raised_by_harness(error: BaseException) -> bool:
    """A bug in this framework (not a finding about the subject): raised from conformance/ code outside any
    transform stage and not a check's verdict."""
    if isinstance(error, (CheckFailed, TransformFailed, ProgramStopRaised)):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and "/conformance/" in frames[-1].filename.replace("\\", "/")


def _short_trace(error: BaseException) -> str:
    inner = error.error if isinstance(error, TransformFailed) else error
    lines = traceback.format_exception(type(inner), inner, inner.__traceback__)
    stage = f"[{error.stage}] " if isinstance(error, TransformFailed) else ""
    text = "".join(lines[-6:])
    return f"{stage}{type(inner).__name__}: {inner}\n{text}"[:4000]


def _judge(check: Check) -> Callable[..., int]:
    """The check's function; a check of gradients first fails with the backward's failure a run kept (a
    forward-only layer's), while the checks of the forward judge that run. (Outside ``cell_property``, whose
    source seeds the cells' examples.)"""
    if not check.needs_grad:
        return check.fn

    def judge(ctx: Context, outcome: TransformRun, truth, transform: str) -> int:
        for run in (outcome, outcome.against):
            failure = run.findings.backward_failure if run is not None else None
            if failure is not None:
                raise _StopAtTransformFailure(failure) from failure.error
        return check.fn(ctx, outcome, truth, transform)
    return judge


def _stops_as_findings(check: Callable[..., int]) -> Callable[..., int]:
    """``check``, with a KeyboardInterrupt or SystemExit that the subject's code raised in it (a check may call the
    module again) turned into an ordinary exception: hypothesis re-raises those two itself, and pytest would end
    the run. A SIGINT the process received still stops it."""

    def judged(*args) -> int:
        try:
            return check(*args)
        except (KeyboardInterrupt, SystemExit) as raised:
            if isolation.stop_requested(raised):
                raise
            raise ProgramStopRaised(raised) from raised
    return judged


def _apply_known(result: CellResult, known) -> CellResult:
    if known is None:
        return result
    result.known = {"reason": known.reason, "link": known.link, "cause": known.cause,
                    "reproducer": known.reproducer}
    if result.outcome == "pass":
        result.outcome = "xpass"
        result.message = f"known failure no longer fails (remove the entry): {known.reason}"
    elif result.outcome == "fail":
        unexplained = [found["cause"] for found in result.also if not known.explains(found["cause"])]
        if not known.explains(result.cause):
            result.message = (f"known failure expected cause {known.cause!r} but got {result.cause!r}\n"
                              + result.message)
        elif unexplained:  # the known failure, and a further finding no entry explains: a new finding
            result.message = (f"known failure {known.cause!r}, but also found {', '.join(unexplained)} (see "
                              f"also)\n" + result.message)
        else:
            result.outcome = "xfail"
    return result
