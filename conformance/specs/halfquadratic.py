"""Spec declaration for HQQ's weight format with its optimizer off (``qsnn_reference/halfquadratic.py``).

A subject whose optimizer runs (HQQ's default) fixes ``on_grid=True`` (drawn only, never a hyperparameter of the
function): every group of its weight then lies on the ``nbits`` grid the min/max rule recovers (its minimum on code
0, its maximum on ``2**nbits - 1``, the zero an integer code, the scale a power of two: every step exact in float32),
where the rule's answer is the optimizer's starting point with nothing left to improve. Off the grid the weights are
standard normal; the edge examples put a group's values exactly on rounding ties (a range of ``2**nbits - 1``:
``inv_scale`` 1), give groups of zero range, of a range under ``1e-4`` and of one whose inverse scale is clamped to
``2e4``, and a weight of 1e4 beside small ones.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.core import strategies as S
from conformance.core.types import Example, Spec
from qsnn_reference import halfquadratic


def _hyper(draw, fixed) -> dict:
    nbits = draw(S.hyper(fixed, "nbits", st.sampled_from([4, 8, 2])))
    return dict(nbits=nbits, group_size=draw(S.hyper(fixed, "group_size", st.sampled_from([8, 16]))),
                round_zero=draw(S.hyper(fixed, "round_zero", st.booleans())))


@st.composite
def _grid_weight(draw, n: int, k: int, *, nbits: int, group_size: int) -> torch.Tensor:
    """``(codes - zero) * scale`` per group: integer codes with 0 and ``2**nbits - 1`` among them, an integer zero in
    the code range, a scale a power of two from 2**-6 to 2 (so that ``max - min``, ``inv_scale`` and every ``w *
    inv_scale`` are exact in float32: off powers of two, an optimizer that averages them moves the zero by an ulp)."""
    top = 2 ** nbits - 1
    rows = []
    for _ in range(n * k // group_size):
        codes = draw(st.lists(st.integers(0, top), min_size=group_size - 2, max_size=group_size - 2))
        codes = draw(st.permutations([0, top] + codes))
        zero = draw(st.integers(0, top))
        scale = 2.0 ** draw(st.integers(-6, 1))
        rows.append([(code - zero) * scale for code in codes])
    return torch.tensor(rows, dtype=torch.float64).reshape(n, k)


def minmax_weight_linear_examples(**fixed):
    """x (B, K) with B of 1..2, K one or two groups (``in_features``: a subject may fix it; drawn only), N of 1..3;
    weights standard normal, or on the grid (``on_grid``); in half the examples some inputs far out (to 1e3: the sums
    stay inside float16's range)."""
    S.check_fixed(fixed, ("nbits", "group_size", "round_zero", "on_grid", "in_features"),
                  "halfquadratic.minmax_weight_linear")

    @st.composite
    def draw_example(draw):
        hyper = _hyper(draw, fixed)
        groups = st.integers(1, 2).map(lambda count: hyper["group_size"] * count)
        k, n = draw(S.hyper(fixed, "in_features", groups)), draw(st.integers(1, 3))
        gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
        x = draw(S.magnified(torch.randn((draw(st.integers(1, 2)), k), generator=gen, dtype=torch.float64) * 3,
                             low=64.0, high=1e3))
        if draw(S.hyper(fixed, "on_grid", st.just(False))):
            weight = draw(_grid_weight(n, k, nbits=hyper["nbits"], group_size=hyper["group_size"]))
        else:
            weight = torch.randn((n, k), generator=gen, dtype=torch.float64)
        params = {"weight": weight, "bias": torch.randn((n,), generator=gen, dtype=torch.float64)}
        return Example(x, params, hyper)

    return draw_example()


def _tiled(values: list[float], size: int) -> list[float]:
    return (values * (size // len(values) + 1))[:size]


def _off_grid_groups(top: int) -> list[list[float]]:
    """Six groups (before tiling): exact ties with zero 0 and with zero 8 (a range of ``top``: ``inv_scale`` 1),
    one constant (range 0), one of range 5e-5 (``inv_scale`` 1), one of range 5e-4 (``inv_scale`` clamped to 2e4)
    and 1e4 beside small values."""
    return [[0.0, float(top), 0.5, 1.5, 2.5, top - 0.5, 3.0, 1.0],
            [-8.0, top - 8.0, -7.5, -0.5, 0.5, 2.5, -2.5, 0.0],
            [0.75] * 8,
            [0.3, 0.30005, 0.30001, 0.30002, 0.3, 0.30004, 0.30003, 0.30005],
            [0.1, 0.1005, 0.1001, 0.1002, 0.1003, 0.1004, 0.10025, 0.1],
            [1e4, -1.0, 0.5, 0.0, 2.0, -3.5, 0.25, 1.0]]


def _on_grid_groups(top: int) -> list[list[float]]:
    """Six groups on the grid (before tiling: every one holds codes 0 and ``top``): zero 0, 1, ``top // 2`` and
    ``top``, scales 1, 0.25, 4 and 1024."""
    codes = [0, top, top // 2, 1, top - 1, 2, top // 3, 0]
    return [[(code - zero) * scale for code in codes]
            for zero, scale in ((0, 1.0), (top // 2, 0.25), (top, 4.0), (1, 1024.0), (top // 2, 1.0), (0, 0.25))]


def minmax_weight_linear_edges(**fixed) -> list[Example]:
    """Three output channels of two groups each (:func:`_off_grid_groups`, or :func:`_on_grid_groups` for a subject
    fixing ``on_grid``), each pattern tiled over its group; inputs of about 1 and one of 1e3 (meeting the 1e4)."""
    hyper = dict(nbits=S.edge_hyper(fixed, "nbits", 4), group_size=S.edge_hyper(fixed, "group_size", 8),
                 round_zero=S.edge_hyper(fixed, "round_zero", True))
    top, size = 2 ** hyper["nbits"] - 1, hyper["group_size"]
    found = _on_grid_groups(top) if S.edge_hyper(fixed, "on_grid", False) else _off_grid_groups(top)
    rows = [_tiled(found[i], size) + _tiled(found[i + 1], size) for i in range(0, len(found), 2)]
    inputs = _tiled([0.5, -1.0, 0.25, 2.0, -0.75, 1.5, -2.0, 1.0], 2 * size)
    large = [1e3, 0.5] + [0.0] * (2 * size - 2)
    params = {"weight": torch.tensor(rows, dtype=torch.float64),
              "bias": torch.tensor([0.5, -0.25, 1.0], dtype=torch.float64)}
    return [Example(torch.tensor([inputs, large], dtype=torch.float64), params, hyper)]


SPECS = (
    Spec(id="halfquadratic.minmax_weight_linear", fn=halfquadratic.minmax_weight_linear,
         examples=minmax_weight_linear_examples, edges=minmax_weight_linear_edges,
         doc="a linear layer whose float weight HQQ quantizes by the range of each group of group_size along the "
             "input dim, with its optimizer off: inv_scale = (2^nbits - 1) / (max - min) in float32 (1 below a "
             "range of 1e-4, at most 2e4), zero = -min * inv_scale (rounded where round_zero), codes "
             "clamp(round(w * inv_scale + zero)), x @ ((codes - zero) / inv_scale).T + bias; the weight has no "
             "gradient. A subject whose optimizer runs draws weights on the grid (on_grid)."),
)
