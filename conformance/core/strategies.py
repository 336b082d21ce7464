"""Hypothesis building blocks shared by every spec's example strategy.

Tensors are drawn element by element (so hypothesis can shrink them) in float64 on the CPU; subjects get a
cast copy. Shapes are small on purpose: conformance needs coverage of conventions, not size.

>>> from hypothesis import given
>>> @given(tensors((2, 3), away_from=(0.0,)))
... def test(t): assert (t.abs() >= 1e-3).all()
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Iterator, Mapping, Sequence

import torch
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

#: Distance kept from a decision boundary (threshold, sign at 0, rounding edge) when inputs are drawn away from it.
TIE_EPS = 1e-3


def value_or_strategy(value: Any) -> SearchStrategy:
    """Accept either a plain value or a strategy, as hypothesis' own ``extra.numpy`` does."""
    return value if isinstance(value, SearchStrategy) else st.just(value)


def hyper(fixed: Mapping[str, Any], name: str, default: SearchStrategy) -> SearchStrategy:
    """The strategy for hyperparameter ``name``: the subject's fixed value/strategy if given, else ``default``."""
    return value_or_strategy(fixed[name]) if name in fixed else default


@functools.lru_cache(maxsize=None, typed=True)  # typed: a default of 1 is not one of 1.0 or True
def _simplest(strategy: SearchStrategy, prefer: Any, default: Any) -> Any:
    """The simplest value of ``strategy`` that ``prefer`` accepts (no ``prefer``: equal to ``default``), else its
    simplest value."""
    from hypothesis import find, settings
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    quiet = settings(database=None, derandomize=True)
    try:
        return find(strategy, prefer or (lambda value: value == default), settings=quiet)
    except (NoSuchExample, Unsatisfiable):
        return find(strategy, lambda _: True, settings=quiet)


def edge_hyper(fixed: Mapping[str, Any], name: str, default: Any, prefer: Any = None) -> Any:
    """Hyperparameter ``name`` of an edge example: the subject's fixed value; for a fixed strategy, the simplest of
    its values that ``prefer`` accepts (by default: ``default`` itself), else its simplest value; ``default`` (a plain
    value) when the subject fixes nothing."""
    if name not in fixed:
        return default
    value = fixed[name]
    if not isinstance(value, SearchStrategy):
        return value
    return _simplest(value, prefer, default)


def check_fixed(fixed: Mapping[str, Any], allowed: Sequence[str], spec_id: str) -> None:
    """Reject a subject that fixes a hyperparameter the spec does not have: a typo must not be ignored."""
    unknown = sorted(set(fixed) - set(allowed))
    if unknown:
        raise ValueError(f"spec {spec_id!r} has no hyperparameter(s) {unknown}; it has {sorted(allowed)}")


