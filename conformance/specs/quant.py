"""Spec declarations for binarizers, k-bit quantizers, bit packing and binary layers.

Each ``examples(**fixed)`` draws float64 CPU inputs with a leading batch dim, kept away from the decisions the
spec makes (sign at 0, clip edges, rounding edges) so that a float32/bfloat16 cast of the same example
decides the same way. Discrete multi-level outputs are drawn by construction (an integer level plus a
fraction at least 0.1 of a step away from any edge) rather than by filtering. Specs whose statistics span
the whole tensor (per-tensor scales, DoReFa's max, TWN's threshold, bitorch-engine's 1/sqrt(numel) and int8
max) draw a batch of one, so that per-sample and whole-batch semantics coincide; their ``doc`` says so.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.core import strategies as S
from conformance.core.types import Example, Spec
from qsnn_reference import binary, packing, quant

_FAR = 0.02  # distance kept from nonzero decision points (bfloat16 spacing near 1 is 2^-7)
_FRACTIONS = st.floats(0.1, 0.4) | st.floats(-0.4, -0.1)  # offsets from an integer level, away from 0 and 0.5


def _batch(fixed):
    return S.hyper(fixed, "batch", st.integers(1, 3))


@st.composite
def _maybe_zeros(draw, t: torch.Tensor) -> torch.Tensor:
    """Put exact zeros into some elements (exact in every dtype, so sign(0) conventions are exercised)."""
    mask = torch.tensor(draw(st.lists(st.booleans(), min_size=t.numel(), max_size=t.numel())))
    if mask.all():
        mask[0] = False
    return torch.where(mask.reshape(t.shape), t, torch.zeros_like(t))


@st.composite
def _seeded_zeros(draw, t: torch.Tensor) -> torch.Tensor:
    """Exact zeros in every seventh element from a drawn offset (a wide tensor's :func:`_maybe_zeros`)."""
    flat = t.flatten().clone()
    flat[draw(st.integers(0, 6))::7] = 0.0
    return flat.reshape(t.shape)


def _draw_shape(draw, batch: int, *, max_dims: int = 2, max_side: int = 4) -> tuple:
    return (batch,) + tuple(draw(S.shapes(min_dims=0, max_dims=max_dims, max_side=max_side)))


def _x_margin(example: Example) -> torch.Tensor:
    return example.x


def _level_margin(v: torch.Tensor) -> torch.Tensor:
    """Distance of ``v`` (in steps) to the nearest rounding edge (a half-integer)."""
    return (0.5 - (v - torch.round(v)).abs())


# ----------------------------------------------------------------------------------------------- sign family

_SIGN_IDS = {
    quant.sign_ste: ("quant.sign_ste", ()),
    quant.sign_clipped_ste: ("quant.sign_clipped_ste", ("threshold", "inclusive")),
    quant.approx_sign: ("quant.approx_sign", ()),
    quant.swish_sign: ("quant.swish_sign", ("beta",)),
    quant.sign_hardtanh_ste: ("quant.sign_hardtanh_ste", ()),
}


def _sign_examples(fn):
    spec_id, extra = _SIGN_IDS[fn]

    def examples(**fixed):
        S.check_fixed(fixed, ("batch", "zero_value") + extra, spec_id)

        @st.composite
        def draw_example(draw):
            hyper = {"zero_value": draw(S.hyper(fixed, "zero_value", st.sampled_from(quant.ZERO_VALUES)))}
            edges = [0.0]
            if "threshold" in extra:
                hyper["threshold"] = draw(S.hyper(fixed, "threshold", st.sampled_from([None, 0.0, 0.5, 1.0, 2.0])))
                hyper["inclusive"] = draw(S.hyper(fixed, "inclusive", st.booleans()))
                if hyper["threshold"]:
                    edges += [hyper["threshold"], -hyper["threshold"]]
            if "beta" in extra:
                hyper["beta"] = draw(S.hyper(fixed, "beta", st.sampled_from([1.0, 2.0, 5.0]) | S.positive(0.5, 10.0)))
            if fn in (quant.approx_sign, quant.sign_hardtanh_ste):
                edges += [1.0, -1.0]
            shape = _draw_shape(draw, draw(_batch(fixed)))
            x = draw(S.magnified(draw(S.tensors(shape, away_from=edges, eps=_FAR))))  # past every threshold
            return Example(draw(_maybe_zeros(x)), {}, hyper)

        return draw_example()

    examples.__name__ = f"examples_{fn.__name__}"
    return examples


def _edge_rows(values, fixed, *, batch: int = 2) -> torch.Tensor:
    """Edge values as ``(batch, len)`` rows (each row rolled by one, so every value meets every position); ``batch``
    unless the subject fixes it."""
    row = torch.as_tensor(values, dtype=torch.float64)
    return torch.stack([row.roll(j) for j in range(S.edge_hyper(fixed, "batch", batch))])


#: x of the sign family's edge examples: 0 and -0 (the zero_value convention), the clip and window edges
#: (0.5, 1, 2: the thresholds drawn), 1.5 between them (inside a window of 2, outside one of 1), and magnitudes to
#: 1e4; all but 1e4 exact in bfloat16.
SIGN_EDGE_X = (0.0, -0.0, *(sign * v for v in (2.0 ** -10, 0.5, 1.0, 1.5, 2.0, 10.0, 1e4) for sign in (1.0, -1.0)))


def _sign_edges(fn):
    spec_id, extra = _SIGN_IDS[fn]
    # per edge example: zero_value, then the defaults of the family's own hyperparameters
    settings = ((quant.ZERO_VALUES[-1], dict(threshold=1.0, inclusive=True, beta=5.0)),
                (quant.ZERO_VALUES[0], dict(threshold=0.5, inclusive=False, beta=10.0)))

    def edges(**fixed) -> list[Example]:
        x = _edge_rows(SIGN_EDGE_X, fixed)
        examples = []
        for zero_value, own in settings:
            hyper = {"zero_value": S.edge_hyper(fixed, "zero_value", zero_value)}
            hyper.update({name: S.edge_hyper(fixed, name, own[name]) for name in extra})
            examples.append(Example(x.clone(), {}, hyper))
        return examples

    edges.__name__ = f"edges_{fn.__name__}"
    return edges


# ----------------------------------------------------------------------------------------------- weights

def binarize_weight_examples(**fixed):
    S.check_fixed(fixed, ("batch", "scaling", "zero_value", "scale_gradient"), "quant.binarize_weight")

    @st.composite
    def draw_example(draw):
        scaling = draw(S.hyper(fixed, "scaling", st.sampled_from(quant.WEIGHT_SCALINGS)))
        batch = 1 if scaling == "tensor" and "batch" not in fixed else draw(_batch(fixed))
        hyper = dict(scaling=scaling, zero_value=draw(S.hyper(fixed, "zero_value", st.sampled_from(quant.ZERO_VALUES))),
                     scale_gradient=draw(S.hyper(fixed, "scale_gradient", st.booleans())))
        x = draw(S.magnified(draw(S.tensors(_draw_shape(draw, batch, max_side=3), away_from=(0.0,), eps=_FAR))))
        return Example(x, {}, hyper)

    return draw_example()


def binarize_weight_edges(**fixed) -> list[Example]:
    """Exact zeros of both signs (sign(0) = zero_value, and the scale's gradient through |x| at 0), a row of zeros
    only (its channel scale 0), |x| = 1e4 beside small values; every scaling, each zero_value (-1, +1, 0) and both
    scale gradients (each as the subject fixes it). A batch of one for per-tensor scaling, as the draws."""
    rows = [[0.0, -0.0, 0.5, -2.0, 1e4], [0.0, -0.0, 0.0, -0.0, 0.0], [-1e4, 0.25, -0.0, 3.0, -0.5]]
    examples = []
    for i, scaling in enumerate(quant.WEIGHT_SCALINGS):
        scaling = S.edge_hyper(fixed, "scaling", scaling)
        hyper = dict(scaling=scaling, zero_value=S.edge_hyper(fixed, "zero_value", quant.ZERO_VALUES[(2 * i) % 3]),
                     scale_gradient=S.edge_hyper(fixed, "scale_gradient", i % 2 == 0))
        x = torch.tensor(rows, dtype=torch.float64)
        examples.append(Example(x.reshape(1, 3, 5) if scaling == "tensor" and "batch" not in fixed else x, {}, hyper))
    return examples


# ----------------------------------------------------------------------------------------------- k-bit

def uniform_examples(**fixed):
    names = ("batch", "scale", "zero_point", "bits", "signed", "narrow_range", "rounding", "channel_dim")
    S.check_fixed(fixed, names, "quant.uniform")

    @st.composite
    def draw_example(draw):
        bits = draw(S.hyper(fixed, "bits", st.integers(1, 4)))
        signed = draw(S.hyper(fixed, "signed", st.booleans()))
        narrow = draw(S.hyper(fixed, "narrow_range", st.booleans()))
        qmin, qmax = quant._integer_range(bits, signed, narrow)
        shape = _draw_shape(draw, draw(_batch(fixed)))
        channel_dim = draw(S.hyper(fixed, "channel_dim", st.sampled_from([None] + [-d for d in range(1, len(shape))])))
        channels = 1 if channel_dim is None else shape[channel_dim]
        scale_s = S.hyper(fixed, "scale", st.sampled_from([0.25, 0.5, 1.0]) | S.positive(0.05, 2.0))
        zp_s = S.hyper(fixed, "zero_point", st.just(0) | st.integers(qmin, qmax))
        scales = [draw(scale_s) for _ in range(channels)]
        zps = [draw(zp_s) for _ in range(channels)]
        levels = draw(S.tensors(shape, min_value=qmin - 2, max_value=qmax + 2, never_all_zero=False)).round()
        frac = torch.tensor(draw(st.lists(st.floats(-0.4, 0.4), min_size=levels.numel(), max_size=levels.numel())),
                            dtype=torch.float64).reshape(shape)
        per = (lambda v: torch.tensor(v, dtype=torch.float64)) if channel_dim is None else (
            lambda v: torch.tensor(v, dtype=torch.float64).reshape((-1,) + (1,) * (-channel_dim - 1)))
        s, z = per(scales[0] if channel_dim is None else scales), per(zps[0] if channel_dim is None else zps)
        # past every decision point: |level - zero point| + 1/2 steps of at most 2 is under 32 (4 bits, both signs)
        x = draw(S.magnified((levels - z + frac) * s, low=64.0))
        hyper = dict(scale=scales[0] if channel_dim is None else tuple(scales),
                     zero_point=zps[0] if channel_dim is None else tuple(zps), bits=bits, signed=signed,
                     narrow_range=narrow, rounding=draw(S.hyper(fixed, "rounding", st.sampled_from(quant.ROUNDING_MODES))),
                     channel_dim=channel_dim)
        return Example(x, {}, hyper)

    return draw_example()


def uniform_edges(**fixed) -> list[Example]:
    """Every rounding tie exactly ((level + 0.5) * scale, exact in bfloat16 for power-of-two scales), every level,
    the clip edges and two levels beyond them, 0, -0 and |x| = 1e4; per tensor (unless a subject fixes channels),
    with two settings of scale/zero point/range and rounding mode, each kept where a subject fixes it."""
    examples = []
    for i, (scale, zero_point, narrow) in enumerate(((0.25, 0, False), (0.5, 1, True))):
        bits = S.edge_hyper(fixed, "bits", 3)
        signed = S.edge_hyper(fixed, "signed", True)
        narrow = S.edge_hyper(fixed, "narrow_range", narrow)
        qmin, qmax = quant._integer_range(bits, signed, narrow)
        hyper = dict(scale=S.edge_hyper(fixed, "scale", scale),
                     zero_point=S.edge_hyper(fixed, "zero_point", min(max(zero_point, qmin), qmax)), bits=bits,
                     signed=signed, narrow_range=narrow,
                     rounding=S.edge_hyper(fixed, "rounding", quant.ROUNDING_MODES[i % len(quant.ROUNDING_MODES)]),
                     channel_dim=S.edge_hyper(fixed, "channel_dim", None))
        if hyper["channel_dim"] is not None or isinstance(hyper["scale"], tuple):
            continue  # per-channel subjects: the drawn examples only
        levels = torch.arange(qmin - 2, qmax + 3, dtype=torch.float64) - hyper["zero_point"]
        values = torch.cat([(levels + 0.5) * hyper["scale"], levels * hyper["scale"],
                            torch.tensor([0.0, -0.0, 1e4, -1e4], dtype=torch.float64)])
        examples.append(Example(_edge_rows(values, fixed), {}, hyper))
    return examples


def uniform_margin(example: Example) -> torch.Tensor:
    h = example.hyper
    s = quant._per_channel(example.x, "scale", h["scale"], h["channel_dim"], kind=float)
    return _level_margin(example.x / s) * s


def dorefa_weight_examples(**fixed):
    S.check_fixed(fixed, ("batch", "bits", "gradient"), "quant.dorefa_weight")

    @st.composite
    def draw_example(draw):
        bits = draw(S.hyper(fixed, "bits", st.integers(1, 3)))
        n = 2 ** bits - 1
        shape = _draw_shape(draw, draw(S.hyper(fixed, "batch", st.just(1))))
        top = draw(st.floats(0.2, 0.95))
        numel = 1
        for side in shape:
            numel *= side
        levels = [draw(st.integers(0, n)) for _ in range(numel)]
        # r = (level + frac) / n inside [0, 1]; tanh(x) = (2r - 1) * top, so round(r * n) == level.
        r = [min(max((k + draw(st.floats(-0.4, 0.4))) / n, 0.0), 1.0) for k in levels]
        t = (torch.tensor(r, dtype=torch.float64) * 2 - 1) * top
        t[draw(st.integers(0, numel - 1))] = top * draw(st.sampled_from([-1.0, 1.0]))
        # in half the examples some weights far out on tanh's flat tails (their tanh is then the maximum)
        x = draw(S.magnified(torch.atanh(t).reshape(shape)))
        return Example(x, {}, dict(bits=bits, gradient=draw(S.hyper(fixed, "gradient",
                                                                       st.sampled_from(quant.DOREFA_WEIGHT_GRADIENTS)))))

    return draw_example()


def dorefa_weight_margin(example: Example) -> torch.Tensor:
    n = 2 ** example.hyper["bits"] - 1
    t = torch.tanh(example.x)
    return _level_margin((t / (2 * t.abs().amax()) + 0.5) * n)


@st.composite
def _offset_levels(draw, shape, low: int, high: int) -> torch.Tensor:
    """Integer levels in [low, high] plus a fraction 0.1..0.4 away from the level (never on an integer or
    half-integer edge)."""
    numel = 1
    for side in shape:
        numel *= side
    values = [draw(st.integers(low, high)) + draw(_FRACTIONS) for _ in range(numel)]
    return torch.tensor(values, dtype=torch.float64).reshape(shape)


def dorefa_activation_examples(**fixed):
    S.check_fixed(fixed, ("batch", "bits", "gradient"), "quant.dorefa_activation")

    @st.composite
    def draw_example(draw):
        bits = draw(S.hyper(fixed, "bits", st.integers(1, 3)))
        n = 2 ** bits - 1
        x = draw(S.magnified(draw(_offset_levels(_draw_shape(draw, draw(_batch(fixed))), -1, n + 1)) / n))
        gradient = draw(S.hyper(fixed, "gradient", st.sampled_from(quant.DOREFA_ACTIVATION_GRADIENTS)))
        return Example(x, {}, dict(bits=bits, gradient=gradient))

    return draw_example()


def dorefa_activation_margin(example: Example) -> torch.Tensor:
    n = 2 ** example.hyper["bits"] - 1
    x = example.x
    return torch.minimum(_level_margin(x.clamp(0, 1) * n) / n, torch.minimum(x.abs(), (x - 1).abs()))


def pact_examples(**fixed):
    S.check_fixed(fixed, ("batch", "bits"), "quant.pact")

    @st.composite
    def draw_example(draw):
        bits = draw(S.hyper(fixed, "bits", st.integers(1, 3)))
        n = 2 ** bits - 1
        alpha = draw(st.sampled_from([0.5, 1.0, 2.0]) | S.positive(0.5, 3.0))
        x = draw(S.magnified(draw(_offset_levels(_draw_shape(draw, draw(_batch(fixed))), -1, n + 1)) * (alpha / n)))
        return Example(x, {"alpha": torch.tensor(alpha, dtype=torch.float64)}, dict(bits=bits))

    return draw_example()


def pact_margin(example: Example) -> torch.Tensor:
    n = 2 ** example.hyper["bits"] - 1
    a = example.params["alpha"]
    x = example.x
    y = torch.minimum(x.clamp(min=0), a)
    return torch.minimum(_level_margin(y * n / a) * a / n, torch.minimum(x.abs(), (x - a).abs()))


def lsq_examples(**fixed):
    S.check_fixed(fixed, ("batch", "bits", "signed", "grad_scale"), "quant.lsq")

    @st.composite
    def draw_example(draw):
        signed = draw(S.hyper(fixed, "signed", st.booleans()))
        bits = draw(S.hyper(fixed, "bits", st.integers(2 if signed else 1, 4)))
        qn, qp = quant._lsq_range(bits, signed)
        step = draw(st.sampled_from([0.25, 0.5, 1.0]) | S.positive(0.1, 2.0))
        # past every decision point: at most 16 steps of at most 2 from zero
        x = draw(S.magnified(draw(_offset_levels(_draw_shape(draw, draw(_batch(fixed))), -qn - 1, qp + 1)) * step,
                             low=64.0))
        grad_scale = draw(S.hyper(fixed, "grad_scale", st.sampled_from([1.0, 0.5]) | S.positive(0.01, 1.0)))
        return Example(x, {"step": torch.tensor(step, dtype=torch.float64)},
                       dict(bits=bits, signed=signed, grad_scale=grad_scale))

    return draw_example()


def lsq_margin(example: Example) -> torch.Tensor:
    qn, qp = quant._lsq_range(example.hyper["bits"], example.hyper["signed"])
    s = example.params["step"]
    v = example.x / s
    return torch.minimum(_level_margin(v.clamp(-qn, qp)), torch.minimum((v + qn).abs(), (v - qp).abs())) * s


def ternary_examples(**fixed):
    S.check_fixed(fixed, ("batch", "delta_factor"), "quant.ternary")

    @st.composite
    def draw_example(draw):
        factor = draw(S.hyper(fixed, "delta_factor", st.sampled_from([0.7, 0.5, 1.0])))
        shape = _draw_shape(draw, draw(S.hyper(fixed, "batch", st.just(1))), max_side=3)

        def clear(t):
            delta = quant.ternary_threshold(t, delta_factor=factor)
            return bool(((t.abs() - delta).abs() >= 0.05 * delta + 1e-3).all())

        x = draw(S.tensors(shape, away_from=(0.0,), eps=_FAR).filter(clear))
        x = draw(S.magnified(x).filter(clear))  # the threshold then follows the large weights' mean
        return Example(x, {}, dict(delta_factor=factor))

    return draw_example()


def ternary_margin(example: Example) -> torch.Tensor:
    x = example.x
    return x.abs() - quant.ternary_threshold(x, delta_factor=example.hyper["delta_factor"])


def _ties_and_levels(low: int, high: int) -> list[float]:
    """Every level ``k`` and rounding tie ``k + 0.5`` from ``low`` to ``high`` (in steps)."""
    return [k + half for k in range(low, high + 1) for half in (0.0, 0.5)]


def dorefa_activation_edges(**fixed) -> list[Example]:
    """1 and 2 bits: every level and rounding tie of x * n (exact, so judged strictly, where n = 1; within the tie
    margin where n = 3), the clip edges 0 and 1 exactly, values past them, -0 and |x| = 1e4."""
    examples = []
    for bits in (1, 2):
        bits = S.edge_hyper(fixed, "bits", bits)
        n = 2 ** bits - 1
        values = [v / n for v in _ties_and_levels(-1, n + 1)] + [0.0, -0.0, 1e4, -1e4]
        hyper = dict(bits=bits, gradient=S.edge_hyper(fixed, "gradient", quant.DOREFA_ACTIVATION_GRADIENTS[0]))
        examples.append(Example(_edge_rows(values, fixed), {}, hyper))
    return examples


def dorefa_weight_edges(**fixed) -> list[Example]:
    """Zeros of both signs, |x| = 1e4 (tanh exactly +-1, the maximum) and values in between, 1 and 2 bits; a batch
    of one, as the statistic spans the tensor."""
    values = [0.0, -0.0, 1e4, -1e4, 0.5, -0.5, 2.0, -3.0, 0.125, -0.125]
    return [Example(_edge_rows(values, fixed, batch=1), {},
                    dict(bits=S.edge_hyper(fixed, "bits", bits),
                         gradient=S.edge_hyper(fixed, "gradient", quant.DOREFA_WEIGHT_GRADIENTS[0])))
            for bits in (1, 2)]


def pact_edges(**fixed) -> list[Example]:
    """alpha = n (levels and ties exact integers) and alpha = 0.5 with 1 bit (ties at 0.25): every level and tie,
    the clip edges 0 and alpha exactly, values past them, -0 and |x| = 1e4."""
    examples = []
    for bits, alpha in ((2, 3.0), (1, 0.5)):
        bits = S.edge_hyper(fixed, "bits", bits)
        n = 2 ** bits - 1
        values = [v * alpha / n for v in _ties_and_levels(-1, n + 1)] + [0.0, -0.0, alpha, 1e4, -1e4]
        examples.append(Example(_edge_rows(values, fixed), {"alpha": torch.tensor(alpha, dtype=torch.float64)},
                                dict(bits=bits)))
    return examples


def lsq_edges(**fixed) -> list[Example]:
    """Power-of-two steps, signed and unsigned: every level and rounding tie of x / step (exact), the clip edges
    -qn and qp exactly, values past them, -0 and |x| = 1e4."""
    examples = []
    for signed, bits, step in ((True, 3, 0.25), (False, 2, 0.5)):
        signed = S.edge_hyper(fixed, "signed", signed)
        bits = S.edge_hyper(fixed, "bits", bits)
        qn, qp = quant._lsq_range(bits, signed)
        values = [v * step for v in _ties_and_levels(-qn - 1, qp + 1)] + [0.0, -0.0, 1e4, -1e4]
        examples.append(Example(_edge_rows(values, fixed), {"step": torch.tensor(step, dtype=torch.float64)},
                                dict(bits=bits, signed=signed, grad_scale=S.edge_hyper(fixed, "grad_scale", 1.0))))
    return examples


def ternary_edges(**fixed) -> list[Example]:
    """Values exactly at +-delta (mean|x| = 1 and delta_factor 0.5, so delta = 0.5: the spec keeps only |x| > delta),
    zeros of both signs; and |x| = 1e4 beside small values (which fall under delta). A batch of one: the statistics
    span the tensor."""
    factor = S.edge_hyper(fixed, "delta_factor", 0.5)
    on_delta = [1.5, -1.5, 0.5, -0.5, 0.0, -0.0, 2.0, -2.0]  # mean|x| = 1.0
    large = [1e4, -1e4, 0.25, -0.25, 3.0, -0.0, 0.0, 1.0]
    return [Example(_edge_rows(values, fixed, batch=1), {}, dict(delta_factor=factor)) for values in (on_delta, large)]


# ----------------------------------------------------------------------------------------------- packing

def pack_signs_examples(**fixed):
    S.check_fixed(fixed, ("batch", "dim", "word_bits", "bit_order", "pad"), "packing.pack_signs")

    @st.composite
    def draw_example(draw):
        word_bits = draw(S.hyper(fixed, "word_bits", st.sampled_from(packing.WORD_BITS)))
        pad = draw(S.hyper(fixed, "pad", st.sampled_from([-1.0, 1.0])))
        dim = draw(S.hyper(fixed, "dim", st.sampled_from([-1, -2])))
        words = draw(st.integers(1, 3))  # past one word with a tail, as the edges, but drawn
        length = word_bits * words if pad is None else draw(st.integers(1, 20) if words == 1 else
                                                             S.reduction_lengths(word_bits + 1, 3 * word_bits))
        other = draw(st.integers(1, 2))
        shape = (draw(_batch(fixed)), other, length) if dim == -1 else (draw(_batch(fixed)), length, other)
        if length > 3 * word_bits:  # a long draw: seeded (element by element, a thousand signs overrun the buffer)
            x = torch.where(draw(_seeded_tensors(shape, salt=4)) > 0, 1.0, -1.0).to(torch.float64)
        else:
            x = draw(S.signs(shape))
        return Example(x, {}, dict(dim=dim, word_bits=word_bits,
                                                       bit_order=draw(S.hyper(fixed, "bit_order", st.sampled_from(packing.BIT_ORDERS))),
                                                       pad=pad))

    return draw_example()


def binary_matmul_examples(**fixed):
    S.check_fixed(fixed, ("batch", "zero_value", "word_bits", "bit_order"), "packing.binary_matmul")

    @st.composite
    def draw_example(draw):
        hyper = dict(zero_value=draw(S.hyper(fixed, "zero_value", st.sampled_from([1.0, -1.0]))),
                     word_bits=draw(S.hyper(fixed, "word_bits", st.sampled_from(packing.WORD_BITS))),
                     bit_order=draw(S.hyper(fixed, "bit_order", st.sampled_from(packing.BIT_ORDERS))))
        wide = draw(st.booleans())  # K under one word, or past it with a tail up to three words
        word_bits = hyper["word_bits"]
        k = draw(S.reduction_lengths(word_bits + 1, 3 * word_bits) if wide else st.integers(1, 12))
        shape = (draw(_batch(fixed)),) + ((2,) if draw(st.booleans()) else ()) + (k,)
        n = draw(st.integers(1, 3))
        if wide:  # seeded (an element-by-element draw of a few hundred values overruns hypothesis' buffer)
            x = draw(_seeded_tensors(shape, away_from=(0.0,), salt=2))
            w = draw(_seeded_tensors((n, k), away_from=(0.0,), salt=3))
            x, w = draw(_seeded_zeros(x)), draw(_seeded_zeros(w))
            if k > 256:  # a long draw: one row at the accumulator's extreme +K
                x = S.agree_with(x, w[0])
            return Example(x, {"w": w}, hyper)
        x = draw(S.tensors(shape, away_from=(0.0,)))
        w = draw(S.tensors((n, k), away_from=(0.0,)))
        return Example(draw(_maybe_zeros(x)), {"w": draw(_maybe_zeros(w))}, hyper)

    return draw_example()


def _seeded(shape: tuple, salt: int) -> torch.Tensor:
    """A fixed float64 tensor for an edge example (the same on every machine)."""
    return torch.randn(shape, generator=torch.Generator().manual_seed(20261205 + salt), dtype=torch.float64)


def _edge_lengths(word_bits: int, pad) -> tuple[int, int]:
    """Sizes along the packed axis: past two word boundaries with a tail (when padding is allowed), and exactly
    three words."""
    return (2 * word_bits + 5 if pad is not None else 2 * word_bits), 3 * word_bits


def pack_signs_edges(**fixed) -> list[Example]:
    """Rows that cross word boundaries (a packer right only within the first word fails here), both bit orders
    and both paddings, along the last and the middle axis, unless the subject fixes them."""
    word_bits = S.edge_hyper(fixed, "word_bits", 32)
    examples = []
    for i, (bit_order, pad, dim) in enumerate(((packing.BIT_ORDERS[0], -1.0, -1), (packing.BIT_ORDERS[1], 1.0, -2))):
        hyper = dict(dim=S.edge_hyper(fixed, "dim", dim), word_bits=word_bits,
                     bit_order=S.edge_hyper(fixed, "bit_order", bit_order), pad=S.edge_hyper(fixed, "pad", pad))
        length = _edge_lengths(word_bits, hyper["pad"])[i]
        batch = S.edge_hyper(fixed, "batch", 2)
        shape = (batch, 2, length) if hyper["dim"] == -1 else (batch, length, 2)
        examples.append(Example(torch.where(_seeded(shape, i) > 0, 1.0, -1.0).to(torch.float64), {}, hyper))
    return examples


def binary_matmul_edges(**fixed) -> list[Example]:
    """K past two word boundaries with a tail, and exactly three words; inputs with exact zeros (the zero_value
    convention) and magnitudes from 1e-3 to 1e4, both zero_values and bit orders unless fixed."""
    word_bits = S.edge_hyper(fixed, "word_bits", 32)
    examples = []
    for i, (zero_value, bit_order) in enumerate(((1.0, packing.BIT_ORDERS[0]), (-1.0, packing.BIT_ORDERS[1]))):
        k = _edge_lengths(word_bits, 1.0)[i]
        batch = S.edge_hyper(fixed, "batch", 2)
        shape = (batch, k) if i == 0 else (batch, 2, k)
        scale = 10.0 ** torch.arange(-3, 5, dtype=torch.float64).repeat(k)[:k]
        x = _seeded(shape, 10 + i) * scale
        w = _seeded((3, k), 20 + i) * scale
        x.flatten()[::7] = 0.0
        w.flatten()[::5] = 0.0
        hyper = dict(zero_value=S.edge_hyper(fixed, "zero_value", zero_value), word_bits=word_bits,
                     bit_order=S.edge_hyper(fixed, "bit_order", bit_order))
        examples.append(Example(x, {"w": w}, hyper))
    return examples


def pack_signs_size_edges(**fixed) -> list[Example]:
    """Rows of ``WIDE_K`` signs (past four 64-bit words and a bit, five words, eight words and a bit; whole words where
    the subject allows no padding), one of them all +1 (every bit of every word set), 64- and 32-bit words, both bit
    orders and paddings, unless the subject fixes them."""
    examples = []
    for i, k in enumerate(S.WIDE_K):
        hyper = dict(dim=S.edge_hyper(fixed, "dim", -1), word_bits=S.edge_hyper(fixed, "word_bits", (64, 32)[i % 2]),
                     bit_order=S.edge_hyper(fixed, "bit_order", packing.BIT_ORDERS[i % 2]),
                     pad=S.edge_hyper(fixed, "pad", (-1.0, 1.0)[i % 2]))
        length = k if hyper["pad"] is not None else -(-k // hyper["word_bits"]) * hyper["word_bits"]
        rows = torch.where(_seeded((S.edge_hyper(fixed, "batch", 1), 2, length), 90 + i) > 0, 1.0, -1.0)
        rows[:, 0] = 1.0
        if hyper["dim"] != -1:
            rows = rows.transpose(-1, -2).contiguous()
        examples.append(Example(rows.to(torch.float64), {}, hyper))
    return examples


def binary_matmul_size_edges(**fixed) -> list[Example]:
    """K of ``WIDE_K`` with a row of x whose signs all agree with the first row of w and one whose signs all disagree
    (sign dot products of exactly +K and -K, which an accumulator narrower than K must hold), weights of magnitudes
    1e-3 to 1e4 as the edges; both zero_values, bit orders and word sizes unless fixed."""
    examples = []
    for i, k in enumerate(S.WIDE_K):
        scale = 10.0 ** torch.arange(-3, 5, dtype=torch.float64).repeat(k)[:k]
        w = _seeded((3, k), 100 + i) * scale
        x = S.signs_agreeing_with(w[0], _seeded((k,), 110 + i) * scale.flip(0))
        hyper = dict(zero_value=S.edge_hyper(fixed, "zero_value", (1.0, -1.0)[i % 2]),
                     word_bits=S.edge_hyper(fixed, "word_bits", (64, 32)[i % 2]),
                     bit_order=S.edge_hyper(fixed, "bit_order", packing.BIT_ORDERS[i % 2]))
        batch = S.edge_hyper(fixed, "batch", 2)
        examples.append(Example(x.repeat((batch + 1) // 2, 1)[:batch], {"w": w}, hyper))
    return examples


# ----------------------------------------------------------------------------------------------- layers

_LAYER_HYPER = ("input_quant", "threshold", "zero_value", "weight_scaling")


def _layer_hyper(draw, fixed) -> dict:
    hyper = dict(input_quant=draw(S.hyper(fixed, "input_quant", st.sampled_from(binary.INPUT_QUANTS))),
                 threshold=draw(S.hyper(fixed, "threshold", st.sampled_from([1.0, 0.5, 2.0, None]))),
                 zero_value=draw(S.hyper(fixed, "zero_value", st.sampled_from(quant.ZERO_VALUES))),
                 weight_scaling=draw(S.hyper(fixed, "weight_scaling", st.sampled_from(quant.WEIGHT_SCALINGS))))
    return hyper


def _input_edges(hyper) -> tuple:
    t = hyper["threshold"]
    return (0.0, 1.0, -1.0) + ((t, -t) if t else ())


@st.composite
def _seeded_tensors(draw, shape: tuple, *, away_from: tuple = (), eps: float = _FAR, salt: int = 0) -> torch.Tensor:
    """Uniform float64 values in [-4, 4] from one drawn seed, each within ``eps`` of a point of ``away_from`` moved to
    ``eps`` from it (on its own side). For layers whose widths are multiples of 32 (bit-packing kernels):
    :func:`conformance.core.strategies.tensors` draws every element through a filter and drops the whole example when one
    element keeps failing, so hypothesis almost never completes a tensor of a few hundred elements (a 32-channel
    3x3 conv) and such subjects would be judged on 1x1 convolutions only. Shrinks towards seed 0, not per element.
    ``salt`` tells the tensors of one example apart: hypothesis often draws the same seed twice (0 first of all), and
    an input equal to its weight would make every dot product the full width."""
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)) * 16 + salt)
    t = torch.rand(shape, generator=gen, dtype=torch.float64) * 8.0 - 4.0
    for point in away_from:
        offset = t - point
        t = torch.where(offset.abs() < eps, point + torch.where(offset >= 0, eps, -eps), t)
    return t


def binary_linear_examples(**fixed):
    """``in_features`` / ``out_features`` (K, N) and ``inner_dim`` (an extra dim of 2 between batch and K) are
    shape keys, not arguments of the spec: a layer that packs K into 32-bit words fixes K to multiples of 32 (its
    tensors are then drawn from a seed, see :func:`_seeded_tensors`), one that takes only [batch, K] fixes
    ``inner_dim=False``."""
    S.check_fixed(fixed, ("batch", "bias", "in_features", "out_features", "inner_dim") + _LAYER_HYPER,
                  "layer.binary_linear")

    @st.composite
    def draw_example(draw):
        hyper = _layer_hyper(draw, fixed)
        # K under one 32-bit word, or past it with a tail up to three words (drawn from a seed)
        k = draw(S.hyper(fixed, "in_features", st.integers(1, 6) | S.reduction_lengths(33, 96)))
        n = draw(S.hyper(fixed, "out_features", st.integers(1, 4)))
        shape = (draw(_batch(fixed)),) + ((2,) if draw(S.hyper(fixed, "inner_dim", st.booleans())) else ()) + (k,)
        wide = "in_features" in fixed or k > 32
        x = draw((_seeded_tensors if wide else S.tensors)(shape, away_from=_input_edges(hyper), eps=_FAR))
        if wide and "in_features" not in fixed and hyper["input_quant"] == "none":
            x = _quarters(x)
        if wide:
            weight = _seeded_tensors((n, k), away_from=(0.0,), salt=1)
        else:
            weight = S.tensors((n, k), away_from=(0.0,), eps=_FAR)
        params = {"weight": draw(weight)}
        if draw(S.hyper(fixed, "bias", st.booleans())):
            params["bias"] = draw(S.tensors((n,)))
        if k > 256 and "in_features" not in fixed:  # a long draw: one row at the accumulator's extreme +K
            x = S.agree_with(x, params["weight"][0])
        return Example(x, params, hyper)

    return draw_example()


def _beyond_one_word(value: int) -> bool:
    return value > 32


def _quarters(t: torch.Tensor) -> torch.Tensor:
    """``t`` rounded to quarters: a wide layer's float sums of them with +-1 weights are exact in float32, so a
    float32 layer is not judged on float32 summation against the float64 spec."""
    return (t * 4).round() / 4


def _with_edges(t: torch.Tensor, hyper: dict) -> torch.Tensor:
    """``t`` with exact decision points put in (0, +-1, +-threshold) and, where the input is binarized, magnitudes
    of 1e4. An input the layer does not binarize is rounded to quarters (:func:`_quarters`)."""
    flat = t.flatten().clone()
    if hyper["input_quant"] == "none":
        flat = _quarters(flat)
    flat[::5] = 0.0
    t_abs = hyper["threshold"] or 0.5
    values = (1.0, -1.0, t_abs, -t_abs) + ((1e4, -1e4) if hyper["input_quant"] != "none" else ())
    for start, value in enumerate(values):
        flat[1 + start::11] = value
    return flat.reshape(t.shape)


#: The two settings of the binary layers' edge examples (each kept where a subject fixes it).
_LAYER_EDGE_SETTINGS = (dict(input_quant="clipped_ste", threshold=1.0, zero_value=1.0, weight_scaling="none",
                             bias=True),
                        dict(input_quant="ste", threshold=0.5, zero_value=-1.0, weight_scaling="channel", bias=False))


def _layer_edge_hyper(fixed, setting: dict) -> dict:
    return {name: S.edge_hyper(fixed, name, setting[name]) for name in _LAYER_HYPER}


def _layer_edge_params(fixed, setting: dict, weight_shape: tuple, *, salt: int) -> dict:
    """A binary layer's edge weight (every 13th element exactly 0: the zero_value convention) and, where the setting
    or the subject has one, its bias (seeded with ``salt + 10``)."""
    weight = _seeded(weight_shape, salt)
    weight.flatten()[::13] = 0.0
    params = {"weight": weight}
    if S.edge_hyper(fixed, "bias", setting["bias"]):
        params["bias"] = _seeded((weight_shape[0],), salt + 10)
    return params


def binary_linear_edges(**fixed) -> list[Example]:
    """K past two 32-bit words with a tail (69) and exactly three (96), N of 33 and 5 (a subject that fixes them
    keeps its own, past one word where it allows); inputs with 0, +-1, +-threshold exactly and |x| = 1e4 (where
    binarized), weights with exact zeros (the zero_value convention)."""
    examples = []
    for i, setting in enumerate(_LAYER_EDGE_SETTINGS):
        hyper = _layer_edge_hyper(fixed, setting)
        k = S.edge_hyper(fixed, "in_features", (69, 96)[i], prefer=_beyond_one_word)
        n = S.edge_hyper(fixed, "out_features", (33, 5)[i])
        inner = S.edge_hyper(fixed, "inner_dim", bool(i))
        shape = (S.edge_hyper(fixed, "batch", 2),) + ((2,) if inner else ()) + (k,)
        x = _with_edges(_seeded(shape, 30 + i) * 4.0, hyper)
        params = _layer_edge_params(fixed, setting, (n, k), salt=40 + i)
        examples.append(Example(x, params, hyper))
    return examples


def _beyond_256(value: int) -> bool:
    return value > 256


def binary_linear_size_edges(**fixed) -> list[Example]:
    """K of ``WIDE_K`` (or the subject's own, past 256 where it allows), two input rows whose signs all agree and all
    disagree with the first weight row (outputs of exactly +K and -K before scaling and bias: an accumulator narrower
    than K wraps there), magnitudes in quarters (a float sum of them is exact in float32); the two edge settings in
    turn."""
    examples, seen = [], set()
    for i, k in enumerate(S.WIDE_K):
        setting = _LAYER_EDGE_SETTINGS[i % 2]
        hyper = _layer_edge_hyper(fixed, setting)
        k = S.edge_hyper(fixed, "in_features", k, prefer=_beyond_256)
        if k in seen:
            continue
        seen.add(k)
        params = _layer_edge_params(fixed, setting, (S.edge_hyper(fixed, "out_features", 3), k), salt=120 + i)
        params["weight"] = _seeded(params["weight"].shape, 120 + i)  # no zero: every weight has a sign to agree with
        x = _quarters(S.signs_agreeing_with(params["weight"][0], _seeded((k,), 130 + i) * 4.0))
        if S.edge_hyper(fixed, "inner_dim", False):
            x = x.unsqueeze(1).repeat(1, 2, 1)
        batch = S.edge_hyper(fixed, "batch", 2)
        examples.append(Example(x.repeat((batch + 1) // 2, *(1,) * (x.dim() - 1))[:batch], params, hyper))
    return examples


def binary_conv2d_examples(**fixed):
    """``in_channels`` and ``size`` are shape keys, not arguments of the spec: a layer that packs channels into 32-bit
    words fixes ``in_channels`` to multiples of 32 (a multiple of ``groups``; its tensors are then drawn from a seed,
    see :func:`_seeded_tensors`); ``size`` is the input's height and width before they are raised to the kernel's
    reach (``dilation * (k - 1) + 1 - 2 * padding``) where smaller."""
    names = ("batch", "bias", "stride", "padding", "dilation", "groups", "pad_value", "in_channels", "size") \
        + _LAYER_HYPER
    S.check_fixed(fixed, names, "layer.binary_conv2d")

    @st.composite
    def draw_example(draw):
        hyper = _layer_hyper(draw, fixed)
        cfg = draw(S.conv2d_configs(max_channels=2, max_side=4))
        for name in ("stride", "padding", "dilation", "groups"):
            hyper[name] = draw(S.hyper(fixed, name, st.just(cfg[name])))
        hyper["pad_value"] = draw(S.hyper(fixed, "pad_value", st.sampled_from(binary.PAD_VALUES)))
        groups = hyper["groups"]
        cin, cout = groups * max(1, cfg["in_channels"] // cfg["groups"]), groups * max(1, cfg["out_channels"] // cfg["groups"])
        if "in_channels" in fixed:
            cin = draw(S.value_or_strategy(fixed["in_channels"]))
            if cin % groups:
                raise ValueError(f"in_channels={cin} is not a multiple of groups={groups}")
        elif draw(st.booleans()):  # each group's channels past one 32-bit word with a tail up to three words
            cin = groups * draw(st.integers(33, 96))
        k = cfg["kernel_size"]
        height = draw(S.value_or_strategy(fixed["size"])) if "size" in fixed else cfg["height"]  # as in_channels
        if cin > 32 and "in_channels" not in fixed:
            # no 1x1 input with many channels: torch's CPU bfloat16 conv2d weight gradient reads uninitialised memory
            # for it at stride 2 and padding 1 from 16 channels (docs/depth.md), which no library under test causes
            height = max(height, 2)
        side = max(height, hyper["dilation"] * (k - 1) + 1 - 2 * hyper["padding"], 1)
        wide = "in_channels" in fixed or cin > 32
        x = draw((_seeded_tensors if wide else S.tensors)((draw(_batch(fixed)), cin, side, side),
                                                          away_from=_input_edges(hyper), eps=_FAR))
        if wide and "in_channels" not in fixed and hyper["input_quant"] == "none":
            x = _quarters(x)
        w_shape = (cout, cin // groups, k, k)
        if wide:
            weight = _seeded_tensors(w_shape, away_from=(0.0,), salt=1)
        else:
            weight = S.tensors(w_shape, away_from=(0.0,), eps=_FAR)
        params = {"weight": draw(weight)}
        if draw(S.hyper(fixed, "bias", st.booleans())):
            params["bias"] = draw(S.tensors((cout,)))
        return Example(x, params, hyper)

    return draw_example()


def binary_conv2d_edges(**fixed) -> list[Example]:
    """Input channels past two 32-bit words with a tail (69) and exactly three (96) (a subject that fixes them keeps
    its own, past one word where it allows), a 3x3 kernel over a 4x4 input with padding (the pad_value convention at
    every border), stride 1 and 2, one and two groups; inputs and weights as the linear layer's edges."""
    examples = []
    for i, setting in enumerate(_LAYER_EDGE_SETTINGS):
        hyper = _layer_edge_hyper(fixed, setting)
        geometry = dict(stride=i + 1, padding=1, dilation=1, groups=i + 1)
        hyper.update({name: S.edge_hyper(fixed, name, value) for name, value in geometry.items()})
        hyper["pad_value"] = S.edge_hyper(fixed, "pad_value", binary.PAD_VALUES[1 + i])
        groups = hyper["groups"]
        cin = S.edge_hyper(fixed, "in_channels", (69, 96)[i], prefer=_beyond_one_word)
        if cin % groups:
            continue
        cout = groups * (3, 2)[i]
        side = S.edge_hyper(fixed, "size", 4)
        side = max(side, 3 - 2 * hyper["padding"], 1)
        x = _with_edges(_seeded((S.edge_hyper(fixed, "batch", 2), cin, side, side), 60 + i) * 4.0, hyper)
        params = _layer_edge_params(fixed, setting, (cout, cin // groups, 3, 3), salt=70 + i)
        examples.append(Example(x, params, hyper))
    return examples


#: Input channels of the conv's size edges: K = 9 x channels of 261, 324 and 513 (as ``WIDE_K``), the channels
#: themselves within one, past one and past two 32-bit words.
_WIDE_CONV_CHANNELS = (29, 36, 57)


def binary_conv2d_size_edges(**fixed) -> list[Example]:
    """Input channels of ``_WIDE_CONV_CHANNELS`` (or the subject's own, with K past 256 where it allows) under a 3x3
    kernel: K = 9 x channels past 256. The first output channel of each group has, in every kernel position, the
    signs of a per-channel pattern that the first input carries at every pixel and the second carries negated, so
    every window inside the input sums to exactly +K and -K; the two edge settings in turn, unpadded, stride 1."""
    examples, seen = [], set()
    for i, channels in enumerate(_WIDE_CONV_CHANNELS):
        setting = _LAYER_EDGE_SETTINGS[i % 2]
        hyper = _layer_edge_hyper(fixed, setting)
        geometry = dict(stride=1, padding=0, dilation=1, groups=1)
        hyper.update({name: S.edge_hyper(fixed, name, value) for name, value in geometry.items()})
        hyper["pad_value"] = S.edge_hyper(fixed, "pad_value", binary.PAD_VALUES[1 + i % 2])
        groups = hyper["groups"]
        cin = S.edge_hyper(fixed, "in_channels", channels, prefer=lambda c: _beyond_256(9 * c))
        if cin % groups or cin in seen:
            continue
        seen.add(cin)
        reach = 2 * hyper["dilation"] + 1
        side = max(S.edge_hyper(fixed, "size", 3), reach - 2 * hyper["padding"], 1)
        pattern = torch.where(_seeded((cin,), 140 + i) > 0, 1.0, -1.0).to(torch.float64)
        magnitudes = _quarters(_seeded((2, cin, side, side), 150 + i).abs() * 4.0).clamp(min=0.25)
        x = torch.stack([pattern, -pattern])[:, :, None, None] * magnitudes
        batch = S.edge_hyper(fixed, "batch", 2)
        x = x.repeat((batch + 1) // 2, 1, 1, 1)[:batch]
        cout = groups * 2
        params = _layer_edge_params(fixed, setting, (cout, cin // groups, 3, 3), salt=160 + i)
        weight = _seeded((cout, cin // groups, 3, 3), 160 + i)
        for g in range(groups):  # the first output channel of group g agrees with the pattern of its channels
            rows = pattern[g * (cin // groups):(g + 1) * (cin // groups)]
            weight[g * 2] = weight[g * 2].abs().clamp(min=0.25) * rows[:, None, None]
        params["weight"] = weight
        examples.append(Example(x, params, hyper))
    return examples


def bie_binary_conv2d_examples(**fixed):
    names = ("batch", "scale_w", "stride", "padding", "dilation", "quantize_grad_weight", "zero_value", "pad_value")
    S.check_fixed(fixed, names, "layer.bie_binary_conv2d")

    @st.composite
    def draw_example(draw):
        cfg = draw(S.conv2d_configs(max_channels=2, max_side=4))
        hyper = {name: draw(S.hyper(fixed, name, st.just(cfg[name]))) for name in ("stride", "padding", "dilation")}
        hyper.update(scale_w=draw(S.hyper(fixed, "scale_w", st.sampled_from([1.0, 0.5, 2.0]))),
                     quantize_grad_weight=draw(S.hyper(fixed, "quantize_grad_weight", st.booleans())),
                     zero_value=draw(S.hyper(fixed, "zero_value", st.sampled_from(quant.ZERO_VALUES))),
                     pad_value=draw(S.hyper(fixed, "pad_value", st.sampled_from(binary.PAD_VALUES))))
        cin, cout, k = cfg["in_channels"], cfg["out_channels"], cfg["kernel_size"]
        side = max(cfg["height"], hyper["dilation"] * (k - 1) + 1 - 2 * hyper["padding"], 1)
        scale_a = draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]))
        bias_a = torch.tensor([draw(st.sampled_from([-0.5, -0.25, 0.0, 0.25, 0.5])) for _ in range(cin)],
                              dtype=torch.float64)
        # Draw the shifted input away from sign's 0 and the clip edges |xs| = scale_a, then unshift.
        xs = draw(S.tensors((draw(S.hyper(fixed, "batch", st.just(1))), cin, side, side),
                            away_from=(0.0, scale_a, -scale_a), eps=0.05))
        params = {"weight": draw(S.tensors((cout, cin, k, k), away_from=(0.0,), eps=_FAR)),
                  "scale_a": torch.tensor(scale_a, dtype=torch.float64), "bias_a": bias_a}
        return Example(xs - bias_a[:, None, None], params, hyper)

    return draw_example()


# ----------------------------------------------------------------------------------------------- declarations

_PER_TENSOR = "Statistics span all of x (dim 0 included): examples draw a batch of one so per-sample == batch."

SPECS = (
    Spec(id="quant.sign_ste", fn=quant.sign_ste, examples=_sign_examples(quant.sign_ste), edges=_sign_edges(quant.sign_ste), margin=_x_margin,
         doc="sign with sign(0)=zero_value; identity STE. Margin: x."),
    Spec(id="quant.sign_clipped_ste", fn=quant.sign_clipped_ste, examples=_sign_examples(quant.sign_clipped_ste), edges=_sign_edges(quant.sign_clipped_ste),
         margin=_x_margin, doc="sign; gradient 1[|x| <= t] (inclusive) or 1[|x| < t]; t None/0 disables. Margin: x."),
    Spec(id="quant.approx_sign", fn=quant.approx_sign, examples=_sign_examples(quant.approx_sign), edges=_sign_edges(quant.approx_sign), margin=_x_margin,
         doc="sign; Bi-Real ApproxSign gradient (2 - 2|x|) on |x| <= 1. Margin: x."),
    Spec(id="quant.swish_sign", fn=quant.swish_sign, examples=_sign_examples(quant.swish_sign), edges=_sign_edges(quant.swish_sign), margin=_x_margin,
         doc="sign; BNN+ SwishSign gradient with beta. Margin: x."),
    Spec(id="quant.sign_hardtanh_ste", fn=quant.sign_hardtanh_ste, examples=_sign_examples(quant.sign_hardtanh_ste), edges=_sign_edges(quant.sign_hardtanh_ste),
         margin=_x_margin, doc="sign; hardtanh's gradient 1[-1 < x < 1] (open). Margin: x."),
    Spec(id="quant.binarize_weight", fn=quant.binarize_weight, examples=binarize_weight_examples, margin=_x_margin,
         edges=binarize_weight_edges,
         doc="a * sign(w), a none / mean|w| per tensor / per output channel (dim 0). scaling='tensor' is a "
             "statistic over dim 0: its examples draw a batch of one. Margin: x."),
    Spec(id="quant.uniform", fn=quant.uniform_quantize, examples=uniform_examples, margin=uniform_margin, edges=uniform_edges,
         doc="k-bit fake quantization, round-then-add-zero-point, STE 1 inside the integer range. "
             "Margin: distance of x to the nearest rounding edge, in units of x."),
    Spec(id="quant.dorefa_weight", fn=quant.dorefa_weight, examples=dorefa_weight_examples,
         margin=dorefa_weight_margin, edges=dorefa_weight_edges, doc="DoReFa weights (max|tanh| over the tensor). " + _PER_TENSOR
         + " Margin: distance of r*n to the nearest rounding edge, in steps."),
    Spec(id="quant.dorefa_activation", fn=quant.dorefa_activation, examples=dorefa_activation_examples,
         margin=dorefa_activation_margin, edges=dorefa_activation_edges, doc="DoReFa activations. Margin: distance of x to a rounding or clip edge."),
    Spec(id="quant.pact", fn=quant.pact, examples=pact_examples, margin=pact_margin, edges=pact_edges,
         doc="PACT with learnable alpha (shape ()). Margin: distance of x to a rounding or clip edge."),
    Spec(id="quant.lsq", fn=quant.lsq, examples=lsq_examples, margin=lsq_margin, edges=lsq_edges,
         doc="LSQ with learnable step (shape ()) and explicit grad_scale. "
             "Margin: distance of x to a rounding or clip edge, in units of x."),
    Spec(id="quant.ternary", fn=quant.ternary, examples=ternary_examples, margin=ternary_margin, edges=ternary_edges,
         doc="TWN ternary. " + _PER_TENSOR + " Margin: |x| - delta."),
    Spec(id="packing.pack_signs", fn=packing.pack_signs, examples=pack_signs_examples, differentiable=False,
         doc="Output dtype is int8/16/32/64 by word_bits (signed words), not the input's: compare against "
             "the reference output's dtype.", edges=pack_signs_edges,
         size_edges=pack_signs_size_edges),
    Spec(id="packing.binary_matmul", fn=packing.binary_matmul, examples=binary_matmul_examples,
         doc="sign(x) @ sign(w).T through packing + XNOR-popcount; identity STE gradient.", edges=binary_matmul_edges,
         size_edges=binary_matmul_size_edges),
    Spec(id="layer.binary_linear", fn=binary.binary_linear, examples=binary_linear_examples,
         doc="Linear on binarized input and weight; STE gradients.", edges=binary_linear_edges,
         size_edges=binary_linear_size_edges),
    Spec(id="layer.binary_conv2d", fn=binary.binary_conv2d, examples=binary_conv2d_examples,
         doc="Conv2d on binarized input (padded with pad_value after binarizing) and weight; STE gradients.",
         edges=binary_conv2d_edges, size_edges=binary_conv2d_size_edges),
    Spec(id="layer.bie_binary_conv2d", fn=binary.bie_binary_conv2d, examples=bie_binary_conv2d_examples,
         doc="bitorch-engine CUTLASS binary conv, training semantics of its hand-written backward. No jvp. "
             "1/sqrt(numel) and the int8 grad_weight max span the batch: examples draw a batch of one. "
             "With quantize_grad_weight the int8 levels of grad_weight can differ by one between dtypes "
             "(rounding of the float gradient) and are undefined when max(grad_weight) <= 0."),
)
