"""Spec declarations for affine quantization (``qsnn_reference/affine.py``): fake quantization per tensor and per
channel, its learnable variant, fake quantization with the scale and zero point a min/max observer computes, and the
linear layers built from a float weight (dynamic; weight-only symmetric per output channel, torchao's).

Inputs are drawn by construction as in :mod:`conformance.specs.quant`: an integer level (from two below
``quant_min`` to two above ``quant_max``) plus a fraction 0.1 to 0.4 of a step away from it, times the scale, so a
float32/bfloat16 cast decides every rounding the same way; in half the examples some elements move to magnitudes
past every level (to 1e4). The edge examples put values exactly on the rounding ties (power-of-two scales: exact in
bfloat16), on every level at and around ``quant_min``, 0 and ``quant_max``, and at |x| = 1e4. The margin is the
distance of ``x * inv_scale`` to its nearest rounding edge, in units of x (the tie rule).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.core import strategies as S
from conformance.core.types import Example, Spec
from qsnn_reference import affine

from .quant import _edge_rows, _level_margin

_RANGES = tuple(affine.INTEGER_RANGES.values())
_SCALES = st.sampled_from([0.25, 0.5, 1.0, 0.1]) | S.positive(0.01, 2.0)
#: past every level: (|level - zero point| + 1/2) steps of at most 2 lie under 520 (8 bits, two levels beyond)
_FAR_OUT = 1024.0


def _range(draw, fixed) -> tuple[int, int]:
    qmin, qmax = draw(st.sampled_from(_RANGES))
    return draw(S.hyper(fixed, "quant_min", st.just(qmin))), draw(S.hyper(fixed, "quant_max", st.just(qmax)))


@st.composite
def _off_levels(draw, shape: tuple, low: int, high: int) -> torch.Tensor:
    """Codes in [low, high] plus a fraction 0.1..0.4 of a step either way (never on a rounding edge)."""
    numel = 1
    for side in shape:
        numel *= side
    fractions = st.floats(0.1, 0.4) | st.floats(-0.4, -0.1)
    values = [draw(st.integers(low, high)) + draw(fractions) for _ in range(numel)]
    return torch.tensor(values, dtype=torch.float64).reshape(shape)


def _per_channel(values, axis: int, ndim: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64).reshape((-1,) + (1,) * (-axis - 1) if axis < 0 else
                                                              (-1,) + (1,) * (ndim - 1 - axis))


def fake_quantize_examples(**fixed):
    """``axis`` None (per tensor) or negative (per channel: robust to vmap, which removes the batch dim)."""
    S.check_fixed(fixed, ("batch", "scale", "zero_point", "quant_min", "quant_max", "axis"), "affine.fake_quantize")

    @st.composite
    def draw_example(draw):
        qmin, qmax = _range(draw, fixed)
        axis = draw(S.hyper(fixed, "axis", st.sampled_from([None, -1])))
        inner = tuple(draw(S.shapes(min_dims=0 if axis is None else -axis, max_dims=2, max_side=4)))
        shape = (draw(S.hyper(fixed, "batch", st.integers(1, 3))),) + inner
        channels = 1 if axis is None else shape[axis]
        scales = [draw(S.hyper(fixed, "scale", _SCALES)) for _ in range(channels)]
        zero_point_s = S.hyper(fixed, "zero_point", st.just(0) | st.integers(qmin, qmax))
        zero_points = [draw(zero_point_s) for _ in range(channels)]
        if axis is None:
            s, z = torch.tensor(scales[0], dtype=torch.float64), torch.tensor(zero_points[0], dtype=torch.float64)
        else:
            s, z = _per_channel(scales, axis, len(shape)), _per_channel(zero_points, axis, len(shape))
        codes = draw(_off_levels(shape, qmin - 2, qmax + 2))
        x = draw(S.magnified((codes - z) * s, low=_FAR_OUT))
        hyper = dict(scale=scales[0] if axis is None else tuple(scales),
                     zero_point=zero_points[0] if axis is None else tuple(zero_points), quant_min=qmin,
                     quant_max=qmax, axis=axis)
        return Example(x, {}, hyper)

    return draw_example()


def _edge_steps(qmin: int, qmax: int, zero_point: int) -> list[float]:
    """In steps from the zero point: every level and .5 tie from two below to two above quant_min, around 0 and
    around quant_max."""
    codes = sorted({*range(qmin - 2, qmin + 3), *range(zero_point - 2, zero_point + 3), *range(qmax - 2, qmax + 3)})
    return [c - zero_point + half for c in codes for half in (0.0, 0.5)]


#: (quant_min, quant_max, scale, zero_point) of the edge examples: symmetric int8, asymmetric uint8 with an odd zero
#: point (where rounding before or after adding it differs on a tie), int4.
_EDGE_SETTINGS = ((-128, 127, 0.25, 0), (0, 255, 0.5, 3), (-8, 7, 1.0, -1))


def fake_quantize_edges(**fixed) -> list[Example]:
    """Each setting of ``_EDGE_SETTINGS`` (each kept where a subject fixes it): exact ties, the levels at the clamp
    edges, 0, -0 and |x| = 1e4; per channel (a fixed ``axis``), two channels of the same values with zero points
    z and z + 1."""
    examples = []
    for qmin, qmax, scale, zero_point in _EDGE_SETTINGS:
        qmin, qmax = S.edge_hyper(fixed, "quant_min", qmin), S.edge_hyper(fixed, "quant_max", qmax)
        scale = S.edge_hyper(fixed, "scale", scale)
        zero_point = min(max(S.edge_hyper(fixed, "zero_point", zero_point), qmin), qmax)
        values = [v * scale for v in _edge_steps(qmin, qmax, zero_point)] + [0.0, -0.0, 1e4, -1e4]
        axis = S.edge_hyper(fixed, "axis", None)
        x = _edge_rows(values, fixed)
        hyper = dict(scale=scale, zero_point=zero_point, quant_min=qmin, quant_max=qmax, axis=axis)
        if axis is not None:
            second = min(zero_point + 1, qmax)
            x = torch.stack([x, x.roll(1, dims=-1)], dim=axis)
            hyper.update(scale=(scale, scale), zero_point=(zero_point, second))
        examples.append(Example(x, {}, hyper))
    return examples


def _rounding_margin(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Distance of ``x * inv_scale`` (float32 inverse, as the spec) to its nearest rounding edge, in units of x."""
    s32 = scale.to(torch.float32)
    inv = (1.0 / s32).to(torch.float64)
    return _level_margin(x * inv) * s32.to(torch.float64)


