"""HQQ's min/max weight rule (``halfquadratic.minmax_weight_linear``) against closed forms written here with Python
numbers (``round`` is half to even, ``struct`` rounds to float32, so every step is the float32 operation the spec
states), and the grid its optimized subject draws from."""

from __future__ import annotations

import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import registry
from qsnn_reference import halfquadratic

FAST = settings(max_examples=25, deadline=None)
WEIGHTS = st.floats(-4.0, 4.0, allow_nan=False, width=32)
NBITS = st.sampled_from([2, 4, 8])


def f32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


def group_rule(group: list[float], nbits: int, round_zero: bool) -> tuple[list[int], float, float]:
    """One group: ``inv = (1 / (max - min)) * (2**nbits - 1)`` (the reciprocal rounded first; 1 for a range of at
    most 1e-4, at most 2e4), ``zero = -min * inv`` (rounded where ``round_zero``), ``q = clamp(round((w * inv) +
    zero))``, each step rounded to float32; returns ``(codes, scale = 1 / inv, zero)``."""
    top = 2 ** nbits - 1
    span = f32(max(group) - min(group))
    inv = 1.0 if abs(span) <= f32(1e-4) else f32(f32(1.0 / span) * top)
    inv = min(inv, 2e4)
    zero = f32(-min(group) * inv)
    zero = float(round(zero)) if round_zero else zero
    codes = [min(max(round(f32(f32(w * inv) + zero)), 0), top) for w in group]
    return codes, f32(1.0 / inv), zero


def dequantized(group: list[float], nbits: int, round_zero: bool) -> list[float]:
    codes, scale, zero = group_rule(group, nbits, round_zero)
    return [f32(f32(q - zero) * scale) for q in codes]


@FAST
@given(st.lists(st.lists(WEIGHTS, min_size=8, max_size=8), min_size=1, max_size=3), NBITS, st.booleans())
def test_each_group_of_the_weight_follows_the_minmax_rule(rows, nbits, round_zero):
    weight = torch.tensor(rows)
    codes, scale, zero = halfquadratic.quantize_weight(weight, nbits=nbits, group_size=4, round_zero=round_zero)
    groups = [row[start:start + 4] for row in rows for start in (0, 4)]
    expected = [group_rule(group, nbits, round_zero) for group in groups]
    assert codes.tolist() == [e[0] for e in expected]
    assert scale.flatten().tolist() == [e[1] for e in expected]
    assert zero.flatten().tolist() == [e[2] for e in expected]
    back = halfquadratic.dequantize_weight(codes, scale, zero, shape=tuple(weight.shape))
    assert back.flatten().tolist() == [v for group in groups for v in dequantized(group, nbits, round_zero)]


def test_ties_round_half_to_even():
    """A range of 15 makes inv_scale 1: the .5 values are ties, rounded to the even code."""
    codes, scale, zero = halfquadratic.quantize_weight(torch.tensor([[0.0, 15.0, 0.5, 1.5, 2.5, 14.5, 3.0, 7.5]]),
                                                       nbits=4, group_size=8, round_zero=True)
    assert codes.tolist() == [[0, 15, 0, 2, 2, 14, 3, 8]]
    assert (scale.item(), zero.item()) == (1.0, 0.0)


def test_the_zero_is_rounded_only_where_asked():
    """min -1.2, max 1.8: inv_scale 5, zero -(-1.2) * 5 = 6.0000...; rounded it is 6 exactly."""
    weight = torch.tensor([[-1.2, 1.8, 0.0, 0.4]])
    _, _, rounded = halfquadratic.quantize_weight(weight, nbits=4, group_size=4, round_zero=True)
    _, _, kept = halfquadratic.quantize_weight(weight, nbits=4, group_size=4, round_zero=False)
    assert rounded.item() == 6.0
    assert kept.item() == f32(f32(1.2) * f32(f32(1 / f32(f32(1.8) - f32(-1.2))) * 15))


