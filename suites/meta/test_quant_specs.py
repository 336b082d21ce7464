"""The quantizer and binary-layer specs against closed forms written here, independently of qsnn_reference/.

Gradients are compared with the closed-form STE/surrogate formulas, never with finite differences. The last
section runs every spec of ``conformance.specs.quant`` through the transforms (vmap, grad, jvp, compile,
export) and draws its examples in float64, float32 and bfloat16.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.core import strategies as S
from conformance.specs.quant import SPECS
from qsnn_reference import binary, quant

FAST = settings(max_examples=25, deadline=None)
ONE = settings(max_examples=1, deadline=None, database=None)
WIDE = st.floats(-1e4, 1e4, allow_nan=False, allow_subnormal=False) | st.sampled_from(
    [0.0, -0.0, 1e-30, -1e-30, 1e-8, 1.0, -1.0, 0.5, -0.5, 1e4, -1e4])


def wide_tensors(min_size=1, max_size=12):
    return st.lists(WIDE, min_size=min_size, max_size=max_size).map(lambda v: torch.tensor(v, dtype=torch.float64))


def value_and_grad(fn, x, *args, **kwargs):
    """Forward value and the input gradient for a random upstream gradient g (returned too)."""
    x = x.clone().requires_grad_(True)
    y = fn(x, *args, **kwargs)
    g = torch.linspace(-1.5, 2.0, y.numel(), dtype=y.dtype).reshape(y.shape)
    (grad,) = torch.autograd.grad(y, x, g)
    return y.detach(), grad, g


def expected_sign(x, zero_value):
    return torch.tensor([1.0 if v > 0 else -1.0 if v < 0 else zero_value for v in x.tolist()], dtype=x.dtype)


# ----------------------------------------------------------------------------------------------- sign family

@FAST
@given(x=wide_tensors(), zero_value=st.sampled_from([-1.0, 0.0, 1.0]))
def test_sign_ste_forward_and_identity_gradient(x, zero_value):
    y, grad, g = value_and_grad(quant.sign_ste, x, zero_value=zero_value)
    assert torch.equal(y, expected_sign(x, zero_value))
    assert torch.equal(grad, g)


@FAST
@given(x=wide_tensors(), zero_value=st.sampled_from([-1.0, 0.0, 1.0]),
       threshold=st.sampled_from([None, 0.0, 0.5, 1.0, 3.0]), inclusive=st.booleans())
def test_sign_clipped_ste_cancels_outside_threshold(x, zero_value, threshold, inclusive):
    x = torch.cat([x, torch.tensor([1.0, -1.0, 0.5, 3.0])])  # the boundaries, exactly
    y, grad, g = value_and_grad(quant.sign_clipped_ste, x, threshold=threshold, zero_value=zero_value,
                                inclusive=inclusive)
    assert torch.equal(y, expected_sign(x, zero_value))
    for xi, gi, go in zip(x.tolist(), grad.tolist(), g.tolist()):
        passes = (not threshold) or (abs(xi) <= threshold if inclusive else abs(xi) < threshold)
        assert gi == (go if passes else 0.0)


@FAST
@given(x=wide_tensors(), zero_value=st.sampled_from([-1.0, 0.0, 1.0]))
def test_approx_sign_gradient_is_two_minus_two_abs_x(x, zero_value):
    x = torch.cat([x, torch.tensor([1.0, -1.0, 0.25])])
    y, grad, g = value_and_grad(quant.approx_sign, x, zero_value=zero_value)
    assert torch.equal(y, expected_sign(x, zero_value))
    want = [go * (2 - 2 * abs(xi)) if abs(xi) <= 1 else 0.0 for xi, go in zip(x.tolist(), g.tolist())]
    torch.testing.assert_close(grad, torch.tensor(want, dtype=torch.float64))


@FAST
@given(x=wide_tensors(), zero_value=st.sampled_from([-1.0, 0.0, 1.0]))
def test_sign_hardtanh_ste_passes_on_the_open_interval(x, zero_value):
    x = torch.cat([x, torch.tensor([1.0, -1.0, 0.999])])
    y, grad, g = value_and_grad(quant.sign_hardtanh_ste, x, zero_value=zero_value)
    assert torch.equal(y, expected_sign(x, zero_value))
    want = [go if -1 < xi < 1 else 0.0 for xi, go in zip(x.tolist(), g.tolist())]
    assert grad.tolist() == want


def swish_sign_closed_form(x, beta):
    """SS_beta(x) = 2 sigmoid(beta x) (1 + beta x (1 - sigmoid(beta x))) - 1 (BNN+ eq. 6)."""
    s = torch.sigmoid(beta * x)
    return 2 * s * (1 + beta * x * (1 - s)) - 1


@FAST
@given(x=wide_tensors(), beta=st.sampled_from([0.5, 1.0, 5.0, 10.0]), zero_value=st.sampled_from([-1.0, 1.0]))
def test_swish_sign_gradient_is_the_derivative_of_the_bnn_plus_swish(x, beta, zero_value):
    y, grad, g = value_and_grad(quant.swish_sign, x, beta=beta, zero_value=zero_value)
    assert torch.equal(y, expected_sign(x, zero_value))
    xs = x.clone().requires_grad_(True)
    (want,) = torch.autograd.grad(swish_sign_closed_form(xs, beta), xs, g)  # analytic derivative, smooth
    torch.testing.assert_close(grad, want, atol=1e-12, rtol=1e-9)
    torch.testing.assert_close(quant.swish_sign_grad(x, g, beta=beta), want, atol=1e-12, rtol=1e-9)


# ----------------------------------------------------------------------------------------------- weights

@FAST
@given(w=S.tensors(S.shapes(min_dims=1, max_dims=3), away_from=(0.0,)), zero_value=st.sampled_from([-1.0, 1.0]),
       scaling=st.sampled_from(["none", "tensor", "channel"]), scale_gradient=st.booleans())
def test_binarize_weight_xnor_scale_and_gradient(w, zero_value, scaling, scale_gradient):
    w[0].view(-1)[0] = 0.0
    y, grad, g = value_and_grad(quant.binarize_weight, w, scaling=scaling, zero_value=zero_value,
                                scale_gradient=scale_gradient)
    b = expected_sign(w.flatten(), zero_value).reshape(w.shape)
    out_channels = w.shape[0]
    rows_abs, rows_b, rows_g = w.abs().reshape(out_channels, -1), b.reshape(out_channels, -1), g.reshape(out_channels, -1)
    if scaling == "none":
        a, total, n = torch.ones(out_channels, 1, dtype=w.dtype), None, None
    elif scaling == "tensor":
        a = torch.full((out_channels, 1), rows_abs.mean().item(), dtype=w.dtype)
        total, n = torch.full((out_channels, 1), (rows_g * rows_b).sum().item(), dtype=w.dtype), w.numel()
    else:
        a = rows_abs.mean(dim=1, keepdim=True)
        total, n = (rows_g * rows_b).sum(dim=1, keepdim=True), rows_abs.shape[1]
    torch.testing.assert_close(y, (a * rows_b).reshape(w.shape))
    want = a * rows_g
    if scale_gradient and scaling != "none":
        want = want + torch.sign(w.reshape(out_channels, -1)) * total / n
    torch.testing.assert_close(grad, want.reshape(w.shape))


# ----------------------------------------------------------------------------------------------- k-bit

def python_round(v: float, mode: str) -> float:
    if mode == "half_even":
        return float(round(v))
    if mode == "half_up":
        return float(math.floor(v + 0.5))
    return math.copysign(math.floor(abs(v) + 0.5), v)


@FAST
@given(levels=st.lists(st.integers(-20, 20), min_size=1, max_size=10), data=st.data(),
       bits=st.integers(1, 8), signed=st.booleans(), narrow=st.booleans(),
       rounding=st.sampled_from(["half_even", "half_up", "half_away"]), scale=st.sampled_from([0.25, 0.5, 1.0, 2.0]))
def test_uniform_quantize_rounding_clipping_and_ste(levels, data, bits, signed, narrow, rounding, scale):
    qmin = -(2 ** (bits - 1)) + narrow if signed else 0
    qmax = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1 - narrow
    if qmin > qmax:
        return
    zp = data.draw(st.integers(qmin, qmax))
    # Exact ties (k + 0.5) and off-tie fractions, scaled by a power of two so x / scale is exact.
    fracs = data.draw(st.lists(st.sampled_from([0.5, -0.5, 0.25, 0.0, 0.75]), min_size=len(levels), max_size=len(levels)))
    x = torch.tensor([(k + f) * scale for k, f in zip(levels, fracs)], dtype=torch.float64)
    y, grad, g = value_and_grad(quant.uniform_quantize, x, scale=scale, zero_point=zp, bits=bits, signed=signed,
                                narrow_range=narrow, rounding=rounding)
    for xi, yi, gi, go in zip(x.tolist(), y.tolist(), grad.tolist(), g.tolist()):
        q = python_round(xi / scale, rounding) + zp
        assert yi == (min(max(q, qmin), qmax) - zp) * scale
        assert gi == (go if qmin <= q <= qmax else 0.0)


def test_uniform_quantize_tie_conventions():
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5], dtype=torch.float64)
    want = {"half_even": [0, 2, 2, -0, -2, -2], "half_up": [1, 2, 3, 0, -1, -2], "half_away": [1, 2, 3, -1, -2, -3]}
    for mode, values in want.items():
        y = quant.uniform_quantize(x, scale=1.0, bits=8, rounding=mode)
        assert y.tolist() == [float(v) for v in values], mode


def test_uniform_quantize_per_channel_uses_each_channel_scale_and_zero_point():
    x = torch.tensor([[[0.3, 0.7], [0.3, 0.7], [5.0, -5.0]]], dtype=torch.float64)  # [1, 3, 2], channels dim -2
    y = quant.uniform_quantize(x, scale=(0.5, 0.25, 1.0), zero_point=(0, 1, -2), bits=3, channel_dim=-2)
    # channel 0: round(0.6)=1, round(1.4)=1 -> 0.5, 0.5; channel 1: round(1.2)+1=2, round(2.8)+1=4->clamp 3 -> 0.25, 0.5
    # channel 2: round(5)-2=3 -> (3+2)*1=5; round(-5)-2=-7 -> clamp -4 -> -2
    assert y.tolist() == [[[0.5, 0.5], [0.25, 0.5], [5.0, -2.0]]]


@FAST
@given(x=S.tensors(S.shapes(min_dims=1, max_dims=2), min_value=-3, max_value=3), bits=st.integers(1, 4),
       gradient=st.sampled_from(["identity", "tanh"]))
def test_dorefa_weight_closed_form(x, bits, gradient):
    y, grad, g = value_and_grad(quant.dorefa_weight, x, bits=bits, gradient=gradient)
    n = 2 ** bits - 1
    t = [math.tanh(v) for v in x.flatten().tolist()]
    top = max(abs(v) for v in t)
    want = [2 * round((v / (2 * top) + 0.5) * n) / n - 1 for v in t]
    torch.testing.assert_close(y.flatten(), torch.tensor(want, dtype=torch.float64))
    d = [1.0] * len(t) if gradient == "identity" else [(1 - v * v) / top for v in t]
    torch.testing.assert_close(grad.flatten(), g.flatten() * torch.tensor(d, dtype=torch.float64))


@FAST
@given(x=wide_tensors(), bits=st.integers(1, 4), gradient=st.sampled_from(["identity", "clipped"]))
def test_dorefa_activation_closed_form(x, bits, gradient):
    x = torch.cat([x, torch.tensor([0.0, 1.0])])
    y, grad, g = value_and_grad(quant.dorefa_activation, x, bits=bits, gradient=gradient)
    n = 2 ** bits - 1
    for xi, yi, gi, go in zip(x.tolist(), y.tolist(), grad.tolist(), g.tolist()):
        assert yi == round(min(max(xi, 0.0), 1.0) * n) / n
        assert gi == (go if gradient == "identity" or 0 <= xi <= 1 else 0.0)


@FAST
@given(x=wide_tensors(), alpha=st.sampled_from([0.5, 1.0, 3.0]) | S.positive(0.1, 10.0), bits=st.integers(1, 4))
def test_pact_forward_and_paper_gradients(x, alpha, bits):
    a = torch.tensor(alpha, dtype=torch.float64, requires_grad=True)
    xs = x.clone().requires_grad_(True)
    y = quant.pact(xs, a, bits=bits)
    g = torch.linspace(-1, 2, y.numel(), dtype=torch.float64)
    gx, ga = torch.autograd.grad(y, (xs, a), g)
    n = 2 ** bits - 1
    want = [round(min(max(v, 0.0), alpha) * n / alpha) * alpha / n for v in x.tolist()]
    torch.testing.assert_close(y.detach(), torch.tensor(want, dtype=torch.float64))
    assert gx.tolist() == [go if 0 <= v < alpha else 0.0 for v, go in zip(x.tolist(), g.tolist())]
    torch.testing.assert_close(ga, torch.tensor(sum(go for v, go in zip(x.tolist(), g.tolist()) if v >= alpha),
                                                dtype=torch.float64))


@FAST
@given(x=wide_tensors(), step=st.sampled_from([0.25, 1.0]) | S.positive(0.05, 5.0), bits=st.integers(2, 5),
       signed=st.booleans(), grad_scale=st.none() | S.positive(0.01, 2.0))
def test_lsq_forward_and_step_gradient(x, step, bits, signed, grad_scale):
    s = torch.tensor(step, dtype=torch.float64, requires_grad=True)
    xs = x.clone().requires_grad_(True)
    y = quant.lsq(xs, s, bits=bits, signed=signed, grad_scale=grad_scale)
    g = torch.linspace(-1, 2, y.numel(), dtype=torch.float64)
    gx, gs = torch.autograd.grad(y, (xs, s), g)
    qn, qp = (2 ** (bits - 1), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    scale = grad_scale if grad_scale is not None else 1 / math.sqrt(x.numel() * qp)
    want_y, want_gx, want_gs = [], [], 0.0
    for v, go in zip(x.tolist(), g.tolist()):
        r = v / step
        want_y.append(round(min(max(r, -qn), qp)) * step)
        inside = -qn <= r <= qp
        want_gx.append(go if inside else 0.0)
        want_gs += go * scale * ((round(r) - r) if inside else (-qn if r < -qn else qp))
    torch.testing.assert_close(y.detach(), torch.tensor(want_y, dtype=torch.float64))
    torch.testing.assert_close(gx, torch.tensor(want_gx, dtype=torch.float64))
    torch.testing.assert_close(gs, torch.tensor(want_gs, dtype=torch.float64))


@FAST
@given(x=S.tensors(S.shapes(min_dims=1, max_dims=2, max_side=5)), factor=st.sampled_from([0.7, 0.5, 1.0, 0.0]))
def test_ternary_twn_threshold_and_scale(x, factor):
    y, grad, g = value_and_grad(quant.ternary, x, delta_factor=factor)
    values = x.flatten().tolist()
    delta = factor * sum(abs(v) for v in values) / len(values)
    kept = [abs(v) for v in values if abs(v) > delta]
    alpha = sum(kept) / len(kept) if kept else 0.0
    want = [alpha * math.copysign(1.0, v) if abs(v) > delta else 0.0 for v in values]
    torch.testing.assert_close(y.flatten(), torch.tensor(want, dtype=torch.float64))
    assert torch.equal(grad, g)


# ----------------------------------------------------------------------------------------------- layers

@FAST
@given(data=st.data(), input_quant=st.sampled_from(["none", "ste", "clipped_ste", "approx_sign", "hardtanh_ste"]),
       scaling=st.sampled_from(["none", "tensor", "channel"]), zero_value=st.sampled_from([-1.0, 0.0, 1.0]))
def test_binary_linear_closed_form(data, input_quant, scaling, zero_value):
    k, n = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 3))
    x = data.draw(S.tensors((2, k), away_from=(0.0, 1.0, -1.0)))
    w = data.draw(S.tensors((n, k)))
    bias = data.draw(S.tensors((n,)))
    xs, ws, bs = (t.clone().requires_grad_(True) for t in (x, w, bias))
    y = binary.binary_linear(xs, ws, bs, input_quant=input_quant, zero_value=zero_value, weight_scaling=scaling)
    g = torch.linspace(-1, 2, y.numel(), dtype=torch.float64).reshape(y.shape)
    gx, gw, gb = torch.autograd.grad(y, (xs, ws, bs), g)
    sign = lambda t: expected_sign(t.flatten(), zero_value).reshape(t.shape)
    a = {"none": torch.ones(n, 1, dtype=w.dtype), "tensor": w.abs().mean().expand(n, 1),
         "channel": w.abs().mean(dim=1, keepdim=True)}[scaling]
    qx = x if input_quant == "none" else sign(x)
    d = {"none": torch.ones_like(x), "ste": torch.ones_like(x), "clipped_ste": (x.abs() <= 1).double(),
         "approx_sign": (2 - 2 * x.abs()).clamp(min=0), "hardtanh_ste": (x.abs() < 1).double()}[input_quant]
    torch.testing.assert_close(y.detach(), qx @ (a * sign(w)).T + bias)
    torch.testing.assert_close(gx, d * (g @ (a * sign(w))))
    torch.testing.assert_close(gw, a * (g.T @ qx))
    torch.testing.assert_close(gb, g.sum(0))


@FAST
@given(data=st.data(), pad_value=st.sampled_from([0.0, -1.0, 1.0]), zero_value=st.sampled_from([-1.0, 1.0]),
       scaling=st.sampled_from(["none", "channel"]))
def test_binary_conv2d_pads_after_binarizing(data, pad_value, zero_value, scaling):
    cfg = data.draw(S.conv2d_configs(max_channels=2, max_side=4))
    p, s, d, groups, k = cfg["padding"], cfg["stride"], cfg["dilation"], cfg["groups"], cfg["kernel_size"]
    x = data.draw(S.tensors((1, cfg["in_channels"], cfg["height"], cfg["width"]), away_from=(0.0,)))
    w = data.draw(S.tensors((cfg["out_channels"], cfg["in_channels"] // groups, k, k)))
    xs, ws = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    y = binary.binary_conv2d(xs, ws, stride=s, padding=p, dilation=d, groups=groups, pad_value=pad_value,
                             input_quant="ste", zero_value=zero_value, weight_scaling=scaling)
    g = torch.linspace(-1, 2, y.numel(), dtype=torch.float64).reshape(y.shape)
    gx, gw = torch.autograd.grad(y, (xs, ws), g)
    sign = lambda t: expected_sign(t.flatten(), zero_value).reshape(t.shape)
    xp = torch.full((1, x.shape[1], x.shape[2] + 2 * p, x.shape[3] + 2 * p), pad_value, dtype=torch.float64)
    xp[:, :, p:p + x.shape[2], p:p + x.shape[3]] = sign(x)
    a = torch.ones(w.shape[0], 1, 1, 1, dtype=w.dtype) if scaling == "none" else w.abs().mean(dim=(1, 2, 3), keepdim=True)
    wb = a * sign(w)
    torch.testing.assert_close(y.detach(), F.conv2d(xp, wb, stride=s, dilation=d, groups=groups))
    torch.testing.assert_close(gx, torch.nn.grad.conv2d_input(x.shape, wb, g, stride=s, padding=p, dilation=d,
                                                              groups=groups))
    torch.testing.assert_close(gw, a * torch.nn.grad.conv2d_weight(xp, w.shape, g, stride=s, dilation=d, groups=groups))


@FAST
@given(data=st.data(), quantize_grad_weight=st.booleans(), scale_a=st.sampled_from([0.5, 1.0, 2.0]),
       scale_w=st.sampled_from([1.0, 0.5]))
def test_bie_binary_conv2d_matches_the_seed_backward(data, quantize_grad_weight, scale_a, scale_w):
    cfg = data.draw(S.conv2d_configs(max_channels=2, max_side=4))
    p, s, d, k, cin = cfg["padding"], cfg["stride"], cfg["dilation"], cfg["kernel_size"], cfg["in_channels"]
    x = data.draw(S.tensors((1, cin, cfg["height"], cfg["width"])))
    w = data.draw(S.tensors((cfg["out_channels"], cin, k, k)))
    bias_a = data.draw(S.tensors((cin,), never_all_zero=False))
    leaves = [t.clone().requires_grad_(True) for t in (x, w, torch.tensor(scale_a, dtype=torch.float64), bias_a)]
    y = binary.bie_binary_conv2d(*leaves, scale_w=scale_w, stride=s, padding=p, dilation=d,
                                 quantize_grad_weight=quantize_grad_weight)
    g = torch.linspace(-1, 2, y.numel(), dtype=torch.float64).reshape(y.shape)
    gx, gw, gsa, gba = torch.autograd.grad(y, leaves, g)
    xs = x + bias_a.view(1, -1, 1, 1)
    sx = torch.where(xs >= 0, 1.0, -1.0).double()
    sx[xs == 0] = 1.0  # zero_value default +1
    want_y = F.conv2d(sx, torch.where(w >= 0, 1.0, -1.0).double(), stride=s, padding=p, dilation=d) * scale_a * scale_w
    torch.testing.assert_close(y.detach(), want_y)
    # bitorch-engine: torch.sign (0 at 0) in the backward; clip on |xs / scale_a| <= 1.
    gi = torch.nn.grad.conv2d_input(xs.shape, torch.sign(w) * scale_w, g, stride=s, padding=p, dilation=d)
    gi = gi * ((xs / scale_a).abs() <= 1)
    want_gw = torch.nn.grad.conv2d_weight(torch.sign(xs) * scale_a, w.shape, g, stride=s, padding=p, dilation=d)
    if quantize_grad_weight:
        want_gw = (want_gw * (127.0 / want_gw.max())).round().clamp(-127, 127)
    torch.testing.assert_close(gx, gi)
    torch.testing.assert_close(gba, gi.sum(dim=(0, 2, 3)))
    torch.testing.assert_close(gw, want_gw, equal_nan=True)  # undefined when max <= 0
    torch.testing.assert_close(gsa, (gi * torch.sign(xs)).sum() / math.sqrt(xs.numel()))


def test_bie_init_scale_a():
    x = torch.tensor([[-1.0, 3.0], [0.0, 0.0]])
    assert binary.bie_init_scale_a(x).item() == 2.0
    assert binary.bie_init_scale_a(x, symmetric=False).item() == 4.0


# ----------------------------------------------------------------------------------------------- validation

BAD_CALLS = [
    ("zero_value", lambda x: quant.sign_ste(x, zero_value=0.5)),
    ("threshold", lambda x: quant.sign_clipped_ste(x, threshold=-1.0)),
    ("beta", lambda x: quant.swish_sign(x, beta=0.0)),
    ("scaling", lambda x: quant.binarize_weight(x, scaling="row")),
    ("bits", lambda x: quant.uniform_quantize(x, scale=1.0, bits=0)),
    ("rounding", lambda x: quant.uniform_quantize(x, scale=1.0, rounding="nearest")),
    ("scale", lambda x: quant.uniform_quantize(x, scale=-1.0)),
    ("scale", lambda x: quant.uniform_quantize(x, scale=(1.0, 2.0, 3.0), channel_dim=-1)),
    ("zero_point", lambda x: quant.uniform_quantize(x, scale=1.0, bits=2, zero_point=5)),
    ("channel_dim", lambda x: quant.uniform_quantize(x, scale=1.0, channel_dim=7)),
    ("bits", lambda x: quant.dorefa_weight(x, bits=0)),
    ("gradient", lambda x: quant.dorefa_activation(x, gradient="straight")),
    ("alpha", lambda x: quant.pact(x, torch.tensor(-1.0))),
    ("bits", lambda x: quant.lsq(x, torch.tensor(1.0), bits=1, signed=True)),
    ("step", lambda x: quant.lsq(x, torch.tensor(0.0))),
    ("grad_scale", lambda x: quant.lsq(x, torch.tensor(1.0), grad_scale=-1.0)),
    ("delta_factor", lambda x: quant.ternary(x, delta_factor=-0.1)),
    ("input_quant", lambda x: binary.binary_linear(x, torch.ones(2, 4), input_quant="tanh")),
    ("weight", lambda x: binary.binary_linear(x, torch.ones(2, 3))),
    ("bias", lambda x: binary.binary_linear(x, torch.ones(2, 4), torch.ones(3))),
    ("weight_scaling", lambda x: binary.binary_linear(x, torch.ones(2, 4), weight_scaling="row")),
    ("pad_value", lambda x: binary.binary_conv2d(x.reshape(1, 1, 2, 2), torch.ones(1, 1, 1, 1), pad_value=0.5)),
    ("stride", lambda x: binary.binary_conv2d(x.reshape(1, 1, 2, 2), torch.ones(1, 1, 1, 1), stride=0)),
    ("weight", lambda x: binary.binary_conv2d(x.reshape(1, 1, 2, 2), torch.ones(1, 2, 1, 1))),
    ("scale_a", lambda x: binary.bie_binary_conv2d(x.reshape(1, 1, 2, 2), torch.ones(1, 1, 1, 1), torch.tensor(0.0),
                                                   torch.zeros(1))),
    ("bias_a", lambda x: binary.bie_binary_conv2d(x.reshape(1, 1, 2, 2), torch.ones(1, 1, 1, 1), torch.tensor(1.0),
                                                  torch.zeros(2))),
]


@pytest.mark.parametrize("name, call", BAD_CALLS, ids=[f"{i}-{name}" for i, (name, _) in enumerate(BAD_CALLS)])
def test_bad_parameter_raises_value_error_naming_it(name, call):
    with pytest.raises(ValueError, match=name):
        call(torch.tensor([[0.5, -1.5, 2.0, 0.25]]))


# ----------------------------------------------------------------------------------------------- every spec

SPEC_IDS = [spec.id for spec in SPECS]


def test_spec_ids_are_the_declared_set():
    assert SPEC_IDS == ["quant.sign_ste", "quant.sign_clipped_ste", "quant.approx_sign", "quant.swish_sign",
                        "quant.sign_hardtanh_ste", "quant.binarize_weight", "quant.uniform", "quant.dorefa_weight",
                        "quant.dorefa_activation", "quant.pact", "quant.lsq", "quant.ternary", "packing.pack_signs",
                        "packing.binary_matmul", "layer.binary_linear", "layer.binary_conv2d",
                        "layer.bie_binary_conv2d"]
    for spec in SPECS:
        doc = spec.fn.__doc__
        assert all(section in doc for section in ("Forward:", "Backward:", "Dtype:", "Shape:")), spec.id
        with pytest.raises(ValueError, match="no hyperparameter"):
            spec.examples(not_a_hyperparameter=1)


def call(spec, x, params, hyper):
    return spec.fn(x, **params, **hyper)


def cast(example, dtype):
    return example.x.to(dtype), {k: v.to(dtype) for k, v in example.params.items()}


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_examples_are_valid_in_every_dtype(spec, data):
    example = data.draw(spec.examples())
    assert example.x.dtype == torch.float64 and 1 <= example.x.shape[0] <= 3
    reference = None
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        x, params = cast(example, dtype)
        out = call(spec, x, params, example.hyper)
        if reference is None:
            reference = out
            if spec.margin is not None:
                assert spec.margin(example).shape == out.shape
        assert out.shape == reference.shape
        if out.is_floating_point():
            assert out.dtype == dtype
            # Drawn away from decision boundaries: discrete outputs agree with float64 (exactly for signs).
            if spec.family in ("quant", "packing"):
                torch.testing.assert_close(out.double(), reference, atol=0.05 * reference.abs().max().item() + 1e-6,
                                           rtol=0.02)
        else:
            assert torch.equal(out, reference)


def per_sample(spec, example):
    hyper = example.hyper
    x, params = example.x, dict(example.params)
    return hyper, x, params


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
@ONE
@given(data=st.data())
def test_spec_runs_under_vmap_grad_and_jvp(spec, data):
    example = data.draw(spec.examples())
    hyper, x, params = per_sample(spec, example)
    batched = torch.func.vmap(lambda xi: call(spec, xi.unsqueeze(0), params, hyper).squeeze(0))(x)
    loop = torch.stack([call(spec, x[i:i + 1], params, hyper).squeeze(0) for i in range(x.shape[0])])
    torch.testing.assert_close(batched, loop)  # a batched matmul may sum in another order
    if not spec.differentiable:
        return
    out = call(spec, x, params, hyper)
    v = torch.linspace(-1, 1.5, out.numel(), dtype=out.dtype).reshape(out.shape)
    names = list(params)

    def loss(x, p):
        return (call(spec, x, p, hyper) * v).sum()

    fgrad = torch.func.grad(loss, argnums=(0, 1))(x, params)
    leaves = [x.clone().requires_grad_(True)] + [params[n].clone().requires_grad_(True) for n in names]
    agrad = torch.autograd.grad(loss(leaves[0], dict(zip(names, leaves[1:]))), leaves)
    torch.testing.assert_close(fgrad[0], agrad[0])
    for n, ag in zip(names, agrad[1:]):
        # equal_nan: bitorch-engine's int8 weight gradient is undefined (NaN) when max(grad_weight) <= 0
        torch.testing.assert_close(fgrad[1][n], ag, equal_nan=True)
    if spec.id == "layer.bie_binary_conv2d":
        return  # no forward-mode formula: the hand-written backward is not a transpose of a linear map
    u = torch.linspace(0.5, -1, x.numel(), dtype=x.dtype).reshape(x.shape)
    up = {n: torch.full_like(params[n], 0.3) for n in names}
    _, ju = torch.func.jvp(lambda x, p: call(spec, x, p, hyper), (x, params), (u, up))
    vjp = (agrad[0] * u).sum() + sum((ag * up[n]).sum() for n, ag in zip(names, agrad[1:]))
    torch.testing.assert_close((v * ju).sum(), vjp)


class Wrapped(torch.nn.Module):
    def __init__(self, spec, params, hyper):
        super().__init__()
        self.fn, self.hyper, self.names = spec.fn, dict(hyper), list(params)
        for name, value in params.items():
            self.register_parameter(name, torch.nn.Parameter(value.clone()))

    def forward(self, x):
        return self.fn(x, **{n: getattr(self, n) for n in self.names}, **self.hyper)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
@ONE
@given(data=st.data())
def test_spec_compiles_fullgraph_and_exports(spec, data):
    example = data.draw(spec.examples())
    torch._dynamo.reset()
    module = Wrapped(spec, example.params, example.hyper)
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    x = example.x.clone().requires_grad_(spec.differentiable)
    eager_out, compiled_out = module(x), compiled(x)
    torch.testing.assert_close(compiled_out, eager_out, rtol=0, atol=0)
    if spec.differentiable:
        v = torch.linspace(-1, 1.5, eager_out.numel(), dtype=eager_out.dtype).reshape(eager_out.shape)
        leaves = [x] + list(module.parameters())
        eager_grads = torch.autograd.grad(eager_out, leaves, v)
        compiled_grads = torch.autograd.grad(compiled_out, leaves, v)
        for e, c in zip(eager_grads, compiled_grads):
            torch.testing.assert_close(c, e, equal_nan=True)
    exported = torch.export.export(module, (example.x,))
    torch.testing.assert_close(exported.module()(example.x), module(example.x).detach(), rtol=0, atol=0)


@pytest.mark.parametrize("spec_id", ["quant.sign_ste", "quant.sign_clipped_ste", "quant.approx_sign",
                                     "quant.swish_sign", "quant.sign_hardtanh_ste"])
def test_sign_edge_examples_hold_zero_the_clip_edges_and_large_values(spec_id):
    """The sign family's edge examples (checked first in every cell): 0 and -0 under both zero_values, the clip
    edges exactly (inclusive and not), |x| to 1e4; the spec is finite there in every dtype and sign(0) = zero_value."""
    spec = next(s for s in SPECS if s.id == spec_id)
    examples = spec.edges()
    assert {e.hyper["zero_value"] for e in examples} == {1.0, -1.0}
    for e in examples:
        values = e.x[0].tolist()
        assert {0.0, 0.5, 1.0, -1.0, 2.0, 1e4, -1e4} <= set(values) and e.hyper.get("threshold", 1.0) in values
        for dtype in (torch.float64, torch.float32, torch.bfloat16):
            x = e.x.to(dtype).requires_grad_()
            y = spec.fn(x, **e.hyper)
            (grad,) = torch.autograd.grad(y.sum(), x)
            assert torch.isfinite(grad).all() and (y[x == 0] == e.hyper["zero_value"]).all(), (spec_id, dtype)
    assert [e.hyper["zero_value"] for e in spec.edges(zero_value=0.0)] == [0.0, 0.0]


def test_uniform_edge_examples_put_every_tie_and_clip_edge_exactly():
    """quant.uniform's edge examples hold every rounding tie, level and clip edge exactly; the spec rounds each tie
    by its mode (computed here with Python integers) and clips."""
    spec = next(s for s in SPECS if s.id == "quant.uniform")
    examples = spec.edges()
    assert {e.hyper["rounding"] for e in examples} == {"half_even", "half_up"}
    by_mode = {"half_even": round, "half_up": lambda v: math.floor(v + 0.5),
               "half_away": lambda v: math.copysign(math.floor(abs(v) + 0.5), v)}
    for e in examples:
        h = e.hyper
        qmin, qmax = quant._integer_range(h["bits"], h["signed"], h["narrow_range"])
        y = spec.fn(e.x, **h)
        for v, got in zip(e.x[0].tolist(), y[0].tolist()):
            q = min(max(by_mode[h["rounding"]](v / h["scale"] + h["zero_point"]), qmin), qmax)
            assert got == (q - h["zero_point"]) * h["scale"], (v, got, h)
        ties = [v / h["scale"] + h["zero_point"] for v in e.x[0].tolist()]
        assert {qmin - 0.5, qmax + 0.5, qmin + 0.5} <= set(ties)


def test_binary_layer_edge_examples_cross_words_and_hold_the_decision_points():
    """The binary layers' edge examples: K / input channels past one 32-bit word (69, 96, or the subject's own
    above 32), exact 0, +-1, +-threshold in the input, 1e4 where the input is binarized (quarters where it is not),
    exact zeros in the weight; the spec equals the float layer on the binarized operands there."""
    linear = next(s for s in SPECS if s.id == "layer.binary_linear")
    conv = next(s for s in SPECS if s.id == "layer.binary_conv2d")
    assert [e.x.shape[-1] for e in linear.edges()] == [69, 96]
    assert [e.x.shape[1] for e in conv.edges()] == [69, 96]
    assert [e.x.shape[-1] for e in linear.edges(in_features=st.sampled_from([32, 64]))] == [64, 64]
    for spec in (linear, conv):
        for e in spec.edges() + spec.edges(input_quant="none"):
            values = set(e.x.flatten().tolist())
            threshold = e.hyper["threshold"]
            assert {0.0, 1.0, -1.0, threshold, -threshold} <= values and (e.params["weight"] == 0).any()
            binarized = e.hyper["input_quant"] != "none"
            assert (1e4 in values) == binarized
            assert binarized or all(v * 4 == round(v * 4) for v in values)
    e = linear.edges(input_quant="none", weight_scaling="none")[0]
    signs = torch.where(e.params["weight"] == 0, e.hyper["zero_value"], torch.sign(e.params["weight"]))
    torch.testing.assert_close(linear.fn(e.x, **e.params, **e.hyper), F.linear(e.x, signs, e.params["bias"]))