def fake_quantize_margin(example: Example) -> torch.Tensor:
    h = example.hyper
    if h["axis"] is None:
        scale = torch.tensor(float(h["scale"]), dtype=torch.float64)
    else:
        scale = _per_channel(h["scale"], h["axis"], example.x.dim())
    return _rounding_margin(example.x, scale)


def learnable_examples(**fixed):
    """``scale`` and ``zero_point`` are parameters of shape (1,); the zero point is drawn off integers too (k + 0.25,
    k + 0.5: the forward rounds half to even, the gradient half up)."""
    S.check_fixed(fixed, ("batch", "quant_min", "quant_max", "grad_factor"), "affine.fake_quantize_learnable")

    @st.composite
    def draw_example(draw):
        qmin, qmax = _range(draw, fixed)
        scale = draw(_SCALES)
        zero_point = min(max(draw(st.integers(qmin, qmax)) + draw(st.sampled_from([0.0, 0.5, 0.25, -0.5])), qmin),
                         qmax)
        z_forward, _ = affine.learnable_zero_points(torch.tensor([zero_point]), quant_min=qmin, quant_max=qmax)
        shape = (draw(S.hyper(fixed, "batch", st.integers(1, 3))),) + tuple(draw(S.shapes(min_dims=0, max_dims=2)))
        codes = draw(_off_levels(shape, qmin - 2, qmax + 2))
        x = draw(S.magnified((codes - float(z_forward)) * scale, low=_FAR_OUT))
        params = {"scale": torch.tensor([scale], dtype=torch.float64),
                  "zero_point": torch.tensor([zero_point], dtype=torch.float64)}
        grad_factor = draw(S.hyper(fixed, "grad_factor", st.sampled_from([1.0, 0.25])))
        return Example(x, params, dict(quant_min=qmin, quant_max=qmax, grad_factor=grad_factor))

    return draw_example()


