"""Spec declaration for the weight-only fp8 linear layer (``qsnn_reference/fp8.py``).

Examples are :func:`conformance.specs.affine.linear_inputs` (a float weight, bias and input; the codes are decided by
the weight alone, with no margin: the spec rounds exactly as the float32 arithmetic it states). The edge examples
are weight rows whose largest magnitude is 448 (e4m3fn's largest finite value: the scale is exactly 1, and exactly
2**-7 for e5m2), so their values are the codes themselves: ties that round to the next binade and to even, the
subnormals and their ties, and a row of zeros (whose scale is ``eps``, or 0 under torchao's rule).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.core import strategies as S
from conformance.core.types import Example, Spec
from qsnn_reference import fp8

from .affine import linear_inputs
from .quant import _edge_rows

_SUBNORMAL = 2.0 ** -9  # e4m3fn's smallest subnormal


def weight_only_examples(**fixed):
    """A batch of one or two: :func:`linear_inputs`; e4m3fn or e5m2, per row or per tensor."""
    S.check_fixed(fixed, ("fmt", "per_row", "in_features"), "fp8.weight_only_linear")

    @st.composite
    def draw_example(draw):
        x, params = draw(linear_inputs(fixed, batch=draw(st.integers(1, 2))))
        hyper = dict(fmt=draw(S.hyper(fixed, "fmt", st.sampled_from(tuple(fp8.FORMATS)))),
                     per_row=draw(S.hyper(fixed, "per_row", st.booleans())))
        return Example(x, params, hyper)

    return draw_example()


def weight_only_edges(**fixed) -> list[Example]:
    """Rows of largest magnitude 448: 15.5 and 248 (ties whose even neighbour is the next binade's 16 and 256), 232
    (a tie that rounds down to even 224), +-448 itself; the subnormal ties 0.5, 1.5, 2.5 and 7.5 smallest subnormals
    (0, 2, 2 of them and the smallest normal 2**-6) and 1e-4 (to 0); a row of zeros; inputs of 1e4 beside small
    ones. Per row, per tensor (the zero row then shares the scale 1), e4m3fn and e5m2."""
    rows = [[448.0, 15.5, 232.0, 248.0, -448.0, 0.5, -15.5, 1.0], [0.0] * 8,
            [448.0, 1.5 * _SUBNORMAL, 0.5 * _SUBNORMAL, 2.5 * _SUBNORMAL, 2.0 ** -6, 7.5 * _SUBNORMAL,
             -1.5 * _SUBNORMAL, 1e-4]]
    x = _edge_rows([1.0, -2.0, 0.5, 0.25, 1e4, 3.0, -0.75, 2.0], {}, batch=2)
    params = {"weight": torch.tensor(rows, dtype=torch.float64),
              "bias": torch.tensor([0.5, -0.25, 1.0], dtype=torch.float64)}
    settings = {(S.edge_hyper(fixed, "fmt", fmt), S.edge_hyper(fixed, "per_row", per_row))
                for fmt in fp8.FORMATS for per_row in (True, False)}  # those a subject's fixed values leave
    return [Example(x, params, dict(fmt=fmt, per_row=per_row)) for fmt, per_row in sorted(settings)]


SPECS = (
    Spec(id="fp8.weight_only_linear", fn=fp8.weight_only_linear, examples=weight_only_examples,
         edges=weight_only_edges,
         doc="a linear layer with its weight held in fp8 (torchao's Float8WeightOnlyConfig: e4m3fn, per row): scale "
             "max(float32(amax / max_finite), eps), codes fp8(clamp(float32(w / scale), +-max_finite)) half to "
             "even, y = x @ (codes * scale).T + bias; gradients of x and bias through the matmul, none for the "
             "weight."),
)