def finite_floats(min_value: float = -4.0, max_value: float = 4.0, *, away_from: Sequence[float] = (),
                  eps: float = TIE_EPS) -> SearchStrategy[float]:
    """Finite float64 values in ``[min_value, max_value]``, at least ``eps`` away from each of ``away_from``."""
    base = st.floats(min_value, max_value, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    if not away_from:
        return base
    return base.filter(lambda v: all(abs(v - p) >= eps for p in away_from))


def shapes(*, min_dims: int = 1, max_dims: int = 3, min_side: int = 1, max_side: int = 4) -> SearchStrategy[tuple]:
    """Small tensor shapes."""
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


@st.composite
def tensors(draw, shape: Sequence[int] | SearchStrategy, *, min_value: float = -4.0, max_value: float = 4.0,
            away_from: Sequence[float] = (), eps: float = TIE_EPS, never_all_zero: bool = True) -> torch.Tensor:
    """A float64 CPU tensor of ``shape`` with elements from :func:`finite_floats`; never all zeros by default
    (an all-zero input hides scaling, sign and reset bugs)."""
    shape = tuple(draw(value_or_strategy(shape)))
    numel = 1
    for side in shape:
        numel *= side
    elements = finite_floats(min_value, max_value, away_from=away_from, eps=eps)
    values = draw(st.lists(elements, min_size=numel, max_size=numel))
    if never_all_zero and numel and all(v == 0.0 for v in values):
        values[0] = max_value if max_value != 0 else min_value
    return torch.tensor(values, dtype=torch.float64).reshape(shape)


@st.composite
def magnified(draw, x: torch.Tensor, *, low: float = 10.0, high: float = 1e4) -> torch.Tensor:
    """``x`` as drawn, or (half the time) with some of its elements moved to magnitudes log-uniform in
    ``[low, high]``, keeping their signs: inputs over the whole domain of a function defined for any finite input,
    while the rest of the example stays where its decision points are. ``low`` must lie past every decision point
    the caller drew ``x`` away from."""
    if not x.numel() or not draw(st.booleans()):
        return x
    chosen = draw(st.lists(st.booleans(), min_size=x.numel(), max_size=x.numel()))
    exponents = draw(st.lists(st.floats(math.log10(low), math.log10(high)), min_size=x.numel(), max_size=x.numel()))
    flat = x.flatten().clone()
    for i, (pick, exponent) in enumerate(zip(chosen, exponents)):
        if pick and flat[i] != 0:
            flat[i] = math.copysign(10.0 ** exponent, float(flat[i]))
    return flat.reshape(x.shape)


@st.composite
def signs(draw, shape: Sequence[int] | SearchStrategy) -> torch.Tensor:
    """A float64 tensor of -1.0/+1.0 values."""
    shape = tuple(draw(value_or_strategy(shape)))
    numel = 1
    for side in shape:
        numel *= side
    bits = draw(st.lists(st.booleans(), min_size=numel, max_size=numel))
    return (torch.tensor(bits, dtype=torch.float64) * 2 - 1).reshape(shape)


def positive(min_value: float = 0.05, max_value: float = 4.0) -> SearchStrategy[float]:
    return st.floats(min_value, max_value, allow_nan=False, allow_infinity=False)


def unit_interval(min_value: float = 0.05, max_value: float = 0.95) -> SearchStrategy[float]:
    """Decay factors such as beta, strictly inside (0, 1) by default."""
    return st.floats(min_value, max_value, allow_nan=False, allow_infinity=False)


#: Sequence lengths of the neurons' size edges: one step past a time tile of 8 (first: a subject that scales its
#: examples down keeps it), a tile of 16 exactly, and one step past 32 (past 8 and 16 several times over).
LONG_SEQUENCE_STEPS = (9, 16, 33)
#: Reduction lengths (K) of the binary layers' size edges: four 64-bit words and one bit, five words exactly, eight
#: words and one bit; past a tile of 256 bits and past what an 8-bit accumulator holds.
WIDE_K = (257, 320, 513)


#: Whether the examples being drawn may reach the sizes of the size edges: set by the runner (:func:`long_draws`).
_LONG_DRAWS = False


@contextlib.contextmanager
def long_draws(enabled: bool) -> Iterator[None]:
    """Within it (``enabled``), :func:`time_steps` and :func:`reduction_lengths` also draw past a kernel's tiles;
    outside it they draw exactly what they drew before, so a cell that does not judge the sizes keeps its examples."""
    global _LONG_DRAWS
    before, _LONG_DRAWS = _LONG_DRAWS, enabled
    try:
        yield
    finally:
        _LONG_DRAWS = before


def time_steps(min_value: int = 1, max_value: int = 6) -> SearchStrategy[int]:
    """Sequence lengths in ``[min_value, max_value]``; under :func:`long_draws`, half the time past them up to the
    longest of ``LONG_SEQUENCE_STEPS``."""
    if not _LONG_DRAWS:
        return st.integers(min_value, max_value)
    return st.integers(min_value, max_value) | st.integers(max(min_value, max_value + 1), max(LONG_SEQUENCE_STEPS))


def reduction_lengths(min_value: int, max_value: int) -> SearchStrategy[int]:
    """Reduction lengths (K) in ``[min_value, max_value]``; under :func:`long_draws`, half the time past 256 up to the
    widest of ``WIDE_K`` and a word more."""
    if not _LONG_DRAWS:
        return st.integers(min_value, max_value)
    return st.integers(min_value, max_value) | st.integers(max(min_value, 257), max(WIDE_K) + 64)


def agree_with(rows: torch.Tensor, weight_row: torch.Tensor) -> torch.Tensor:
    """``rows`` (``(..., K)``) with the first row's signs made those of ``weight_row`` (magnitudes kept, at least 0.25;
    0 where the weight is 0, which the same zero_value binarizes alike): a drawn sign dot product of exactly +K."""
    rows = rows.clone()
    first = rows.reshape(-1, rows.shape[-1])[0]
    first.copy_(torch.where(weight_row != 0, weight_row.sign() * first.abs().clamp(min=0.25), 0.0))
    return rows


def signs_agreeing_with(weight_row: torch.Tensor, magnitudes: torch.Tensor) -> torch.Tensor:
    """Two rows of ``magnitudes.abs()`` (clamped to at least 0.25): the first with the signs of ``weight_row`` (no zero
    in it), the second with the opposite signs, so that their sign dot products with the row are +K and -K, the
    extremes of a binary layer's accumulator (random signs keep it near sqrt(K))."""
    if not bool((weight_row != 0).all()):
        raise ValueError("a zero weight has no sign to agree with")
    agree = weight_row.sign() * magnitudes.abs().clamp(min=0.25)
    return torch.stack([agree, -agree])


@st.composite
def conv2d_configs(draw, *, max_channels: int = 3, max_side: int = 6, max_kernel: int = 3) -> dict:
    """A valid conv2d configuration (the output has at least one pixel)."""
    groups = draw(st.sampled_from([1, 1, 2]))
    in_channels = groups * draw(st.integers(1, max_channels))
    out_channels = groups * draw(st.integers(1, max_channels))
    kernel = draw(st.integers(1, max_kernel))
    stride = draw(st.integers(1, 2))
    padding = draw(st.integers(0, 1))
    dilation = draw(st.integers(1, 2))
    reach = dilation * (kernel - 1) + 1
    side = draw(st.integers(max(1, reach - 2 * padding), max(max_side, reach)))
    return dict(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel, stride=stride,
                padding=padding, dilation=dilation, groups=groups, height=side, width=side)


@contextlib.contextmanager
def stable_draws() -> Iterator[None]:
    """Draw as if no project module were loaded: the same examples on every commit and in every process.

    Hypothesis mixes literals it finds in the source of every loaded non-library module (its "local constants")
    into a few percent of its draws, derandomized or not. Here that made an edit anywhere in this repository, or
    which modules a process happened to import, change the examples a cell or a benchmark case is drawn from: an
    unrelated tolerance edit moved snntorch.RLeaky's benchmark example from reset "none" to "zero" (ratio 1.06 ->
    1.55), and a cell whose outcome depends on its example (a spike right at threshold) could flip against the
    checked-in expectations. The pool is hypothesis-internal: where it is not found, draws are left as they are.
    """
    try:
        from hypothesis.internal.conjecture import providers

        original = providers._get_local_constants
        empty = type(providers._local_constants)(integers=providers.SortedSet(),
                                                 floats=providers.SortedSet(key=providers.float_to_int),
                                                 bytes=providers.SortedSet(), strings=providers.SortedSet())
    except (ImportError, AttributeError, TypeError):
        yield
        return
    providers.CONSTANTS_CACHE.cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()