def learnable_edges(**fixed) -> list[Example]:
    """The fake quantizer's edge values, with zero points k (as fake_quantize) and k + 0.5 (the forward's and the
    gradient's zero points part)."""
    examples = []
    for (qmin, qmax, scale, zero_point), offset in zip(_EDGE_SETTINGS, (0.0, 0.5, 0.5)):
        qmin, qmax = S.edge_hyper(fixed, "quant_min", qmin), S.edge_hyper(fixed, "quant_max", qmax)
        zero_point = min(max(zero_point, qmin), qmax)
        values = [v * scale for v in _edge_steps(qmin, qmax, zero_point)] + [0.0, -0.0, 1e4, -1e4]
        params = {"scale": torch.tensor([scale], dtype=torch.float64),
                  "zero_point": torch.tensor([min(zero_point + offset, qmax)], dtype=torch.float64)}
        hyper = dict(quant_min=qmin, quant_max=qmax, grad_factor=S.edge_hyper(fixed, "grad_factor", 1.0))
        examples.append(Example(_edge_rows(values, fixed), params, hyper))
    return examples


def learnable_margin(example: Example) -> torch.Tensor:
    return _rounding_margin(example.x, example.params["scale"].reshape(()))


def observed_examples(**fixed):
    """A batch of one (the observer's min and max span the whole input), values spread over a drawn range that
    need not include 0, some exactly 0, and in half the examples one far out (to 1e4)."""
    S.check_fixed(fixed, ("quant_min", "quant_max", "symmetric"), "affine.observed_fake_quantize")

    @st.composite
    def draw_example(draw):
        qmin, qmax = _range(draw, fixed)
        shape = (1,) + tuple(draw(S.shapes(min_dims=1, max_dims=2)))
        low = draw(st.floats(-8.0, 4.0))
        width = draw(st.floats(0.5, 8.0))
        x = draw(S.tensors(shape, min_value=low, max_value=low + width))
        x = draw(S.magnified(x, low=64.0))
        return Example(x, {}, dict(quant_min=qmin, quant_max=qmax,
                                   symmetric=draw(S.hyper(fixed, "symmetric", st.booleans()))))

    return draw_example()


def observed_edges(**fixed) -> list[Example]:
    """All positive (the range widened to 0), all negative, one value of 1e4 beside small ones, and every element
    equal (a zero-width range on one side)."""
    rows = ([0.5, 1.0, 2.0, 3.0, 4.0, 0.25], [-0.5, -1.0, -2.0, -3.0, -4.0, -0.25],
            [1e4, -1.0, 0.5, 0.0, -0.0, 2.0], [1.5, 1.5, 1.5, 1.5, 1.5, 1.5])
    qmin, qmax = _RANGES[1]
    hyper = dict(quant_min=S.edge_hyper(fixed, "quant_min", qmin), quant_max=S.edge_hyper(fixed, "quant_max", qmax),
                 symmetric=S.edge_hyper(fixed, "symmetric", False))
    return [Example(torch.tensor([row], dtype=torch.float64), {}, hyper) for row in rows]


def observed_margin(example: Example) -> torch.Tensor:
    h = example.hyper
    scale, _ = affine.choose_qparams(example.x, quant_min=h["quant_min"], quant_max=h["quant_max"],
                                     symmetric=h["symmetric"])
    return _rounding_margin(example.x, scale)


@st.composite
def linear_inputs(draw, fixed, *, batch: int = 1) -> tuple[torch.Tensor, dict]:
    """x (batch, K), weight (N, K) and bias (N,) from one drawn seed: K of 1..8 (``in_features``: a subject may fix a
    strategy; drawn only), N of 1..4, x of about 3 and in half the examples one input far out (to 1e4)."""
    k, n = draw(S.hyper(fixed, "in_features", st.integers(1, 8))), draw(st.integers(1, 4))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    x = draw(S.magnified(torch.randn((batch, k), generator=gen, dtype=torch.float64) * 3, low=64.0))
    params = {"weight": torch.randn((n, k), generator=gen, dtype=torch.float64),
              "bias": torch.randn((n,), generator=gen, dtype=torch.float64)}
    return x, params


