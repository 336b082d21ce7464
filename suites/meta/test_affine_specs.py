"""The affine quantization specs against closed forms written here with Python numbers (``round`` is half to even,
``struct`` rounds to float32), and against torch's own CPU kernels where torch defines the op (fake quantization,
the learnable fake quantizer's gradients, quantize_per_tensor, the min/max observers)."""

from __future__ import annotations

import math
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qsnn_reference import affine

FAST = settings(max_examples=25, deadline=None)
SCALES = st.sampled_from([0.25, 0.5, 1.0, 0.1, 0.3, 0.013]) | st.floats(0.01, 4.0)
RANGES = st.sampled_from(sorted(affine.INTEGER_RANGES.values()))


def f32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


def code(v: float, scale: float, zero_point: int, qmin: int, qmax: int, *, first: bool = False) -> int:
    """One element's code, computed as torch's kernel does in float32: ``v * (1.0f / scale)``."""
    inv = f32(1.0 / f32(scale))
    q = round(f32(v * inv + zero_point)) if first else round(f32(v * inv)) + zero_point  # fused: one rounding
    return min(max(q, qmin), qmax)


def values(draw_scale: float, qmin: int, qmax: int, zero_point: int) -> list[float]:
    """Every level and every exact .5 tie from two below qmin to two above qmax, 0, -0 and |x| = 1e4."""
    steps = [k + half for k in range(qmin - zero_point - 2, qmax - zero_point + 3) for half in (0.0, 0.5)]
    return [f32(s * draw_scale) for s in steps] + [0.0, -0.0, 1e4, -1e4]


@st.composite
def settings_(draw):
    qmin, qmax = draw(RANGES)
    return draw(SCALES), draw(st.integers(qmin, qmax)), qmin, qmax


# ----------------------------------------------------------------------------------------------- quantize

@FAST
@given(settings_(), st.booleans())
def test_quantize_per_tensor_rounds_ties_to_even_and_clamps(setting, first):
    scale, zero_point, qmin, qmax = setting
    xs = values(scale, qmin, qmax, zero_point)
    got = affine.quantize(torch.tensor(xs), scale=scale, zero_point=zero_point, quant_min=qmin, quant_max=qmax,
                          zero_point_first=first)
    assert got.dtype == torch.int32
    assert got.tolist() == [code(v, scale, zero_point, qmin, qmax, first=first) for v in xs]


def test_quantize_ties_at_half_go_to_even():
    got = affine.quantize(torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5]), scale=1.0, quant_min=-8, quant_max=7)
    assert got.tolist() == [0, 2, 2, 0, -2, -2]


def test_quantize_multiplies_by_the_float32_inverse_scale():
    """-7.2500005 / 0.1 rounds to -72 but -7.2500005 * (1.0f / 0.1f) to -73: torch's kernels multiply."""
    x = torch.tensor([-7.250000476837158])
    assert affine.quantize(x, scale=0.1, quant_min=-128, quant_max=127).item() == -73
    assert torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127).item() == pytest.approx(-7.3)


def test_zero_point_first_matches_quantize_per_tensor():
    """torch.quantize_per_tensor adds the zero point before rounding: 0.5 with zero point 1 is code 2, not 1."""
    x = torch.tensor(values(0.5, 0, 255, 3), dtype=torch.float32)
    expected = torch.quantize_per_tensor(x, 0.5, 3, torch.quint8).int_repr().to(torch.int32)
    got = affine.quantize(x, scale=0.5, zero_point=3, quant_min=0, quant_max=255, zero_point_first=True)
    assert torch.equal(got, expected)
    assert not torch.equal(affine.quantize(x, scale=0.5, zero_point=3, quant_min=0, quant_max=255), expected)


@FAST
@given(st.integers(0, 2), st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=3, max_size=3),
       st.lists(st.integers(-3, 3), min_size=3, max_size=3))
def test_quantize_per_channel_uses_each_channels_scale(axis, scales, zero_points):
    shape = [2, 2, 2]
    shape[axis] = 3
    x = torch.linspace(-6.0, 6.0, math.prod(shape)).reshape(shape) + 0.125
    got = affine.quantize(x, scale=scales, zero_point=zero_points, quant_min=-8, quant_max=7, axis=axis)
    for index in torch.cartesian_prod(*[torch.arange(n) for n in shape]).tolist():
        c = index[axis]
        assert got[tuple(index)].item() == code(x[tuple(index)].item(), scales[c], zero_points[c], -8, 7)