def test_a_range_of_at_most_1e_4_gets_inv_scale_1_and_a_clamp_at_2e4():
    constant = torch.tensor([[0.75, 0.75, 0.75, 0.75]])
    inv, zero = halfquadratic.minmax_qparams(constant, nbits=4, group_size=4, round_zero=False)
    assert (inv.item(), zero.item()) == (1.0, -0.75)
    narrow = torch.tensor([[0.1, 0.1005, 0.1002, 0.1]])
    inv, _ = halfquadratic.minmax_qparams(narrow, nbits=8, group_size=4, round_zero=False)
    assert inv.item() == 2e4


def test_groups_run_along_the_input_dim():
    """Changing one weight moves the scale of its own group only (consecutive elements of its row)."""
    weight = torch.arange(16, dtype=torch.float32).reshape(2, 8) / 4
    _, before, _ = halfquadratic.quantize_weight(weight, nbits=4, group_size=4, round_zero=True)
    weight[1, 5] = 40.0
    _, after, _ = halfquadratic.quantize_weight(weight, nbits=4, group_size=4, round_zero=True)
    assert (before != after).flatten().tolist() == [False, False, False, True]


def test_a_group_size_that_does_not_divide_in_features_is_refused():
    with pytest.raises(ValueError, match="must divide in_features"):
        halfquadratic.quantize_weight(torch.zeros(2, 6), nbits=4, group_size=4, round_zero=True)


@FAST
@given(st.integers(0, 2**16), NBITS)
def test_linear_is_x_times_the_dequantized_weight_and_its_gradient_reaches_x_and_bias_only(seed, nbits):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(2, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(2, generator=gen, dtype=torch.float64, requires_grad=True)
    y = halfquadratic.minmax_weight_linear(x, weight, bias, nbits=nbits, group_size=4, round_zero=False)
    codes, scale, zero = halfquadratic.quantize_weight(weight, nbits=nbits, group_size=4, round_zero=False)
    w = halfquadratic.dequantize_weight(codes, scale, zero, shape=(2, 8)).double()
    assert torch.equal(y, x.detach() @ w.T + bias.detach())
    cot = torch.randn(3, 2, generator=gen, dtype=torch.float64)
    dx, dweight, dbias = torch.autograd.grad((y * cot).sum(), (x, weight, bias), allow_unused=True)
    assert torch.equal(dx, cot @ w)
    assert dweight is None
    assert torch.equal(dbias, cot.sum(0))


def test_weights_on_the_grid_are_kept_exactly():
    """The examples of a subject whose optimizer runs (``on_grid``): the min/max rule gives every weight back, so the
    optimizer's starting point has no error left to lower."""
    spec = registry.specs()["halfquadratic.minmax_weight_linear"]
    fixed = dict(nbits=4, group_size=8, round_zero=True, on_grid=True)

    @FAST
    @given(spec.examples(**fixed))
    def kept(example):
        weight = example.params["weight"].to(torch.float32)
        codes, scale, zero = halfquadratic.quantize_weight(weight, nbits=4, group_size=8, round_zero=True)
        assert torch.equal(halfquadratic.dequantize_weight(codes, scale, zero, shape=tuple(weight.shape)), weight)

    kept()
    for example in spec.edges(**fixed):
        weight = example.params["weight"].to(torch.float32)
        codes, scale, zero = halfquadratic.quantize_weight(weight, nbits=4, group_size=8, round_zero=True)
        assert torch.equal(halfquadratic.dequantize_weight(codes, scale, zero, shape=tuple(weight.shape)), weight)


def test_the_product_and_the_sum_are_rounded_separately():
    """min -0.3, max 2.7: inv_scale about 5, zero about 1.5; 0.20000003 * inv_scale rounds to float32 before the zero
    is added, and the sum lands below 2.5 (code 2), where one rounding of the exact sum gives 3 (HQQ's code is 2)."""
    weight = torch.tensor([[-0.3, 2.7, 0.20000003278255463, 0.0]])
    codes, _, _ = halfquadratic.quantize_weight(weight, nbits=4, group_size=4, round_zero=False)
    assert codes.tolist() == [[0, 15, 2, 2]]