def dynamic_linear_examples(**fixed):
    """A batch of one (the activation's per-tensor scale spans the batch): :func:`linear_inputs`."""
    S.check_fixed(fixed, ("quant_min", "quant_max", "symmetric", "per_token", "weight_axis", "in_features"),
                  "affine.dynamic_linear")

    @st.composite
    def draw_example(draw):
        x, params = draw(linear_inputs(fixed))
        return Example(x, params, _dynamic_hyper(fixed))

    return draw_example()


def _dynamic_hyper(fixed) -> dict:
    """The layer's fixed quantization settings (the default dynamic qconfig's unless a subject fixes them); the
    weight's axis only where a subject fixes it (per output channel: torchao)."""
    hyper = dict(quant_min=S.edge_hyper(fixed, "quant_min", 0), quant_max=S.edge_hyper(fixed, "quant_max", 127),
                 symmetric=S.edge_hyper(fixed, "symmetric", False), per_token=S.edge_hyper(fixed, "per_token", False))
    if "weight_axis" in fixed:
        hyper["weight_axis"] = S.edge_hyper(fixed, "weight_axis", None)
    return hyper


def dynamic_linear_edges(**fixed) -> list[Example]:
    """Inputs exactly on rounding ties (range 0..31.75: scale 0.25, zero point 0, values (k + 0.5) / 4), at the ends
    of the range and exactly 0; all negative (the range widened to 0); |x| = 1e4 beside small values (they fall on the
    zero point); a weight row of zeros, and one weight of 1e4 beside the large input."""
    ties = [31.75, 0.0, 0.125, 0.375, 0.625, 2.125, 10.375, 31.625]
    negative = [-0.5, -3.0, -0.25, -7.75, -1.0, -2.5, -0.125, -4.0]
    large = [1e4, -1.0, 0.5, 0.0, -0.0, 2.0, 3.5, -0.25]
    rows = [[0.5, -1.0, 0.25, 2.0, -0.75, 1.5, -2.0, 1.0], [0.0] * 8, [1.0, 0.5, -0.5, 0.25, -0.25, 1.0, -1.0, 0.125]]
    examples = []
    for x, far_weight in ((ties, False), (negative, False), (large, True)):
        weight = torch.tensor(rows, dtype=torch.float64)
        if far_weight:  # the per-tensor weight scale then follows it: the other weights fall on 0
            weight[2, 0] = 1e4
        params = {"weight": weight, "bias": torch.tensor([0.5, -0.25, 1.0], dtype=torch.float64)}
        examples.append(Example(torch.tensor([x], dtype=torch.float64), params, _dynamic_hyper(fixed)))
    return examples


def minmax_weight_linear_examples(**fixed):
    """x (B, K) with B of 1..3, weight (N, K) and bias (N,) from one drawn seed, N of 1..4; K of 1..8 per output
    channel, two or three groups of ``group_size`` per group; in half the examples some inputs far out (to 1e3: the
    sums stay inside float16's range)."""
    S.check_fixed(fixed, ("bits", "symmetric", "group_size"), "affine.minmax_weight_linear")

    @st.composite
    def draw_example(draw):
        hyper = _minmax_hyper(draw, fixed)
        group_size = hyper["group_size"]
        k = group_size * draw(st.integers(2, 3)) if group_size else draw(st.integers(1, 8))
        batch, n = draw(st.integers(1, 3)), draw(st.integers(1, 4))
        gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
        x = draw(S.magnified(torch.randn((batch, k), generator=gen, dtype=torch.float64) * 3, low=64.0, high=1e3))
        params = {"weight": torch.randn((n, k), generator=gen, dtype=torch.float64),
                  "bias": torch.randn((n,), generator=gen, dtype=torch.float64)}
        return Example(x, params, hyper)

    return draw_example()


def _minmax_hyper(draw, fixed) -> dict:
    symmetric = draw(S.hyper(fixed, "symmetric", st.booleans()))
    bits = draw(S.hyper(fixed, "bits", st.just(8) if symmetric else st.sampled_from([4, 2, 8])))
    group_size = draw(S.hyper(fixed, "group_size", st.just(None) if symmetric else st.sampled_from([None, 4, 8])))
    return dict(bits=bits, symmetric=symmetric, group_size=group_size)