@pytest.mark.parametrize("group_size", [1, 2, 4])
def test_quantize_per_group_runs_along_the_last_dim(group_size):
    x = torch.arange(-8.0, 8.0).reshape(2, 8) * 0.75
    groups = 8 // group_size
    scales = torch.tensor([[0.25 * (1 + (r + g) % 3) for g in range(groups)] for r in range(2)])
    zps = torch.tensor([[(r - g) % 4 for g in range(groups)] for r in range(2)])
    got = affine.quantize(x, scale=scales, zero_point=zps, quant_min=0, quant_max=15, group_size=group_size)
    for r in range(2):
        for k in range(8):
            g = k // group_size
            assert got[r, k].item() == code(x[r, k].item(), scales[r, g].item(), int(zps[r, g]), 0, 15)


def test_dequantize_inverts_the_codes():
    q = torch.tensor([[-8, 0, 7], [1, 2, 3]], dtype=torch.int32)
    got = affine.dequantize(q, scale=[0.5, 0.25], zero_point=[1, -2], axis=0)
    assert got.dtype == torch.float32
    assert got.tolist() == [[-4.5, -0.5, 3.0], [0.75, 1.0, 1.25]]


@pytest.mark.parametrize("bad", [dict(axis=0, group_size=2), dict(group_size=3), dict(scale=[1.0, 2.0]),
                                 dict(quant_min=5, quant_max=4), dict(scale=0.0)])
def test_quantize_rejects_inconsistent_arguments(bad):
    options = dict(scale=1.0, quant_min=-8, quant_max=7) | bad
    with pytest.raises(ValueError):
        affine.quantize(torch.zeros(2, 4), **options)


# ----------------------------------------------------------------------------------------------- fake quantization

def fake_value_and_mask(v, scale, zero_point, qmin, qmax):
    q = round(f32(v * f32(1.0 / f32(scale)))) + zero_point
    return f32((min(max(q, qmin), qmax) - zero_point) * f32(scale)), qmin <= q <= qmax


@FAST
@given(settings_())
def test_fake_quantize_value_and_ste_on_ties_and_clamp_edges(setting):
    scale, zero_point, qmin, qmax = setting
    xs = values(scale, qmin, qmax, zero_point)
    x = torch.tensor(xs, requires_grad=True)
    y = affine.fake_quantize(x, scale=scale, zero_point=zero_point, quant_min=qmin, quant_max=qmax)
    g = torch.linspace(-1.0, 2.0, len(xs))
    (grad,) = torch.autograd.grad(y, x, g)
    expected = [fake_value_and_mask(v, scale, zero_point, qmin, qmax) for v in xs]
    assert y.tolist() == [value for value, _ in expected]
    assert grad.tolist() == [gi if inside else 0.0 for gi, (_, inside) in zip(g.tolist(), expected)]


@FAST
@given(settings_(), st.integers(0, 2**16))
def test_fake_quantize_equals_torchs_kernels_in_float32(setting, seed):
    scale, zero_point, qmin, qmax = setting
    x = torch.cat([torch.tensor(values(scale, qmin, qmax, zero_point)),
                   torch.randn(64, generator=torch.Generator().manual_seed(seed)) * scale * (qmax - qmin) / 2])
    got = affine.fake_quantize(x, scale=scale, zero_point=zero_point, quant_min=qmin, quant_max=qmax)
    assert torch.equal(got, torch.fake_quantize_per_tensor_affine(x, scale, zero_point, qmin, qmax))
    rows = x.reshape(4, -1)
    scales, zps = [scale, 0.5, 0.1, 1.0], [zero_point, qmin, qmax, (qmin + qmax) // 2]
    got = affine.fake_quantize(rows, scale=scales, zero_point=zps, quant_min=qmin, quant_max=qmax, axis=0)
    expected = torch.fake_quantize_per_channel_affine(rows, torch.tensor(scales), torch.tensor(zps, dtype=torch.int32),
                                                      0, qmin, qmax)
    assert torch.equal(got, expected)


def test_the_scale_is_a_float32_number_for_float64_inputs_too():
    """torch's kernels take the scale as a C float: 0.1 is 0.100000001490116... even on a float64 input; per tensor
    the product (q - z) * scale is a float32 one, per channel a double one."""
    x = torch.tensor([[0.3, -1.7, 12.9, 3.0]], dtype=torch.float64)
    got = affine.fake_quantize(x, scale=0.1, zero_point=0, quant_min=-128, quant_max=127)
    assert torch.equal(got, torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127))
    assert got[0, -1].item() == f32(30 * f32(0.1)) == 3.0
    got = affine.fake_quantize(x, scale=[0.1], zero_point=[0], quant_min=-128, quant_max=127, axis=0)
    expected = torch.fake_quantize_per_channel_affine(x, torch.tensor([0.1]), torch.tensor([0], dtype=torch.int32), 0,
                                                      -128, 127)
    assert torch.equal(got, expected)
    assert got[0, -1].item() == 30 * f32(0.1) != 3.0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_inputs_are_scaled_in_float32(dtype):
    """bfloat16/float16 inputs times the float32 inverse scale, in float32 (``scalar_t * float``), as torch."""
    x = (torch.arange(-40, 40, dtype=torch.float32) * 0.37 + 0.01).to(dtype)
    got = affine.fake_quantize(x, scale=0.1, zero_point=3, quant_min=-128, quant_max=127)
    assert got.dtype == dtype
    assert torch.equal(got, torch.fake_quantize_per_tensor_affine(x, 0.1, 3, -128, 127))


