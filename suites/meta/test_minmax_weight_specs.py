"""The min/max weight quantization spec (``affine.minmax_weight_linear``, optimum-quanto's rule) against closed forms
written here with Python numbers (``round`` is half to even, ``struct`` rounds to float32, so every step is the
float32 operation the spec states)."""

from __future__ import annotations

import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qsnn_reference import affine

FAST = settings(max_examples=25, deadline=None)
WEIGHTS = st.floats(-4.0, 4.0, allow_nan=False, width=32)


def f32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


def symmetric_row(row: list[float], bits: int) -> list[float]:
    """One output channel: ``scale = max|w| / (2**(bits-1) - 1)``, ``q = clamp(round(w / scale))``, ``scale * q``."""
    top = 2 ** (bits - 1) - 1
    scale = f32(max(abs(w) for w in row) / top)
    if scale == 0:
        return [0.0] * len(row)
    return [f32(scale * min(max(round(f32(w / scale)), -top - 1), top)) for w in row]


def asymmetric_row(row: list[float], bits: int) -> list[float]:
    """One row or group: ``scale = (max - min) / (2**bits - 1)``, ``shift = -min``, ``q = clamp(round((w + shift) /
    scale), 0, 2**bits - 1)``, ``scale * q - shift``."""
    low, high = min(row), max(row)
    scale, shift = f32(f32(high - low) / (2 ** bits - 1)), -low
    if scale == 0:
        return list(row)
    codes = [min(max(round(f32(f32(w + shift) / scale)), 0), 2 ** bits - 1) for w in row]
    return [f32(f32(scale * q) - shift) for q in codes]


@FAST
@given(st.lists(st.lists(WEIGHTS, min_size=6, max_size=6), min_size=1, max_size=3))
def test_symmetric_int8_per_output_channel(rows):
    got = affine.minmax_fake_quantize_weight(torch.tensor(rows), bits=8, symmetric=True)
    assert got.tolist() == [symmetric_row(row, 8) for row in rows]


@FAST
@given(st.lists(st.lists(WEIGHTS, min_size=8, max_size=8), min_size=1, max_size=3), st.sampled_from([None, 2, 4]),
       st.sampled_from([2, 4, 8]))
def test_asymmetric_per_channel_and_per_group(rows, group_size, bits):
    got = affine.minmax_fake_quantize_weight(torch.tensor(rows), bits=bits, symmetric=False, group_size=group_size)
    width = group_size or 8
    expected = [[v for start in range(0, 8, width) for v in asymmetric_row(row[start:start + width], bits)]
                for row in rows]
    assert got.tolist() == expected


def test_ties_round_half_to_even():
    """Scale 1 exactly (max |w| = 127; min 0 and max 15): the k + 0.5 weights are ties, rounded to the even code."""
    row = [127.0, 0.5, 1.5, 2.5, -0.5, -1.5, 126.5, 0.0]
    got = affine.minmax_fake_quantize_weight(torch.tensor([row]), bits=8, symmetric=True)
    assert got.tolist() == [[127.0, 0.0, 2.0, 2.0, -0.0, -2.0, 126.0, 0.0]]
    row = [0.0, 15.0, 0.5, 1.5, 2.5, 14.5, 13.5, 3.0]
    got = affine.minmax_fake_quantize_weight(torch.tensor([row]), bits=4, symmetric=False)
    assert got.tolist() == [[0.0, 15.0, 0.0, 2.0, 2.0, 14.0, 14.0, 3.0]]


def test_division_not_multiplication_by_the_inverse():
    """w / scale and w * (1 / scale) round differently for some float32 values: the spec divides, as quanto does
    (scale 3 / 127; -2.7992127 / scale lies a hair past -118.5, times the float32 inverse a hair short of it)."""
    row = [3.0, -2.799212694168091]
    scale = f32(3.0 / 127)
    assert round(f32(row[1] / scale)) == -119 and round(f32(row[1] * f32(1.0 / scale))) == -118
    got = affine.minmax_fake_quantize_weight(torch.tensor([row]), bits=8, symmetric=True)
    assert got.tolist() == [[f32(127 * scale), f32(-119 * scale)]]


def test_a_row_with_no_range_is_kept_exactly():
    rows = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.75, 0.75, 0.75, 0.75], [-2.0, -2.0, -2.0, -2.0]])
    assert torch.equal(affine.minmax_fake_quantize_weight(rows, bits=4, symmetric=False), rows)
    assert affine.minmax_fake_quantize_weight(rows[:1], bits=8, symmetric=True).tolist() == [[0.0] * 4]


def test_linear_forward_and_straight_through_gradients():
    torch.manual_seed(1)
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(2, 8, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(2, dtype=torch.float64, requires_grad=True)
    y = affine.minmax_weight_linear(x, weight, bias, bits=4, symmetric=False, group_size=4)
    quantized = affine.minmax_fake_quantize_weight(weight, bits=4, symmetric=False, group_size=4).double()
    assert torch.allclose(y, x @ quantized.T + bias, rtol=1e-12, atol=1e-12)
    cotangent = torch.randn(3, 2, dtype=torch.float64)
    dx, dweight, dbias = torch.autograd.grad((y * cotangent).sum(), (x, weight, bias))
    assert torch.allclose(dx, cotangent @ quantized, rtol=1e-12, atol=1e-12)
    assert torch.equal(dweight, cotangent.T @ x.detach())  # straight through the quantization
    assert torch.equal(dbias, cotangent.sum(0))


@pytest.mark.parametrize("options, message", [
    (dict(bits=8, symmetric=True, group_size=4), "group_size must be None"),
    (dict(bits=4, symmetric=False, group_size=3), "must divide"),
    (dict(bits=1, symmetric=False), "bits"),
])
def test_invalid_settings_raise(options, message):
    with pytest.raises(ValueError, match=message):
        affine.minmax_fake_quantize_weight(torch.zeros(2, 8), **options)