def _tiled(values: list[float], k: int) -> list[float]:
    return (values * (k // len(values) + 1))[:k]


def minmax_weight_linear_edges(**fixed) -> list[Example]:
    """Weights exactly on rounding ties (a row whose range makes the scale 1: max |w| = 127 symmetric, min 0 and max
    2**bits - 1 asymmetric, with values k + 0.5), a row of zeros and a constant row (scale 0: kept exactly), each
    tiled along K (every group of ``group_size`` gets the pattern); a single output channel (N = 1); one weight of 1e4
    beside small ones (its row's scale follows it: the others fall on the levels near 0) and an input of 1e3 (the
    outputs stay inside float16's range)."""
    hyper = dict(bits=S.edge_hyper(fixed, "bits", 8), symmetric=S.edge_hyper(fixed, "symmetric", True),
                 group_size=S.edge_hyper(fixed, "group_size", None))
    top = 2 ** (hyper["bits"] - 1) - 1 if hyper["symmetric"] else 2 ** hyper["bits"] - 1
    k = 2 * hyper["group_size"] if hyper["group_size"] else 8
    ties = [float(top), 0.5, 1.5, 2.5, -0.5 if hyper["symmetric"] else 0.0, top - 0.5, top - 1.5, 0.0]
    rows = [_tiled(ties, k), [0.0] * k, [0.75] * k]
    inputs = _tiled([0.5, -1.0, 0.25, 2.0, -0.75, 1.5, -2.0, 1.0], k)
    single = [_tiled([0.3, -1.2, 0.05, 2.2, -0.7, 1.1, -0.4, 0.9], k)]
    large = [_tiled([1e4, -1.0, 0.5, 0.0, 2.0, -3.5, 0.25, 1.0], k), _tiled(ties, k)]
    examples = []
    large_x = [0.5, 1e3] + [0.0] * (k - 2)  # meets 1e4 * 0.5 and the ties row's 1.5 * 1e3
    for weight, x in ((rows, [inputs, inputs[::-1]]), (single, [inputs]), (large, [large_x])):
        params = {"weight": torch.tensor(weight, dtype=torch.float64),
                  "bias": torch.linspace(-0.5, 0.5, len(weight), dtype=torch.float64)}
        examples.append(Example(torch.tensor(x, dtype=torch.float64), params, dict(hyper)))
    return examples


#: The weight-only scale's lower bounds: float32's eps (torchao's Int8Tensor) and its smallest normal (the default of
#: torchao's ``choose_qparams_affine``, which IntxUnpackedToInt8Tensor keeps).
_SCALE_EPS = (float(torch.finfo(torch.float32).eps), float(torch.finfo(torch.float32).tiny))


def weight_only_examples(**fixed):
    """A batch of one or two (the weight's scales do not depend on x): :func:`linear_inputs`; int8 or int4 codes,
    either lower bound of the scale."""
    S.check_fixed(fixed, ("quant_min", "quant_max", "eps", "in_features"), "affine.symmetric_weight_only_linear")

    @st.composite
    def draw_example(draw):
        x, params = draw(linear_inputs(fixed, batch=draw(st.integers(1, 2))))
        qmin, qmax = draw(st.sampled_from([(-128, 127), (-8, 7)]))
        hyper = dict(quant_min=draw(S.hyper(fixed, "quant_min", st.just(qmin))),
                     quant_max=draw(S.hyper(fixed, "quant_max", st.just(qmax))),
                     eps=draw(S.hyper(fixed, "eps", st.sampled_from(_SCALE_EPS))))
        return Example(x, params, hyper)

    return draw_example()


def weight_only_edges(**fixed) -> list[Example]:
    """A weight row whose largest magnitude 15.9375 makes the int8 scale exactly 0.125, with values on the ties
    +-0.5, 1.5, 2.5 steps and the row's own extremes on +-127.5 (half to even: 128, clamped to 127, and -128); a row
    of zeros; a row of magnitudes below ``eps * 127.5`` (codes 0 with float32's eps, +-127 with its smallest
    normal); inputs of 1e4 beside small ones."""
    rows = [[15.9375, 0.0625, 0.1875, 0.3125, -0.3125, -15.9375, 1.0, -0.5], [0.0] * 8,
            [1e-9, -5e-10, 2e-10, 0.0, -1e-9, 7.5e-10, -2.5e-10, 1e-10]]
    x = _edge_rows([1.0, -2.0, 0.5, 0.25, 1e4, 3.0, -0.75, 2.0], {}, batch=2)
    params = {"weight": torch.tensor(rows, dtype=torch.float64),
              "bias": torch.tensor([0.5, -0.25, 1.0], dtype=torch.float64)}
    hyper = dict(quant_min=S.edge_hyper(fixed, "quant_min", -128), quant_max=S.edge_hyper(fixed, "quant_max", 127),
                 eps=S.edge_hyper(fixed, "eps", _SCALE_EPS[0]))
    return [Example(x, params, hyper)]


#: The QAT layers' fixed weight quantization: torch.ao's default QAT qconfig (qint8, per-channel symmetric).
_QAT_KEYS = ("quant_min", "quant_max", "symmetric")


def _qat_hyper(fixed) -> dict:
    return dict(quant_min=S.edge_hyper(fixed, "quant_min", -128), quant_max=S.edge_hyper(fixed, "quant_max", 127),
                symmetric=S.edge_hyper(fixed, "symmetric", True))


def qat_linear_examples(**fixed):
    """A batch of one to three (the weight's statistics do not depend on x): :func:`linear_inputs`, and in a third of
    the examples the weight moved to one sign (a channel of one sign is quantized asymmetrically)."""
    S.check_fixed(fixed, _QAT_KEYS + ("in_features",), "affine.qat_linear")

    @st.composite
    def draw_example(draw):
        x, params = draw(linear_inputs(fixed, batch=draw(st.integers(1, 3))))
        sign = draw(st.sampled_from([None, None, 1.0, -1.0]))
        if sign is not None:
            params["weight"] = params["weight"].abs() * sign
        return Example(x, params, _qat_hyper(fixed))

    return draw_example()


#: Weight channels of every case of the fused observer's qparams, the first four with the scale exactly 2**-6 and
#: weights on its ties (k + 1/2 steps): the maximum deciding (scale max / 127), the minimum deciding (|min| / 128),
#: all positive (zero point -128, scale max / 255), all negative (127); all zero (scale 0.1), magnitudes whose scale
#: falls below 6.1e-5 (raised to it), one weight of 1e4 (the others fall on few levels).
_QAT_EDGE_CHANNELS = ([127 / 64, -0.5, 20.5 / 64, 0.5 / 64], [-2.0, 0.5, 20.5 / 64, -1.5 / 64],
                      [255 / 64, 32.5 / 64, 1.0, 128.5 / 64], [-255 / 64, -32.5 / 64, -1.0, -128.5 / 64],
                      [0.0, 0.0, 0.0, 0.0], [1e-9, -2e-9, 0.0, 5e-10], [1e4, -1.0, 0.5, 0.0])


def qat_linear_edges(**fixed) -> list[Example]:
    """:data:`_QAT_EDGE_CHANNELS` as the weight's rows; inputs of 1e4 beside small ones."""
    params = {"weight": torch.tensor(_QAT_EDGE_CHANNELS, dtype=torch.float64),
              "bias": torch.linspace(-1.0, 1.0, len(_QAT_EDGE_CHANNELS), dtype=torch.float64)}
    x = _edge_rows([1.0, -2.0, 1e4, 0.5], {}, batch=2)
    return [Example(x, params, _qat_hyper(fixed))]


def qat_conv2d_examples(**fixed):
    """x (B, C, H, W) and a weight (O, C / groups, k, k) from one drawn seed over a drawn valid geometry (at most two
    channels per group, sides to 4) and a bias (a float Conv2d's default); in a third of the examples the weight
    moved to one sign."""
    S.check_fixed(fixed, _QAT_KEYS, "affine.qat_conv2d")

    @st.composite
    def draw_example(draw):
        cfg = draw(S.conv2d_configs(max_channels=2, max_side=4))
        gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
        side = cfg["height"]
        x = draw(S.magnified(torch.randn((draw(st.integers(1, 2)), cfg["in_channels"], side, side), generator=gen,
                                         dtype=torch.float64) * 3, low=64.0))
        k = cfg["kernel_size"]
        weight = torch.randn((cfg["out_channels"], cfg["in_channels"] // cfg["groups"], k, k), generator=gen,
                             dtype=torch.float64)
        sign = draw(st.sampled_from([None, None, 1.0, -1.0]))
        params = {"weight": weight if sign is None else weight.abs() * sign,
                  "bias": torch.randn((cfg["out_channels"],), generator=gen, dtype=torch.float64)}
        hyper = {name: cfg[name] for name in ("stride", "padding", "dilation", "groups")}
        return Example(x, params, {**hyper, **_qat_hyper(fixed)})

    return draw_example()


def qat_conv2d_edges(**fixed) -> list[Example]:
    """:data:`_QAT_EDGE_CHANNELS` as 2x2 kernels of one input channel; an input of 1e4 beside small ones, padded."""
    weight = torch.tensor(_QAT_EDGE_CHANNELS, dtype=torch.float64).reshape(-1, 1, 2, 2)
    params = {"weight": weight, "bias": torch.linspace(-1.0, 1.0, weight.shape[0], dtype=torch.float64)}
    x = torch.tensor([[[[1.0, -2.0, 0.5], [1e4, 0.25, -1.0], [0.0, 3.0, -0.5]]]], dtype=torch.float64)
    hyper = dict(stride=1, padding=1, dilation=1, groups=1, **_qat_hyper(fixed))
    return [Example(torch.cat([x, -x]), params, hyper)]


def fake_quantized_linear_examples(**fixed):
    """:func:`linear_inputs` with ``in_features`` a multiple of ``group_size`` (a subject fixes both), a batch of one
    to three; in a quarter of the examples the input moved to one sign (the per-token range then ends at 0)."""
    S.check_fixed(fixed, ("group_size", "in_features"), "affine.fake_quantized_linear")

    @st.composite
    def draw_example(draw):
        group_size = draw(S.hyper(fixed, "group_size", st.just(8)))
        in_features = fixed.get("in_features", st.sampled_from([group_size, 2 * group_size]))
        x, params = draw(linear_inputs({"in_features": in_features}, batch=draw(st.integers(1, 3))))
        if draw(st.integers(0, 3)) == 0:
            x = x.abs()
        return Example(x, params, dict(group_size=group_size))

    return draw_example()


def fake_quantized_linear_edges(**fixed) -> list[Example]:
    """Tokens whose range makes the scale exactly 1 (-100 to 155: zero point -28) with values on the ties k + 0.5;
    one all positive (range from 0); one with 1e4. Weight groups whose largest magnitude 7.5 makes the int4 scale 1,
    with values on ties (the positive extreme 7.5 rounds to 8 and is clamped: no gradient there), a group of zeros
    (scale float32's smallest normal: codes 0) and one of 1e4 beside small weights."""
    group_size = S.edge_hyper(fixed, "group_size", 8)
    k = 2 * group_size
    ties = [-100.0, 155.0, 0.5, -0.5, 1.5, 2.5, -27.5, 100.5]
    tokens = [_tiled(ties, k), _tiled([0.0, 0.25, 3.0, 1.5, 0.75, 2.0, 0.125, 1.0], k),
              _tiled([1e4, -1.0, 0.5, 0.0, 2.0, -3.5, 0.25, 1.0], k)]
    group_ties = _tiled([7.5, -7.5, 0.5, 1.5, -2.5, 3.5, 6.5, -0.5], group_size)
    rows = [group_ties + [0.0] * group_size, [1e4, 0.5] + [-0.25] * (group_size - 2) + group_ties]
    params = {"weight": torch.tensor(rows, dtype=torch.float64),
              "bias": torch.tensor([0.5, -0.25], dtype=torch.float64)}
    return [Example(torch.tensor(tokens, dtype=torch.float64), params, dict(group_size=group_size))]


SPECS = (
    Spec(id="affine.fake_quantize", fn=affine.fake_quantize, examples=fake_quantize_examples,
         edges=fake_quantize_edges, margin=fake_quantize_margin,
         doc="torch.fake_quantize_per_tensor_affine / per_channel_affine: (clamp(round(x * inv_scale) + z) - z) * "
             "scale, inv_scale = 1.0f / scale in float32, half to even; STE inside the clamp range. Margin: distance "
             "of x * inv_scale to its rounding edge, in units of x."),
    Spec(id="affine.fake_quantize_learnable", fn=affine.fake_quantize_learnable, examples=learnable_examples,
         edges=learnable_edges, margin=learnable_margin,
         doc="torch._fake_quantize_learnable_per_tensor_affine: learnable scale and zero point (shape (1,)) with "
             "torch's gradients (the zero point rounded half to even forward, half up backward). Margin: as "
             "affine.fake_quantize."),
    Spec(id="affine.observed_fake_quantize", fn=affine.observed_fake_quantize, examples=observed_examples,
         edges=observed_edges, margin=observed_margin,
         doc="fake quantization with the scale and zero point a min/max observer computes from the input "
             "(torch.ao's FakeQuantize on its first call). The statistics span the batch: examples draw a batch "
             "of one. Margin: as affine.fake_quantize, with the observed scale."),
    Spec(id="affine.dynamic_linear", fn=affine.dynamic_linear, examples=dynamic_linear_examples,
         edges=dynamic_linear_edges, differentiable=False, output_dtype=torch.float32,
         doc="a dynamically quantized linear layer from its float weight (torch.ao.nn.quantized.dynamic.Linear with "
             "the default dynamic qconfig): weight symmetric int8 per tensor, activation quantized per tensor on "
             "each call (uint8 0..127), the exact integer product rescaled; float32 output, no gradient. The "
             "activation's scale spans the batch: examples draw a batch of one."),
    Spec(id="affine.minmax_weight_linear", fn=affine.minmax_weight_linear, examples=minmax_weight_linear_examples,
         edges=minmax_weight_linear_edges,
         doc="a linear layer whose float weight is quantized by the range of each output channel or group "
             "(optimum-quanto's QLinear: symmetric absmax int8, asymmetric min/max intx with a float shift), "
             "x @ W'.T + bias with W' dequantized in float32; straight through the weight's quantization."),
    Spec(id="affine.symmetric_weight_only_linear", fn=affine.symmetric_weight_only_linear,
         examples=weight_only_examples, edges=weight_only_edges,
         doc="a weight-only quantized linear layer from its float weight (torchao's Int8WeightOnlyConfig, "
             "IntxWeightOnlyConfig): the weight symmetric per output channel (scale max|row| / 127.5 for int8, at "
             "least eps; x * inv_scale in float32, half to even, clamped), y = x @ dequant(W).T + bias; gradients "
             "of x and bias through the matmul, none for the weight."),
    Spec(id="affine.qat_linear", fn=affine.qat_linear, examples=qat_linear_examples, edges=qat_linear_edges,
         doc="torch.ao.nn.qat.Linear with the default QAT qconfig ('x86'): x @ W_fq.T + bias, the weight "
             "fake-quantized per output channel by FusedMovingAvgObsFakeQuantize with the scale and zero point its "
             "fused kernel chooses from the moving-average min/max (a fresh observer: the weight's own; "
             "max(|min|/128, max/127) for a channel of both signs, asymmetric for one of one sign); STE inside the "
             "clamp range. Train and eval alike (eval() leaves the observer running)."),
    Spec(id="affine.qat_conv2d", fn=affine.qat_conv2d, examples=qat_conv2d_examples, edges=qat_conv2d_edges,
         doc="torch.ao.nn.qat.Conv2d with the default QAT qconfig: conv2d(x, W_fq, bias), the weight fake-quantized "
             "per output channel as affine.qat_linear's."),
    Spec(id="affine.fake_quantized_linear", fn=affine.fake_quantized_linear, examples=fake_quantized_linear_examples,
         edges=fake_quantized_linear_edges,
         doc="torchao's QAT FakeQuantizedLinear (QATConfig prepare with its documented fake quantizers): int8 "
             "per-token asymmetric activations, int4 per-group symmetric weights, both recomputed on every call in "
             "float32; x_fq @ W_fq.T + bias with the STEs inside the clamp ranges."),
)