def test_fake_quantize_grad_is_the_plain_mask_function():
    x, g = torch.tensor([-100.0, -1.0, 0.0, 1.0, 100.0]), torch.full((5,), 3.0)
    got = affine.fake_quantize_grad(x, g, scale=0.5, zero_point=1, quant_min=-4, quant_max=3)
    assert got.tolist() == [0.0, 3.0, 3.0, 3.0, 0.0]  # q = -199, -1, 1, 3, 201


# ----------------------------------------------------------------------------------------------- learnable

def learnable_closed_form(xs, gs, scale, zero_point, qmin, qmax, grad_factor):
    """Value, dx, dscale and dzero_point, element by element with Python numbers (float32 where torch is)."""
    s, zp = f32(scale), f32(zero_point)
    z_fwd = min(max(round(zp), qmin), qmax)
    z_bwd = math.trunc(min(max(f32(zp + 0.5), qmin), qmax))
    inv = f32(1.0 / s)
    ys, dxs, dscale, dzero = [], [], 0.0, 0.0
    for v, g in zip(xs, gs):
        ys.append(f32((min(max(round(f32(v * inv)) + z_fwd, qmin), qmax) - z_fwd) * s))
        q = round(f32(z_bwd + v * inv))  # one fused multiply-add, as torch's x86 kernel
        if qmin <= q <= qmax:
            dxs.append(g)
            dscale += g * ((q - z_bwd) * s - v) * inv * grad_factor
        else:
            dxs.append(0.0)
            dscale += g * ((qmin if q < qmin else qmax) - z_bwd) * grad_factor
            dzero += -g * s * grad_factor
    return ys, dxs, dscale, dzero


def run_learnable(fn, x, scale, zero_point, qmin, qmax, grad_factor, g):
    x = x.clone().requires_grad_(True)
    s = torch.tensor([scale], requires_grad=True)
    z = torch.tensor([zero_point], requires_grad=True)
    y = fn(x, s, z, qmin, qmax, grad_factor)
    dx, ds, dz = torch.autograd.grad(y, (x, s, z), g)
    return y.detach(), dx, ds, dz


def spec_learnable(x, s, z, qmin, qmax, grad_factor):
    return affine.fake_quantize_learnable(x, s, z, quant_min=qmin, quant_max=qmax, grad_factor=grad_factor)


@FAST
@given(settings_(), st.sampled_from([0.0, 0.5, -0.5, 1.5, 2.5, 0.25, -1.7]), st.sampled_from([1.0, 0.125]))
def test_learnable_matches_closed_form_and_torchs_kernel(setting, zp_offset, grad_factor):
    scale, zero_point, qmin, qmax = setting
    zp = float(zero_point) + zp_offset
    x = torch.tensor(values(scale, qmin, qmax, round(zp)))
    g = torch.linspace(-1.0, 2.0, x.numel())
    ys, dxs, dscale, dzero = learnable_closed_form(x.tolist(), g.tolist(), scale, zp, qmin, qmax, grad_factor)
    got = run_learnable(spec_learnable, x, scale, zp, qmin, qmax, grad_factor, g)
    torch_got = run_learnable(torch._fake_quantize_learnable_per_tensor_affine, x, scale, zp, qmin, qmax,
                              grad_factor, g)
    assert got[0].tolist() == ys and got[1].tolist() == dxs
    assert got[2].item() == pytest.approx(dscale, rel=1e-5, abs=1e-5)
    assert got[3].item() == pytest.approx(dzero, rel=1e-5, abs=1e-6)
    for mine, theirs in zip(got, torch_got):
        torch.testing.assert_close(mine.reshape(-1), theirs.reshape(-1), rtol=1e-5, atol=1e-5)


