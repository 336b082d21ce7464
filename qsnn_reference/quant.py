"""Binarizers and k-bit quantizers with their straight-through (STE) gradients.

Every spec is a pure function of its tensors and keyword-only options. The forward value is computed from
detached inputs, exactly as the direct formula would compute it; the spec'd gradient is attached with
:func:`_attach`, which adds ``d * (p - p.detach())`` (zero in value, ``d`` in derivative). This keeps the
forward bit-exact, gives reverse mode and forward mode (jvp) the same Jacobian by construction, and stays
traceable by ``torch.compile(fullgraph=True)`` (Dynamo refuses ``autograd.Function``s that define a custom
``jvp``), ``torch.export``, vmap and grad. The gradient formula of each spec is also a plain function
``<name>_grad`` so it can be tested on its own; for elementwise STEs the forward literally calls it.

Inputs must be finite: ``x - x.detach()`` is NaN for an infinite ``x``.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from qsnn_reference import _validate

ZERO_VALUES = (-1.0, 0.0, 1.0)
ROUNDING_MODES = ("half_even", "half_up", "half_away")


# ----------------------------------------------------------------------------------------------- helpers

def _sign(x: torch.Tensor, zero_value: float) -> torch.Tensor:
    """sign(x) with sign(0) = ``zero_value`` (torch.sign gives 0, bitorch and brevitas give +1)."""
    return torch.where(x == 0, zero_value, torch.sign(x))


def _attach(value: torch.Tensor, *pairs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """``value`` (no graph) whose derivative with respect to each ``p`` is the elementwise ``d`` (broadcast;
    a broadcast ``p`` such as a scalar step gets the sum). ``d`` must be finite and carry no graph."""
    out = value
    for p, d in pairs:
        out = out + d * (p - p.detach())
    return out


def _check_zero_value(zero_value: float) -> None:
    _validate.one_of("zero_value", zero_value, ZERO_VALUES)


def round_half(v: torch.Tensor, mode: str) -> torch.Tensor:
    """Round to the nearest integer; ``mode`` decides ties only: ``half_even`` (torch.round, banker's),
    ``half_up`` (toward +inf, ``floor(v + 0.5)``) or ``half_away`` (away from zero, C ``round``).
    Ties are detected exactly (``v - trunc(v)`` is exact in floating point)."""
    _validate.one_of("rounding", mode, ROUNDING_MODES)
    nearest = torch.round(v)
    if mode == "half_even":
        return nearest
    tie = (v - torch.trunc(v)).abs() == 0.5
    if mode == "half_up":
        return torch.where(tie, torch.ceil(v), nearest)
    return torch.where(tie, torch.trunc(v) + torch.sign(v), nearest)


def _integer_range(bits: int, signed: bool, narrow_range: bool) -> tuple[int, int]:
    if signed:
        return -(2 ** (bits - 1)) + int(narrow_range), 2 ** (bits - 1) - 1
    return 0, 2 ** bits - 1 - int(narrow_range)


# ----------------------------------------------------------------------------------------------- sign family

def sign_ste_grad(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """Identity straight-through: ``grad_input = grad_output``."""
    return grad_output


def sign_ste(x: torch.Tensor, *, zero_value: float = 1.0) -> torch.Tensor:
    """Binarize with the identity straight-through estimator.

    Forward:  ``y = sign(x)`` with ``sign(0) = zero_value`` (one of -1, 0, +1; default +1 as bitorch's
              ``SignFunction`` and brevitas' ``binary_sign``; ``torch.sign`` gives 0).
    Backward: ``dL/dx = dL/dy`` everywhere (no cancellation; bitorch ``Sign`` / ``STE``).
    Dtype:    follows ``x``.
    Shape:    elementwise, same as ``x``.
    """
    _check_zero_value(zero_value)
    xd = x.detach()
    return _sign(xd, zero_value) + sign_ste_grad(xd, x - xd)


def sign_clipped_ste_grad(x: torch.Tensor, grad_output: torch.Tensor, *, threshold: float | None,
                          inclusive: bool = True) -> torch.Tensor:
    """Gradient cancellation: pass ``grad_output`` where ``|x| <= threshold`` (``<`` when not inclusive)."""
    if threshold is None or threshold == 0:
        return grad_output
    inside = (x.abs() <= threshold) if inclusive else (x.abs() < threshold)
    return torch.where(inside, grad_output, torch.zeros_like(grad_output))


def sign_clipped_ste(x: torch.Tensor, *, threshold: float | None = 1.0, zero_value: float = 1.0,
                     inclusive: bool = True) -> torch.Tensor:
    """Binarize with the clipped straight-through estimator (gradient cancellation).

    Forward:  ``y = sign(x)``, ``sign(0) = zero_value``.
    Backward: ``dL/dx = dL/dy * 1[|x| <= threshold]`` (``inclusive=True``, bitorch ``GradientCancellation``)
              or ``1[|x| < threshold]`` (``inclusive=False``). ``threshold`` None or 0 disables cancellation
              (``dL/dx = dL/dy``), as bitorch documents. With threshold 1 and inclusive=True this is
              BNN's ``1[|x| <= 1]`` STE.
    Dtype:    follows ``x``; ``threshold`` is compared in ``x``'s dtype.
    Shape:    elementwise.
    """
    _check_zero_value(zero_value)
    if threshold is not None:
        _validate.in_range("threshold", threshold, 0.0)
    _validate.one_of("inclusive", inclusive, (True, False))
    xd = x.detach()
    return _sign(xd, zero_value) + sign_clipped_ste_grad(xd, x - xd, threshold=threshold, inclusive=inclusive)


def sign_hardtanh_ste_grad(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """The derivative of ``hardtanh`` as autograd computes it: ``grad_output * 1[-1 < x < 1]`` (open interval)."""
    return torch.where((x > -1) & (x < 1), grad_output, torch.zeros_like(grad_output))


def sign_hardtanh_ste(x: torch.Tensor, *, zero_value: float = 1.0) -> torch.Tensor:
    """Binarize with the gradient of hardtanh (``sign(x)`` forward, ``hardtanh(x)`` backward).

    Forward:  ``y = sign(x)``, ``sign(0) = zero_value``.
    Backward: ``dL/dx = dL/dy * 1[-1 < x < 1]``: the open interval, as ``torch.nn.functional.hardtanh``'s
              autograd (``torch.clamp``'s autograd would pass at ``|x| == 1``; see ``sign_clipped_ste``).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    _check_zero_value(zero_value)
    xd = x.detach()
    return _sign(xd, zero_value) + sign_hardtanh_ste_grad(xd, x - xd)


def approx_sign_grad(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """Bi-Real Net ApproxSign: ``grad_output * (2 - 2|x|) * 1[|x| <= 1]``."""
    return grad_output * torch.clamp(2 - 2 * x.abs(), min=0)


def approx_sign(x: torch.Tensor, *, zero_value: float = 1.0) -> torch.Tensor:
    """Binarize with the ApproxSign gradient of Bi-Real Net (Liu et al. 2018, bitorch ``ApproxSign``).

    Forward:  ``y = sign(x)``, ``sign(0) = zero_value``.
    Backward: ``dL/dx = dL/dy * (2 - 2|x|)`` for ``|x| <= 1``, else 0 (continuous at ``|x| = 1``).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    _check_zero_value(zero_value)
    xd = x.detach()
    return _sign(xd, zero_value) + approx_sign_grad(xd, x - xd)


def swish_sign_grad(x: torch.Tensor, grad_output: torch.Tensor, *, beta: float) -> torch.Tensor:
    """BNN+ SwishSign: ``grad_output * beta * (2 - beta*x*tanh(beta*x/2)) / (1 + cosh(beta*x))``."""
    bx = beta * x
    return grad_output * (beta * (2 - bx * torch.tanh(bx / 2)) / (1 + torch.cosh(bx)))


def swish_sign(x: torch.Tensor, *, beta: float = 5.0, zero_value: float = 1.0) -> torch.Tensor:
    """Binarize with the SwishSign gradient of BNN+ (Darabi et al. 2018; bitorch ``SwishSign``, beta 5.0).

    Forward:  ``y = sign(x)``, ``sign(0) = zero_value``.
    Backward: ``dL/dx = dL/dy * beta * (2 - beta*x*tanh(beta*x/2)) / (1 + cosh(beta*x))``, the derivative of
              ``SS_beta(x) = 2*sigmoid(beta*x) * (1 + beta*x*(1 - sigmoid(beta*x))) - 1``. For large
              ``|beta*x|`` cosh overflows to inf and the gradient is 0.
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    _check_zero_value(zero_value)
    _validate.positive("beta", beta)
    xd = x.detach()
    return _sign(xd, zero_value) + swish_sign_grad(xd, x - xd, beta=beta)


# ----------------------------------------------------------------------------------------------- weights

WEIGHT_SCALINGS = ("none", "tensor", "channel")


def _per_channel_sum(t: torch.Tensor) -> torch.Tensor:
    """``t`` summed over every dim but dim 0 (a 1-D weight: each element is its channel; torch reads ``dim=()`` as
    every dim)."""
    return t.sum(dim=tuple(range(1, t.dim())), keepdim=True) if t.dim() > 1 else t


def _weight_scale(w: torch.Tensor, scaling: str) -> torch.Tensor:
    if scaling == "none":
        return torch.ones((), dtype=w.dtype, device=w.device)
    if scaling == "tensor":
        return w.abs().mean()
    return _per_channel_sum(w.abs()) / w[0].numel()


def binarize_weight_grad(x: torch.Tensor, grad_output: torch.Tensor, *, scaling: str = "none",
                         zero_value: float = 1.0, scale_gradient: bool = False) -> torch.Tensor:
    """``g * a``, plus ``sign(x) * sum_group(g * sign_zv(x)) / n`` when ``scale_gradient``."""
    a = _weight_scale(x, scaling)
    grad = grad_output * a
    if scale_gradient and scaling != "none":
        b = _sign(x, zero_value)
        if scaling == "tensor":
            total, n = (grad_output * b).sum(), x.numel()
        else:
            total, n = _per_channel_sum(grad_output * b), x[0].numel()
        grad = grad + torch.sign(x) * total / n
    return grad


def binarize_weight(x: torch.Tensor, *, scaling: str = "none", zero_value: float = 1.0,
                    scale_gradient: bool = False) -> torch.Tensor:
    """Binarize a weight tensor with an optional XNOR-Net scale.

    Forward:  ``y = a * sign(x)`` (``sign(0) = zero_value``) with ``a = 1`` (``"none"``), ``mean|x|`` over the
              whole tensor (``"tensor"``) or ``mean|x|`` over all dims but dim 0, per output channel
              (``"channel"``, XNOR-Net).
    Backward: identity STE through sign. ``scale_gradient=False``: ``a`` is a constant,
              ``dL/dx = a * dL/dy``. ``scale_gradient=True``: ``a`` is differentiated too,
              ``dL/dx = a * dL/dy + sign(x) / n * sum_group(dL/dy * sign_zv(x))`` where ``sign`` is torch's
              (0 at 0, the derivative of |x|), ``n`` the group size (XNOR-Net without its |x|<=1 clip).
    Dtype:    follows ``x``.
    Shape:    same as ``x`` (``x`` is a weight: dim 0 = output channels).
    Per-sample: ``"tensor"`` scaling is a statistic over dim 0 too, so it is not per-sample.
    """
    _validate.one_of("scaling", scaling, WEIGHT_SCALINGS)
    _check_zero_value(zero_value)
    _validate.one_of("scale_gradient", scale_gradient, (True, False))
    xd = x.detach()
    value = _sign(xd, zero_value) * _weight_scale(xd, scaling)
    if not scale_gradient or scaling == "none":
        return value + binarize_weight_grad(xd, x - xd, scaling=scaling)
    # The gradient of a(x) * sign(x) with the sign's STE: autograd through the differentiable scale.
    return _attach(value, (x, _weight_scale(xd, scaling))) + _sign(xd, zero_value) * (
        _weight_scale(x, scaling) - _weight_scale(xd, scaling))


# ----------------------------------------------------------------------------------------------- k-bit

def _per_channel(x: torch.Tensor, name: str, value, channel_dim: int | None, *, kind: type) -> torch.Tensor:
    """A Python number or sequence as a tensor broadcastable against ``x`` along ``channel_dim``."""
    if channel_dim is None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name} must be a number when channel_dim is None, got {value!r}")
        return x.new_tensor(float(value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = (value,) * x.shape[channel_dim]
    if not isinstance(value, Sequence) or len(value) != x.shape[channel_dim]:
        raise ValueError(f"{name} must have x.shape[channel_dim] = {x.shape[channel_dim]} entries, got {value!r}")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and v != int(v)):
            raise ValueError(f"{name} entries must be {kind.__name__}s, got {v!r}")
    dim = channel_dim % x.dim()
    return x.new_tensor([float(v) for v in value]).reshape((-1,) + (1,) * (x.dim() - 1 - dim))


def uniform_quantize_grad(x: torch.Tensor, grad_output: torch.Tensor, *, scale, zero_point=0, bits: int = 8,
                          signed: bool = True, narrow_range: bool = False, rounding: str = "half_even",
                          channel_dim: int | None = None) -> torch.Tensor:
    """``grad_output * 1[qmin <= round(x/scale) + zero_point <= qmax]`` (the fake-quantize STE)."""
    qmin, qmax = _integer_range(bits, signed, narrow_range)
    s = _per_channel(x, "scale", scale, channel_dim, kind=float)
    z = _per_channel(x, "zero_point", zero_point, channel_dim, kind=int)
    q = round_half(x / s, rounding) + z
    return torch.where((q >= qmin) & (q <= qmax), grad_output, torch.zeros_like(grad_output))


def uniform_quantize(x: torch.Tensor, *, scale: float | Sequence[float], zero_point: int | Sequence[int] = 0,
                     bits: int = 8, signed: bool = True, narrow_range: bool = False, rounding: str = "half_even",
                     channel_dim: int | None = None) -> torch.Tensor:
    """k-bit uniform (fake) quantization, symmetric (``zero_point = 0``) or affine.

    Forward:  ``q = clamp(round(x / scale) + zero_point, qmin, qmax)``, ``y = (q - zero_point) * scale``
              (``torch.fake_quantize_per_tensor_affine``'s order: round, then add the zero point).
              Integer range: signed ``[-2^(b-1) (+1 if narrow_range), 2^(b-1) - 1]``, unsigned
              ``[0, 2^b - 1 (-1 if narrow_range)]``. ``rounding`` breaks ties: ``half_even`` (torch.round),
              ``half_up`` or ``half_away``. Per-tensor: ``scale``/``zero_point`` numbers, ``channel_dim``
              None. Per-channel: sequences of length ``x.shape[channel_dim]`` (a number is repeated);
              a negative ``channel_dim`` is robust to vmap. Scale and zero point are constants (no gradient;
              see ``lsq`` for a learned step).
    Backward: ``dL/dx = dL/dy * 1[qmin <= round(x/scale) + zero_point <= qmax]`` (inclusive, as
              ``torch.fake_quantize_*``), i.e. 1 inside the clip range, 0 outside.
    Dtype:    follows ``x`` (``x / scale`` is computed in ``x``'s dtype).
    Shape:    same as ``x``.
    """
    _validate.integer("bits", bits, min_value=1)
    _validate.one_of("signed", signed, (True, False))
    _validate.one_of("narrow_range", narrow_range, (True, False))
    _validate.one_of("rounding", rounding, ROUNDING_MODES)
    qmin, qmax = _integer_range(bits, signed, narrow_range)
    if qmin > qmax:
        raise ValueError(f"bits={bits} with signed={signed}, narrow_range={narrow_range} leaves no integer level")
    if channel_dim is not None:
        _validate.integer("channel_dim", channel_dim, min_value=-x.dim(), max_value=x.dim() - 1)
    for s in (scale,) if isinstance(scale, (int, float)) else tuple(scale):
        _validate.positive("scale", s)
    for z in (zero_point,) if isinstance(zero_point, (int, float)) else tuple(zero_point):
        _validate.integer("zero_point", z, min_value=qmin, max_value=qmax)
    options = dict(scale=scale, zero_point=zero_point, bits=bits, signed=signed, narrow_range=narrow_range,
                   rounding=rounding, channel_dim=channel_dim)
    xd = x.detach()
    s = _per_channel(xd, "scale", scale, channel_dim, kind=float)
    z = _per_channel(xd, "zero_point", zero_point, channel_dim, kind=int)
    q = torch.clamp(round_half(xd / s, rounding) + z, qmin, qmax)
    return (q - z) * s + uniform_quantize_grad(xd, x - xd, **options)


DOREFA_WEIGHT_GRADIENTS = ("identity", "tanh")


def _abs_max(t: torch.Tensor) -> torch.Tensor:
    """max|t| over the whole tensor. The dims are named: torch.onnx's exporter (onnxscript 0.7.2) cannot export
    ``amax()`` without them, and a spec runs under every transform."""
    return t.abs().amax(dim=tuple(range(t.dim())))


def dorefa_weight_grad(x: torch.Tensor, grad_output: torch.Tensor, *, gradient: str = "identity") -> torch.Tensor:
    """``identity``: ``g``; ``tanh``: ``g * (1 - tanh(x)^2) / max|tanh(x)|``."""
    if gradient == "identity":
        return grad_output
    t = torch.tanh(x)
    return grad_output * (1 - t * t) / _abs_max(t)


def dorefa_weight(x: torch.Tensor, *, bits: int = 1, gradient: str = "identity") -> torch.Tensor:
    """DoReFa-Net weight quantizer (Zhou et al. 2016; bitorch ``WeightDoReFa``).

    Forward:  ``r = tanh(x) / (2 max|tanh(x)|) + 1/2``, ``y = 2 * round(r * n) / n - 1`` with ``n = 2^bits - 1``
              and torch.round (half to even); the max is over the whole tensor.
    Backward: ``gradient="identity"``: ``dL/dx = dL/dy`` (bitorch's ``WeightDoReFaFunction``, STE over the
              whole quantizer). ``gradient="tanh"``: STE through the rounding only, the max treated as a
              constant: ``dL/dx = dL/dy * (1 - tanh(x)^2) / max|tanh(x)|``.
    Dtype:    follows ``x``.
    Shape:    same as ``x``. Undefined (NaN) for an all-zero ``x``.
    Per-sample: the max is over all of ``x`` (dim 0 included), so the quantizer is not per-sample.
    """
    _validate.integer("bits", bits, min_value=1)
    _validate.one_of("gradient", gradient, DOREFA_WEIGHT_GRADIENTS)
    n = 2 ** bits - 1
    xd = x.detach()
    t = torch.tanh(xd)
    r = t / (2 * _abs_max(t)) + 0.5
    value = 2 * (torch.round(r * n) / n) - 1
    return value + dorefa_weight_grad(xd, x - xd, gradient=gradient)


DOREFA_ACTIVATION_GRADIENTS = ("identity", "clipped")


def dorefa_activation_grad(x: torch.Tensor, grad_output: torch.Tensor, *, gradient: str = "clipped") -> torch.Tensor:
    """``identity``: ``g``; ``clipped``: ``g * 1[0 <= x <= 1]``."""
    if gradient == "identity":
        return grad_output
    return torch.where((x >= 0) & (x <= 1), grad_output, torch.zeros_like(grad_output))


def dorefa_activation(x: torch.Tensor, *, bits: int = 1, gradient: str = "clipped") -> torch.Tensor:
    """DoReFa-Net activation quantizer (bitorch ``InputDoReFa``).

    Forward:  ``y = round(clamp(x, 0, 1) * n) / n``, ``n = 2^bits - 1``, torch.round (half to even).
    Backward: ``gradient="clipped"`` (the paper: STE through round, autograd through clamp):
              ``dL/dx = dL/dy * 1[0 <= x <= 1]`` (inclusive, as torch.clamp).
              ``gradient="identity"``: ``dL/dx = dL/dy`` everywhere (bitorch's ``InputDoReFaFunction``).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    _validate.integer("bits", bits, min_value=1)
    _validate.one_of("gradient", gradient, DOREFA_ACTIVATION_GRADIENTS)
    n = 2 ** bits - 1
    xd = x.detach()
    value = torch.round(torch.clamp(xd, 0, 1) * n) / n
    return value + dorefa_activation_grad(xd, x - xd, gradient=gradient)


def _pact_partials(x: torch.Tensor, alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    inside = ((x >= 0) & (x < alpha)).to(x.dtype)
    above = (x >= alpha).to(x.dtype)
    return inside, above


def pact(x: torch.Tensor, alpha: torch.Tensor, *, bits: int = 4) -> torch.Tensor:
    """PACT activation quantizer with learnable clip level ``alpha`` (Choi et al. 2018).

    Forward:  ``y = clamp(x, 0, alpha)``, ``y_q = round(y * n / alpha) * alpha / n``, ``n = 2^bits - 1``,
              torch.round (half to even).
    Backward: the paper's eq. (3) with STE through round:
              ``dL/dx = dL/dy_q * 1[0 <= x < alpha]``,
              ``dL/dalpha = sum(dL/dy_q * 1[x >= alpha])`` (the dependence of the step ``alpha/n`` on alpha
              inside the range is ignored, as in the paper).
    Dtype:    follows ``x``; ``alpha`` (shape ``()`` or broadcastable to ``x``, > 0) is cast to it.
    Shape:    same as ``x``.
    """
    _validate.integer("bits", bits, min_value=1)
    _validate.positive("alpha", alpha)
    n = 2 ** bits - 1
    xd, ad = x.detach(), alpha.detach().to(x.dtype)
    y = torch.minimum(torch.clamp(xd, min=0), ad)
    value = torch.round(y * n / ad) * ad / n
    inside, above = _pact_partials(xd, ad)
    return _attach(value, (x, inside), (alpha.to(x.dtype), above))


def _lsq_range(bits: int, signed: bool) -> tuple[int, int]:
    return (2 ** (bits - 1), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)


def _lsq_partials(x: torch.Tensor, step: torch.Tensor, *, bits: int, signed: bool,
                  grad_scale: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    qn, qp = _lsq_range(bits, signed)
    g = 1.0 / math.sqrt(x.numel() * qp) if grad_scale is None else grad_scale
    v = x / step
    inside = (v >= -qn) & (v <= qp)
    outside = torch.where(v < -qn, torch.full_like(v, -qn), torch.full_like(v, qp))
    d_step = torch.where(inside, torch.round(v) - v, outside)
    return inside.to(x.dtype), d_step * g


def lsq(x: torch.Tensor, step: torch.Tensor, *, bits: int = 4, signed: bool = True,
        grad_scale: float | None = None) -> torch.Tensor:
    """Learned Step Size Quantization (Esser et al. 2020).

    Forward:  ``y = round(clamp(x / s, -Qn, Qp)) * s``; signed: ``Qn = 2^(b-1)``, ``Qp = 2^(b-1) - 1``
              (bits >= 2); unsigned: ``Qn = 0``, ``Qp = 2^b - 1``. torch.round (half to even).
    Backward: ``dL/dx = dL/dy * 1[-Qn <= x/s <= Qp]`` (inclusive, as the reference implementation's clamp;
              the paper writes strict inequalities: the sets differ only on the boundary).
              ``dL/ds = g * sum(dL/dy * (round(x/s) - x/s))`` inside, ``-Qn`` below, ``Qp`` above, summed to
              ``s``'s shape, with the gradient scale ``g = grad_scale``; ``grad_scale=None`` means the paper's
              ``1/sqrt(x.numel() * Qp)`` over the tensor given (per-sample under vmap: pass it explicitly).
    Dtype:    follows ``x``; ``step`` (> 0, shape ``()`` or broadcastable) is cast to it.
    Shape:    same as ``x``.
    """
    _validate.integer("bits", bits, min_value=1)
    _validate.one_of("signed", signed, (True, False))
    if signed and bits < 2:
        raise ValueError(f"bits must be >= 2 for signed LSQ (Qp = 2^(bits-1) - 1 > 0), got {bits}")
    if grad_scale is not None:
        _validate.positive("grad_scale", grad_scale)
    _validate.positive("step", step)
    qn, qp = _lsq_range(bits, signed)
    xd, sd = x.detach(), step.detach().to(x.dtype)
    value = torch.round(torch.clamp(xd / sd, -qn, qp)) * sd
    d_x, d_step = _lsq_partials(xd, sd, bits=bits, signed=signed, grad_scale=grad_scale)
    return _attach(value, (x, d_x), (step.to(x.dtype), d_step))


def ternary_grad(x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """Identity STE: ``g``."""
    return grad_output


def ternary_threshold(x: torch.Tensor, *, delta_factor: float = 0.7) -> torch.Tensor:
    """TWN's threshold ``delta = delta_factor * mean|x|`` (over the whole tensor)."""
    return delta_factor * x.abs().mean()


def ternary(x: torch.Tensor, *, delta_factor: float = 0.7) -> torch.Tensor:
    """Ternary weight networks (Li et al. 2016).

    Forward:  ``delta = delta_factor * mean|x|``; ``t = sign(x) * 1[|x| > delta]``;
              ``alpha = sum(|x| * 1[|x| > delta]) / max(count(|x| > delta), 1)``; ``y = alpha * t``.
    Backward: identity STE, ``dL/dx = dL/dy`` (delta and alpha are constants).
    Dtype:    follows ``x``.
    Shape:    same as ``x``.
    Per-sample: delta and alpha are statistics over all of ``x`` (dim 0 included): not per-sample.
    """
    _validate.in_range("delta_factor", delta_factor, 0.0)
    xd = x.detach()
    a = xd.abs()
    keep = a > ternary_threshold(xd, delta_factor=delta_factor)
    alpha = (a * keep).sum() / keep.sum().clamp(min=1).to(x.dtype)
    value = alpha * torch.sign(xd) * keep
    return value + ternary_grad(xd, x - xd)
