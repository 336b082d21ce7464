"""The fp8 spec against closed forms written here: every finite value of a format decoded from its bit layout with
Python numbers (sign, exponent with bias ``2**(e-1) - 1``, mantissa, subnormals), rounding to the nearest of them with
ties to the even code, float32 rounding through ``struct``. Nothing here casts to fp8 through torch except the spec."""

from __future__ import annotations

import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qsnn_reference import fp8

FAST = settings(max_examples=25, deadline=None)

#: (exponent bits, mantissa bits, the top exponent field holds finite values) of each format: e4m3fn keeps finite
#: values in its top binade (only S.1111.111 is NaN), e5m2 is IEEE-like (top binade inf / NaN).
LAYOUTS = {"e4m3fn": (4, 3, True), "e5m2": (5, 2, False)}


def f32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


def finite_magnitudes(fmt: str) -> list[float]:
    """Every finite non-negative value of the format, in code order (code ``i`` is the ``i``-th: the encoding is
    monotone), decoded from the bits."""
    exp_bits, man_bits, top_binade_finite = LAYOUTS[fmt]
    bias = 2 ** (exp_bits - 1) - 1
    values = []
    for code in range(2 ** (exp_bits + man_bits)):
        e, m = code >> man_bits, code & (2 ** man_bits - 1)
        if e == 2 ** exp_bits - 1 and (not top_binade_finite or m == 2 ** man_bits - 1):
            break  # inf / NaN from here on
        values.append(m * 2.0 ** (1 - bias - man_bits) if e == 0 else (1 + m / 2 ** man_bits) * 2.0 ** (e - bias))
    return values


def round_to_format(v: float, fmt: str) -> float:
    """Round to nearest, ties to the even code; magnitudes past the largest finite value saturate to it (the spec
    clamps before its cast)."""
    table = finite_magnitudes(fmt)
    a = min(abs(v), table[-1])
    best = min(range(len(table)), key=lambda i: (abs(table[i] - a), i % 2))
    return table[best] if v >= 0 else -table[best]


def midpoints(fmt: str) -> list[float]:
    """The exact midpoint between every two neighbouring finite values (the ties)."""
    table = finite_magnitudes(fmt)
    return [(lo + hi) / 2 for lo, hi in zip(table, table[1:])]


def test_the_decoded_tables_have_the_formats_constants():
    e4m3, e5m2 = finite_magnitudes("e4m3fn"), finite_magnitudes("e5m2")
    assert (e4m3[1], e4m3[8], e4m3[-1], len(e4m3)) == (2.0 ** -9, 2.0 ** -6, 448.0, 127)
    assert (e5m2[1], e5m2[4], e5m2[-1], len(e5m2)) == (2.0 ** -16, 2.0 ** -14, 57344.0, 124)
    assert fp8.max_finite("e4m3fn") == 448.0 and fp8.max_finite("e5m2") == 57344.0


@pytest.mark.parametrize("fmt", sorted(fp8.FORMATS))
def test_every_finite_value_is_its_own_code(fmt):
    table = finite_magnitudes(fmt)
    xs = torch.tensor(table + [-v for v in table], dtype=torch.float64)
    got = fp8.quantize(xs, scale=torch.tensor(1.0), fmt=fmt)
    assert got.dtype == fp8.FORMATS[fmt]
    assert got.to(torch.float64).tolist() == xs.tolist()


@pytest.mark.parametrize("fmt", sorted(fp8.FORMATS))
def test_every_tie_rounds_to_the_even_code(fmt):
    """Including the ties between subnormals, from the largest subnormal to the smallest normal, and from each
    binade's largest value to the next binade's first (e4m3fn: 15.5 -> 16, 248 -> 256; 232 -> 224 stays)."""
    ties = midpoints(fmt)
    xs = torch.tensor(ties + [-v for v in ties], dtype=torch.float64)
    got = fp8.quantize(xs, scale=torch.tensor(1.0), fmt=fmt).to(torch.float64).tolist()
    assert got == [round_to_format(v, fmt) for v in xs.tolist()]
    if fmt == "e4m3fn":
        assert [round_to_format(v, fmt) for v in (15.5, 248.0, 232.0, 1.5 * 2.0 ** -9, 7.5 * 2.0 ** -9)] == [
            16.0, 256.0, 224.0, 2.0 ** -8, 2.0 ** -6]


@pytest.mark.parametrize("fmt", sorted(fp8.FORMATS))
def test_the_cast_saturates_instead_of_overflowing(fmt):
    """Past the largest finite value (and past the tie above it, where an unclamped cast gives NaN or inf) the code
    is +-max_finite."""
    top = fp8.max_finite(fmt)
    xs = torch.tensor([top * 1.01, top * 1.2, 1e30, -top * 1.2, -1e30], dtype=torch.float64)
    assert fp8.quantize(xs, scale=torch.tensor(1.0), fmt=fmt).to(torch.float64).tolist() == [top, top, top, -top, -top]


@FAST
@given(st.sampled_from(sorted(fp8.FORMATS)), st.lists(st.floats(-600.0, 600.0, width=32), min_size=1, max_size=8),
       st.floats(2.0 ** -10, 64.0, width=32))