def test_learnable_zero_point_rounds_differently_forward_and_backward():
    forward, backward = affine.learnable_zero_points(torch.tensor([0.5]), quant_min=0, quant_max=10)
    assert (forward.item(), backward.item()) == (0.0, 1.0)
    forward, backward = affine.learnable_zero_points(torch.tensor([-1.7]), quant_min=-8, quant_max=7)
    assert (forward.item(), backward.item()) == (-2.0, -1.0)  # trunc(-1.2), not floor


# ----------------------------------------------------------------------------------------------- linear layers

@pytest.mark.parametrize("symmetric,qmin,qmax", [(True, -128, 127), (False, 0, 255), (True, 0, 255),
                                                 (False, -128, 127)])
def test_choose_qparams_matches_torchs_min_max_observer(symmetric, qmin, qmax):
    from torch.ao.quantization import MinMaxObserver

    x = torch.tensor([[-1.5, 0.25, 3.0], [0.5, 2.0, 1.0]])
    dtype = torch.qint8 if qmin < 0 else torch.quint8
    scheme = torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine
    observer = MinMaxObserver(dtype=dtype, qscheme=scheme)  # its default range of the dtype: qmin..qmax
    observer(x)
    scale, zero_point = observer.calculate_qparams()
    mine = affine.choose_qparams(x, quant_min=qmin, quant_max=qmax, symmetric=symmetric)
    assert mine[0].item() == pytest.approx(scale.item(), rel=1e-6)
    assert mine[1].item() == zero_point.item()


def test_choose_qparams_includes_zero_and_works_per_row():
    scale, zero_point = affine.choose_qparams(torch.tensor([[1.0, 2.0], [-4.0, -1.0]]), quant_min=0, quant_max=255,
                                              symmetric=False, dim=0)
    assert scale.tolist() == pytest.approx([2.0 / 255, 4.0 / 255])
    assert zero_point.tolist() == [0.0, 255.0]


def test_weight_only_linear_is_x_times_dequantized_weight():
    codes = torch.tensor([[1, -2, 3, 0], [4, 5, -6, 7]], dtype=torch.int32)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    bias = torch.tensor([0.5, -0.5])
    y = affine.weight_only_linear(x, codes, bias, scale=[[0.5, 1.0], [0.25, 2.0]], zero_point=[[0, 1], [2, 0]],
                                  group_size=2)
    weight = [[0.5, -1.0, 2.0, -1.0], [0.5, 0.75, -12.0, 14.0]]
    expected = [sum(a * b for a, b in zip(x[0].tolist(), row)) + c for row, c in zip(weight, bias.tolist())]
    assert y[0].tolist() == expected
    (grad,) = torch.autograd.grad(y.sum(), x)
    assert grad[0].tolist() == [sum(col) for col in zip(*weight)]


@pytest.mark.parametrize("per_token,symmetric,qmin,qmax", [(True, True, -128, 127), (False, False, 0, 127)])
def test_dynamic_quantized_linear_is_the_rescaled_integer_product(per_token, symmetric, qmin, qmax):
    x = torch.tensor([[0.3, -1.2, 2.5], [4.0, 0.1, -0.7]])
    codes = torch.tensor([[3, -4, 5], [-1, 2, 127]], dtype=torch.int32)
    bias = torch.tensor([0.25, -1.0])
    y = affine.dynamic_quantized_linear(x, codes, bias, weight_scale=[0.02, 0.01], weight_axis=0, quant_min=qmin,
                                        quant_max=qmax, symmetric=symmetric, per_token=per_token)
    for m, row in enumerate(x.tolist()):
        values_ = row if per_token else x.flatten().tolist()
        lo, hi = min(min(values_), 0.0), max(max(values_), 0.0)
        if symmetric:
            sx, zx = max(-lo, hi) / ((qmax - qmin) / 2), 0
        else:
            sx = (hi - lo) / (qmax - qmin)
            zx = min(max(qmin - round(lo / sx), qmin), qmax)
        qx = [code(v, sx, zx, qmin, qmax) for v in row]
        for n, (w_row, sw) in enumerate(zip(codes.tolist(), [0.02, 0.01])):
            acc = sum((a - zx) * b for a, b in zip(qx, w_row))
            assert y[m, n].item() == pytest.approx(acc * f32(sx) * f32(sw) + bias[n].item(), rel=1e-6)


def test_dynamic_linear_is_torchs_dynamic_linear_from_its_float_weight():
    """The default dynamic qconfig: the weight symmetric qint8 per tensor (MinMaxObserver), the activation uint8 in
    fbgemm's reduced range 0..127, asymmetric, per tensor; against torch's own module on seeded draws."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    generator = torch.Generator().manual_seed(0)
    for k, n, m in [(3, 2, 1), (8, 4, 3), (5, 1, 2)]:
        linear = torch.nn.Linear(k, n)
        with torch.no_grad():
            linear.weight.copy_(torch.randn(n, k, generator=generator))
        linear.qconfig = torch.ao.quantization.default_dynamic_qconfig
        x = torch.randn(m, k, generator=generator) * 3
        expected = DynamicLinear.from_float(linear)(x)
        got = affine.dynamic_linear(x.double(), linear.weight.double(), linear.bias.double())
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
        assert got.shape == (m, n) and got.dtype == torch.float32


# ----------------------------------------------------------------------------------------------- torchao's layers

def test_symmetric_weight_only_linear_rounds_the_row_extremes_and_ties_to_even():
    """Largest magnitude 15.9375: scale 15.9375 / 127.5 = 0.125 exactly; +-127.5 round half to even to 128 (clamped
    to 127) and -128, the .5 ties to even."""
    w = torch.tensor([[15.9375, 0.0625, 0.1875, 0.3125, -0.3125, -15.9375, 1.0, -0.5]], dtype=torch.float64)
    codes = [127, 0, 2, 2, -2, -128, 8, -4]
    x = torch.tensor([[1.0, -2.0, 0.5, 0.25, 1e4, 3.0, -0.75, 2.0]], dtype=torch.float64, requires_grad=True)
    bias = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    y = affine.symmetric_weight_only_linear(x, w, bias)
    weight = [c * 0.125 for c in codes]
    assert y.item() == sum(a * b for a, b in zip(x[0].tolist(), weight)) + 0.5
    gx, gb = torch.autograd.grad(y.sum(), (x, bias))
    assert gx[0].tolist() == weight and gb.tolist() == [1.0]


@pytest.mark.parametrize("eps,codes", [(float(torch.finfo(torch.float32).eps), [0, 0, 0]),
                                       (float(torch.finfo(torch.float32).tiny), [127, -64, 26])])
def test_symmetric_weight_only_linear_scale_is_at_least_eps(eps, codes):
    """A row of magnitudes below eps * 127.5: float32's eps (torchao's Int8Tensor) zeroes it, its smallest normal
    (IntxUnpackedToInt8Tensor) keeps it."""
    w = [f32(v) for v in (1e-9, -5e-10, 2e-10)]
    y = affine.symmetric_weight_only_linear(torch.eye(3, dtype=torch.float64), torch.tensor([w], dtype=torch.float64),
                                            eps=eps)
    scale = max(f32(max(abs(v) for v in w) / 127.5), eps)
    assert [code(v, scale, 0, -128, 127) for v in w] == codes
    assert y[:, 0].tolist() == [c * f32(scale) for c in codes]


@FAST
@given(st.lists(st.floats(-8.0, 8.0, width=32), min_size=1, max_size=6))
def test_symmetric_weight_only_linear_quantizes_in_float32(row):
    """``w * inv_scale`` rounded to float32 before rounding to an integer (torchao's quantize_affine on the float32
    weight): the row's extremes land on +-127.5 exactly where float32 says so."""
    scale = max(f32(max(abs(v) for v in row) / 127.5), float(torch.finfo(torch.float32).eps))
    w = torch.tensor([row], dtype=torch.float64)
    y = affine.symmetric_weight_only_linear(torch.eye(len(row), dtype=torch.float64), w)
    assert y[:, 0].tolist() == [code(v, scale, 0, -128, 127) * f32(scale) for v in row]