def test_quantize_divides_in_float32_then_rounds(fmt, values, scale):
    """``q = round(clamp(float32(x / scale)))`` against the decoded table."""
    got = fp8.quantize(torch.tensor(values, dtype=torch.float64), scale=torch.tensor(scale), fmt=fmt)
    assert got.to(torch.float64).tolist() == [round_to_format(f32(v / scale), fmt) for v in values]


@FAST
@given(st.sampled_from(sorted(fp8.FORMATS)),
       st.lists(st.lists(st.floats(-1e4, 1e4, width=32), min_size=3, max_size=3), min_size=1, max_size=3))
def test_choose_scale_is_amax_over_max_finite_rounded_once(fmt, rows):
    top = fp8.max_finite(fmt)
    per_row = fp8.choose_scale(torch.tensor(rows, dtype=torch.float64), fmt=fmt, per_row=True)
    expected = [[max(f32(max(abs(v) for v in row) / top), fp8.SCALE_EPS)] for row in rows]
    assert per_row.dtype == torch.float32 and per_row.tolist() == expected
    per_tensor = fp8.choose_scale(torch.tensor(rows, dtype=torch.float64), fmt=fmt, per_row=False)
    assert per_tensor.shape == () and per_tensor.item() == max(f32(max(abs(v) for r in rows for v in r) / top),
                                                              fp8.SCALE_EPS)


def test_amax_at_max_finite_gives_scale_one_and_the_row_exactly():
    row = [448.0, -448.0, 15.5, 1.0]
    scale = fp8.choose_scale(torch.tensor([row]), fmt="e4m3fn", per_row=True)
    assert scale.tolist() == [[1.0]]
    codes = fp8.quantize(torch.tensor([row]), scale=scale, fmt="e4m3fn")
    assert codes.to(torch.float64).tolist() == [[448.0, -448.0, 16.0, 1.0]]
    assert fp8.choose_scale(torch.tensor([row]), fmt="e5m2", per_row=True).tolist() == [[2.0 ** -7]]


def test_a_zero_row_has_codes_zero_and_nan_under_torchaos_unclamped_scale():
    """With the spec's lower bound a zero row has scale ``eps`` and codes 0; with ``eps=0`` (torchao's
    ``_choose_scale_float8``) its scale is 0 and its codes ``0 / 0 = NaN``."""
    w = torch.tensor([[0.0, 0.0, -0.0], [1.0, -2.0, 0.5]], dtype=torch.float64)
    scale = fp8.choose_scale(w, fmt="e4m3fn", per_row=True)
    assert scale[0].item() == fp8.SCALE_EPS
    assert fp8.dequantize(fp8.quantize(w, scale=scale, fmt="e4m3fn"), scale=scale)[0].tolist() == [0.0, 0.0, 0.0]
    unclamped = fp8.choose_scale(w, fmt="e4m3fn", per_row=True, eps=0.0)
    assert unclamped[0].item() == 0.0
    assert torch.isnan(fp8.quantize(w, scale=unclamped, fmt="e4m3fn")[0].to(torch.float32)).all()


def test_dequantize_is_the_float32_product():
    codes = torch.tensor([448.0, -0.5, 2.0 ** -9, 0.0]).to(torch.float8_e4m3fn)
    scale = torch.tensor(0.1)
    got = fp8.dequantize(codes, scale=scale)
    assert got.dtype == torch.float32
    assert got.tolist() == [f32(v * f32(0.1)) for v in (448.0, -0.5, 2.0 ** -9, 0.0)]


@FAST
@given(st.sampled_from(sorted(fp8.FORMATS)), st.booleans(), st.integers(0, 2 ** 16))
def test_weight_only_linear_is_x_times_the_dequantized_weight(fmt, per_row, seed):
    gen = torch.Generator().manual_seed(seed)
    x, w, b = (torch.randn(shape, generator=gen, dtype=torch.float64) for shape in ((2, 3), (2, 3), (2,)))
    # rows of very different ranges, float32 values (the spec reads the weight as float32)
    w = (w * torch.tensor([[100.0], [0.01]], dtype=torch.float64)).to(torch.float32).to(torch.float64)
    y = fp8.weight_only_linear(x, w, b, fmt=fmt, per_row=per_row)
    top = fp8.max_finite(fmt)
    amax = [max(abs(v) for v in row) for row in w.tolist()]
    scales = [max(f32(a / top), fp8.SCALE_EPS) for a in amax] if per_row else [max(f32(max(amax) / top),
                                                                                   fp8.SCALE_EPS)] * 2
    deq = [[f32(round_to_format(f32(v / s), fmt) * s) for v in row] for row, s in zip(w.tolist(), scales)]
    expected = [[sum(xi * wi for xi, wi in zip(xrow, drow)) + bj for drow, bj in zip(deq, b.tolist())]
                for xrow in x.tolist()]
    assert torch.allclose(y, torch.tensor(expected, dtype=torch.float64), rtol=1e-12, atol=1e-12)


def test_weight_only_linear_gradients_are_the_matmuls_and_none_for_the_weight():
    x = torch.tensor([[1.0, -2.0]], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([[448.0, 15.5], [1.0, 0.0]], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    y = fp8.weight_only_linear(x, w, b)
    gx, gb = torch.autograd.grad(y.sum(), (x, b))
    assert gx.tolist() == [[449.0, 16.0]] and gb.tolist() == [1.0, 1.0]
    assert torch.autograd.grad(y.sum(), w, allow_unused=True)[0] is None