def test_dynamic_linear_per_output_channel_weight_and_per_token_activation():
    """torchao's Int8DynamicActivationInt8WeightConfig: the weight symmetric int8 per output channel, the activation
    symmetric int8 per token, the integer product rescaled by both scales."""
    x = torch.tensor([[0.3, -1.2, 2.5], [4.0, 0.1, -0.7]], dtype=torch.float64)
    w = torch.tensor([[0.5, -0.25, 1.0], [2.0, 0.125, -4.0]], dtype=torch.float64)
    bias = torch.tensor([0.25, -1.0], dtype=torch.float64)
    y = affine.dynamic_linear(x, w, bias, quant_min=-128, quant_max=127, symmetric=True, per_token=True,
                              weight_axis=0)
    for m, row in enumerate(x.tolist()):
        sx = f32(max(abs(v) for v in row) / 127.5)
        qx = [code(v, sx, 0, -128, 127) for v in row]
        for n, w_row in enumerate(w.tolist()):
            sw = f32(max(abs(v) for v in w_row) / 127.5)
            qw = [code(v, sw, 0, -128, 127) for v in w_row]
            acc = sum(a * b for a, b in zip(qx, qw))
            assert y[m, n].item() == pytest.approx(acc * sx * sw + bias[n].item(), rel=1e-6)


@FAST
@given(st.lists(st.floats(-8.0, 8.0, width=32), min_size=1, max_size=6))
def test_per_token_activation_quantizes_in_float32(row):
    """Per token the activation's codes are torchao's: ``x * inv_scale`` rounded to float32 first (a token's
    extreme lands on +-127.5 exactly where float32 says so); read through an identity weight of scale 1."""
    k = len(row)
    y = affine.dynamic_quantized_linear(torch.tensor([row], dtype=torch.float64), torch.eye(k, dtype=torch.int32),
                                        weight_scale=1.0, quant_min=-128, quant_max=127, symmetric=True,
                                        per_token=True)
    sx = max(f32(max(abs(v) for v in row) / 127.5), float(torch.finfo(torch.float32).eps))
    assert y[0].tolist() == [f32(code(v, sx, 0, -128, 127) * sx) for v in row]


# ------------------------------------------------------------------------------------- quantization-aware training

def test_moving_average_minmax_takes_the_first_call_then_averages_in_float32():
    lo, hi = affine.moving_average_minmax(torch.tensor([-1.0, 2.0]), torch.tensor([3.0, 4.0]))
    assert (lo.tolist(), hi.tolist()) == ([-1.0, 2.0], [3.0, 4.0])
    lo, hi = affine.moving_average_minmax(torch.tensor([-3.0, 2.0]), torch.tensor([5.0, 0.5]), lo, hi,
                                          averaging_constant=0.01)
    c = f32(0.01)
    assert lo.tolist() == [f32(-1.0 + f32(c * f32(-3.0 + 1.0))), 2.0]
    assert hi.tolist() == [f32(3.0 + f32(c * 2.0)), f32(4.0 + f32(c * -3.5))]
    fresh = affine.moving_average_minmax(torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([math.inf]),
                                         torch.tensor([-math.inf]))
    assert [t.item() for t in fresh] == [1.0, 2.0]  # the fused kernel's fresh observer holds +-inf


@pytest.mark.parametrize("row,scale,zero_point", [
    ([127 / 64, -0.5], 2 ** -6, 0),            # both signs, the maximum decides: max / 127
    ([-2.0, 0.5], 2 ** -6, 0),                 # both signs, the minimum decides: |min| / 128
    ([255 / 64, 1.0], 2 ** -6, -128),          # one sign: asymmetric, range from 0, zero point at quant_min
    ([-255 / 64, -1.0], 2 ** -6, 127),
    ([0.0, 0.0], 0.1, 127),                    # scale 0 -> 0.1; the error of quant_max's end is the smaller
    ([1e-9, -2e-9], f32(6.1e-5), 0),           # below 6.1e-5 -> 6.1e-5
    ([1.0, -1.0], f32((1.0 + f32(128 * f32(1.0 / 127))) / 255), 0),  # not 1 / 127.5 (the observer's own rule)
])
def test_fused_observer_qparams_closed_forms(row, scale, zero_point):
    t = torch.tensor(row)
    got_scale, got_zero = affine.fused_observer_qparams(t.min().reshape(1), t.max().reshape(1), quant_min=-128,
                                                        quant_max=127, symmetric=True)
    assert (got_scale.item(), got_zero.item()) == (f32(scale), zero_point)


def _fused_kernel(x: torch.Tensor, running_min: torch.Tensor, running_max: torch.Tensor, *, per_channel: bool,
                  symmetric: bool, qmin: int, qmax: int):
    """torch's own fused observer + fake quantizer, updating ``running_min``/``running_max`` in place."""
    scale = torch.ones(x.shape[0] if per_channel else 1)
    zero_point = torch.zeros(x.shape[0] if per_channel else 1, dtype=torch.int32)
    on = torch.tensor([1], dtype=torch.long)
    y = torch.fused_moving_avg_obs_fake_quant(x, on, on, running_min, running_max, scale, zero_point, 0.01, qmin, qmax,
                                              0, per_channel, symmetric)
    return y, scale, zero_point


@pytest.mark.parametrize("per_channel,symmetric,qmin,qmax", [(True, True, -128, 127), (False, False, 0, 255),
                                                             (False, True, -128, 127), (True, False, 0, 127)])
def test_fused_observer_qparams_and_update_equal_torchs_fused_kernel(per_channel, symmetric, qmin, qmax):
    generator = torch.Generator().manual_seed(3)
    for _ in range(20):
        x = torch.randn(3, 5, generator=generator) * 10 ** torch.randint(-9, 4, (1,), generator=generator).item()
        x = x.abs() * torch.sign(torch.randn(3, 1, generator=generator)) if torch.rand(1, generator=generator) < 0.3 \
            else x
        running_min, running_max = torch.tensor([]), torch.tensor([])  # empty: a fresh observer
        if not per_channel:
            running_min, running_max = torch.tensor([math.inf]), torch.tensor([-math.inf])
        mine_min = mine_max = None
        for step in range(2):
            x_step = x * (1.0 + 0.5 * step)
            _, scale, zero_point = _fused_kernel(x_step, running_min, running_max, per_channel=per_channel,
                                                 symmetric=symmetric, qmin=qmin, qmax=qmax)
            rows = x_step.reshape(x.shape[0], -1) if per_channel else x_step.reshape(1, -1)
            mine_min, mine_max = affine.moving_average_minmax(rows.amin(dim=1), rows.amax(dim=1), mine_min, mine_max)
            assert torch.equal(mine_min, running_min) and torch.equal(mine_max, running_max)
            mine = affine.fused_observer_qparams(mine_min, mine_max, quant_min=qmin, quant_max=qmax,
                                                 symmetric=symmetric)
            assert torch.equal(mine[0], scale) and torch.equal(mine[1], zero_point)


def test_qat_weight_ste_is_zero_outside_the_running_range():
    """After a step that grows the weight, the moving average lags behind: the grown extremes fall outside the clamp
    range, are clamped and get no gradient."""
    w = torch.tensor([[1.0, -0.7, 0.25, 0.5]], requires_grad=True)
    y = affine.qat_weight(w * 2, running_min=torch.tensor([-0.5]), running_max=torch.tensor([1.0]))
    (grad,) = torch.autograd.grad(y.sum(), w)
    scale = f32(max(f32(abs(f32(-0.5 + f32(f32(0.01) * -0.5))) / 128), f32(f32(1.0 + f32(f32(0.01) * 1.0)) / 127)))
    assert y[0, 0].item() == pytest.approx(127 * scale, rel=1e-6)
    assert grad.tolist() == [[0.0, 0.0, 2.0, 2.0]]  # 2.0 and -1.4 lie past 127 and -128 steps; 0.5 and 1.0 inside


def test_qat_linear_and_conv2d_equal_torchs_qat_layers_forward_and_gradient():
    from torch.ao.nn.qat import Conv2d as QATConv2d, Linear as QATLinear
    from torch.ao.quantization import get_default_qat_qconfig

    generator = torch.Generator().manual_seed(4)
    for float_layer, qat_class, spec in ((torch.nn.Linear(5, 3), QATLinear, affine.qat_linear),
                                         (torch.nn.Conv2d(2, 3, 2, padding=1), QATConv2d, affine.qat_conv2d)):
        with torch.no_grad():
            float_layer.weight[0].abs_()  # a channel of one sign
        float_layer.qconfig = get_default_qat_qconfig("x86")
        layer = qat_class.from_float(float_layer)
        x = torch.randn((2, 5) if spec is affine.qat_linear else (2, 2, 3, 3), generator=generator)
        xs, ws = x.clone().requires_grad_(), layer.weight.detach().clone().requires_grad_()
        options = {} if spec is affine.qat_linear else {"padding": 1}
        expected = layer(x.requires_grad_())
        got = spec(xs, ws, layer.bias.detach(), **options)
        assert torch.equal(got, expected)
        expected.sum().backward()
        got.sum().backward()
        assert torch.equal(xs.grad, x.grad) and torch.equal(ws.grad, layer.weight.grad)


def test_qat_linear_observer_keeps_running_in_eval_mode():
    """eval() does not freeze the fused observer: a changed weight moves its statistics (torch.ao's documented way to
    freeze it is disable_observer)."""
    from torch.ao.nn.qat import Linear as QATLinear
    from torch.ao.quantization import disable_observer, get_default_qat_qconfig

    linear = torch.nn.Linear(2, 1)
    linear.qconfig = get_default_qat_qconfig("x86")
    layer = QATLinear.from_float(linear)
    layer(torch.ones(1, 2))
    observer = layer.weight_fake_quant.activation_post_process
    before = observer.max_val.clone()
    with torch.no_grad():
        layer.weight.mul_(2.0)
    layer.eval()(torch.ones(1, 2))
    assert not torch.equal(observer.max_val, before)
    layer.apply(disable_observer)
    frozen = observer.max_val.clone()
    layer(torch.ones(1, 2))
    assert torch.equal(observer.max_val, frozen)


def test_fake_quantize_rows_per_token_asymmetric_and_per_group_symmetric():
    """A token from -100 to 155: scale 1, zero point -28, its .5 ties to even; a weight group of largest magnitude 7.5:
    int4 scale 1, 7.5 rounds to 8 and is clamped to 7 (no gradient), -7.5 to -8."""
    x = torch.tensor([[-100.0, 155.0, 0.5, 1.5, -2.5, 2.5]], requires_grad=True)
    y = affine.fake_quantize_rows(x, quant_min=-128, quant_max=127, symmetric=False, group_size=None)
    assert y.tolist() == [[-100.0, 155.0, 0.0, 2.0, -2.0, 2.0]]
    w = torch.tensor([[7.5, -7.5, 0.5, 1.5, 3.75, 1.0, -0.75, 0.25]], requires_grad=True)
    yw = affine.fake_quantize_rows(w, quant_min=-8, quant_max=7, symmetric=True, group_size=4)
    assert yw.tolist() == [[7.0, -8.0, 0.0, 2.0, 3.5, 1.0, -1.0, 0.0]]  # second group: scale 0.5
    (grad,) = torch.autograd.grad(yw.sum(), w)
    assert grad.tolist() == [[0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]]


def test_fake_quantized_linear_equals_torchaos_fake_quantized_linear():
    pytest.importorskip("torchao")
    from torchao.quantization import quantize_
    from torchao.quantization.qat import IntxFakeQuantizeConfig, QATConfig

    generator = torch.Generator().manual_seed(5)
    for k, n, m in [(32, 2, 1), (64, 3, 2)]:
        model = torch.nn.Sequential(torch.nn.Linear(k, n))
        quantize_(model, QATConfig(activation_config=IntxFakeQuantizeConfig(torch.int8, "per_token",
                                                                            is_symmetric=False),
                                   weight_config=IntxFakeQuantizeConfig(torch.int4, group_size=32, is_symmetric=True),
                                   step="prepare"))
        x = torch.randn(m, k, generator=generator) * 3
        expected = model(x)
        got = affine.fake_quantized_linear(x, model[0].weight, model[0].bias, group_size=32)
        assert torch.equal(got, expected)


def test_qat_weights_and_rows_are_quantized_in_float32():
    """A float64 value just past a tie is the tie in float32, where torch's and torchao's layers quantize it: the
    spec gives the float32 answer (half to even) for either dtype."""
    w = torch.tensor([[127 / 64, -0.5, 20.5 / 64 + 1e-12, 0.0]], dtype=torch.float64)
    assert affine.qat_weight(w)[0, 2].item() == 20 / 64
    assert torch.equal(affine.qat_weight(w), affine.qat_weight(w.float()).double())
    rows = torch.tensor([[7.5, -7.5, 0.5 + 1e-12, 2.5 - 1e-12]], dtype=torch.float64)
    got = affine.fake_quantize_rows(rows, quant_min=-8, quant_max=7, symmetric=True, group_size=4)
    assert got.tolist() == [[7.0, -8.0, 0.0, 2.0]]
