"""Affine (scale and zero point) quantization as PyTorch's own quantized ops compute it.

The words are the field's (torch.ao, torchao, bitsandbytes): ``scale``, ``zero_point``, ``quant_min``, ``quant_max``,
``axis`` (per channel), ``group_size`` (per group along the last, input, dimension). A code ``q`` stands for the
real value ``(q - zero_point) * scale``.

Every number here follows torch's CPU kernels (``aten/src/ATen/native/quantized/cpu/kernels/QuantizedOpKernels.cpp``):

- ``scale`` is a C ``float``: a Python or float64 scale is first rounded to float32, and the kernels multiply by
  ``inv_scale = 1.0f / scale`` (a float32 number), never divide by ``scale``; the rounding edges follow from that.
- Rounding is ``std::nearbyint``: half to even, as ``torch.round``.
- ``torch.fake_quantize_*`` round first and add the zero point after (``round(x * inv_scale) + zero_point``);
  ``torch.quantize_per_tensor`` (fbgemm) and the learnable fake quantizer's gradient add it first
  (``round(x * inv_scale + zero_point)``, one fused multiply-add): on a tie the two differ where the zero point is
  odd. Both are stated (``zero_point_first``).

The STE gradients are attached as in :mod:`qsnn_reference.quant` (``value + d * (p - p.detach())``), each ``d`` a
plain ``*_grad`` function, so reverse and forward mode agree and ``torch.compile(fullgraph=True)`` traces them.
Inputs must be finite.
"""

from __future__ import annotations

from typing import Sequence

import torch

from qsnn_reference import _validate
from qsnn_reference.quant import _attach

#: The integer ranges by the name of the code type (``quant_min``, ``quant_max``).
INTEGER_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int4": (-8, 7), "uint4": (0, 15)}


def _divided(a: torch.Tensor, b: float) -> torch.Tensor:
    """``a / b`` rounded once, as the CPU computes it, on every device: CUDA divides a tensor by a Python number as
    ``a * (1 / b)`` (two roundings: an ulp off for some ``a``, which moves a quantization code), so ``b`` is made a
    tensor on ``a``'s device, which CUDA divides exactly."""
    return a / torch.as_tensor(b, dtype=a.dtype, device=a.device)


def integer_range(dtype: str) -> tuple[int, int]:
    """``(quant_min, quant_max)`` of a code type: ``integer_range("int4") == (-8, 7)``."""
    _validate.one_of("dtype", dtype, tuple(INTEGER_RANGES))
    return INTEGER_RANGES[dtype]


# ----------------------------------------------------------------------------------------------- qparams

def _check_range(quant_min: int, quant_max: int) -> None:
    _validate.integer("quant_min", quant_min)
    _validate.integer("quant_max", quant_max)
    if quant_min > quant_max:
        raise ValueError(f"quant_min must be <= quant_max, got {quant_min} > {quant_max}")


def _qparam(x: torch.Tensor, name: str, value, *, axis: int | None, group_size: int | None) -> torch.Tensor:
    """``scale`` or ``zero_point`` (a number, a sequence or a tensor) as a float64 tensor (exact) that broadcasts
    against ``x``: one value (per tensor), ``x.shape[axis]`` values (per channel) or ``x.shape[:-1] +
    (x.shape[-1] // group_size,)`` values (per group of ``group_size`` along the last dim); one number is repeated."""
    t = torch.as_tensor(value, dtype=torch.float64) if not isinstance(value, torch.Tensor) else value.detach()
    t = t.to(device=x.device, dtype=torch.float64)
    if t.numel() == 1 and (axis is not None or group_size is not None):  # one number for every channel or group
        t = t.reshape(()).expand(x.shape[axis] if axis is not None else x.shape[:-1] + (x.shape[-1] // group_size,))
    if axis is not None:
        dim = axis % x.dim()
        if t.numel() != x.shape[dim]:
            raise ValueError(f"{name} must have x.shape[axis] = {x.shape[dim]} entries, got {t.numel()}")
        return t.reshape((-1,) + (1,) * (x.dim() - 1 - dim))
    if group_size is not None:
        groups = x.shape[:-1] + (x.shape[-1] // group_size,)
        if tuple(t.shape) != groups:
            raise ValueError(f"{name} must have shape {tuple(groups)} (x.shape[:-1] + groups), got {tuple(t.shape)}")
        return t.repeat_interleave(group_size, dim=-1)
    if t.numel() != 1:
        raise ValueError(f"{name} must be one number per tensor (axis and group_size None), got {t.numel()}")
    return t.reshape(())


def _check_granularity(x: torch.Tensor, axis: int | None, group_size: int | None) -> None:
    if axis is not None and group_size is not None:
        raise ValueError("give axis (per channel) or group_size (per group), not both")
    if axis is not None:
        _validate.integer("axis", axis, min_value=-x.dim(), max_value=x.dim() - 1)
    if group_size is not None:
        _validate.integer("group_size", group_size, min_value=1)
        if x.dim() == 0 or x.shape[-1] % group_size:
            raise ValueError(f"group_size={group_size} must divide the last dim of x, shape {tuple(x.shape)}")


def _wide(x: torch.Tensor) -> torch.dtype:
    """The dtype the kernels compute ``x * inv_scale`` in: ``x``'s, at least float32 (``scalar_t * float``)."""
    return torch.promote_types(x.dtype, torch.float32)


def _float32_scale(x: torch.Tensor, scale, *, axis, group_size) -> tuple[torch.Tensor, torch.Tensor]:
    """``scale`` and ``inv_scale = 1.0f / scale`` as torch's kernels hold them (float32), in :func:`_wide`."""
    s = _qparam(x, "scale", scale, axis=axis, group_size=group_size)
    _validate.positive("scale", s)
    s32 = s.to(torch.float32)
    return s32.to(_wide(x)), (1.0 / s32).to(_wide(x))


def _codes(x: torch.Tensor, inv_scale: torch.Tensor, z: torch.Tensor, zero_point_first: bool) -> torch.Tensor:
    """The unclamped integer codes: ``round(x * inv_scale) + z``, or ``round(x * inv_scale + z)`` with the
    multiply-add rounded once, to float32 (torch's x86 build contracts ``zero_point + x * inv_scale`` into a fused
    multiply-add; the float64 sum of float32 operands is exact, so one rounding to float32 is the fused one)."""
    if not zero_point_first:
        return torch.round(x.to(inv_scale.dtype) * inv_scale) + z.to(inv_scale.dtype)
    fused = (x.to(torch.float64) * inv_scale.to(torch.float64) + z.to(torch.float64)).to(torch.float32)
    return torch.round(fused).to(inv_scale.dtype)


def quantize(x: torch.Tensor, *, scale, zero_point=0, quant_min: int, quant_max: int, axis: int | None = None,
             group_size: int | None = None, zero_point_first: bool = False) -> torch.Tensor:
    """Affine quantization to integer codes.

    Forward:  ``q = clamp(round(x * inv_scale) + zero_point, quant_min, quant_max)`` with
              ``inv_scale = 1 / float32(scale)`` in float32 and round half to even; ``zero_point_first=True`` rounds
              ``x * inv_scale + zero_point`` instead (``torch.quantize_per_tensor``). Per tensor (``axis`` and
              ``group_size`` None: one scale), per channel (``axis``: ``x.shape[axis]`` scales) or per group
              (``group_size``: ``x.shape[:-1] + (x.shape[-1] // group_size,)`` scales, each over consecutive
              elements of the last dim). Symmetric is ``zero_point = 0``.
    Backward: none (integer codes).
    Dtype:    int32 codes; the arithmetic runs in ``x``'s dtype.
    Shape:    same as ``x``.
    """
    _check_range(quant_min, quant_max)
    _check_granularity(x, axis, group_size)
    xd = x.detach()
    _, inv = _float32_scale(xd, scale, axis=axis, group_size=group_size)
    z = _qparam(xd, "zero_point", zero_point, axis=axis, group_size=group_size)
    return torch.clamp(_codes(xd, inv, z, zero_point_first), quant_min, quant_max).to(torch.int32)


def dequantize(q: torch.Tensor, *, scale, zero_point=0, axis: int | None = None, group_size: int | None = None,
               dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The real values of integer codes.

    Forward:  ``y = (q - zero_point) * float32(scale)``, scales and zero points laid out as :func:`quantize`'s.
    Backward: none (codes carry no gradient).
    Dtype:    ``dtype`` (default float32, as ``Tensor.dequantize``); exact there when the product is.
    Shape:    same as ``q``.
    """
    codes = q.to(dtype)
    _check_granularity(codes, axis, group_size)
    s, _ = _float32_scale(codes, scale, axis=axis, group_size=group_size)
    z = _qparam(codes, "zero_point", zero_point, axis=axis, group_size=group_size)
    return ((q.to(torch.float64) - z).to(s.dtype) * s).to(dtype)


# ----------------------------------------------------------------------------------------------- fake quantization

def _fake_value(steps: torch.Tensor, scale, *, axis: int | None, like: torch.Tensor) -> torch.Tensor:
    """``steps * scale`` (``steps = clamp(q) - zero_point``, integers) as the kernels round it: per tensor a float32
    product (an integer times a C float), per channel a double product; then cast to ``like``'s dtype."""
    wide = torch.float32 if axis is None else torch.float64
    s = _qparam(like, "scale", scale, axis=axis, group_size=None).to(torch.float32).to(wide)
    return (steps.to(wide) * s).to(like.dtype)


def fake_quantize_grad(x: torch.Tensor, grad_output: torch.Tensor, *, scale, zero_point=0, quant_min: int,
                       quant_max: int, axis: int | None = None) -> torch.Tensor:
    """The STE inside the clamp range:
    ``grad_output * 1[quant_min <= round(x * inv_scale) + zero_point <= quant_max]``."""
    _, inv = _float32_scale(x, scale, axis=axis, group_size=None)
    q = _codes(x, inv, _qparam(x, "zero_point", zero_point, axis=axis, group_size=None), False)
    return torch.where((q >= quant_min) & (q <= quant_max), grad_output, torch.zeros_like(grad_output))


def fake_quantize(x: torch.Tensor, *, scale, zero_point=0, quant_min: int, quant_max: int,
                  axis: int | None = None) -> torch.Tensor:
    """Fake quantization as ``torch.fake_quantize_per_tensor_affine`` (``axis`` None) and
    ``torch.fake_quantize_per_channel_affine`` (``axis``) define it.

    Forward:  ``q = round(x * inv_scale) + zero_point`` (``inv_scale = 1 / float32(scale)`` in float32, round half
              to even), ``y = (clamp(q, quant_min, quant_max) - zero_point) * float32(scale)``.
    Backward: ``dL/dx = dL/dy * 1[quant_min <= q <= quant_max]`` (the clamp range, inclusive); scale and zero point
              are constants (see :func:`fake_quantize_learnable`).
    Dtype:    follows ``x``; ``x * inv_scale`` runs in ``x``'s dtype, at least float32 (bfloat16 and float16 are
              widened, as the kernels' ``scalar_t * float``); the product ``(clamp(q) - zero_point) * scale`` is
              rounded to float32 per tensor (an integer times a C float, even for a float64 ``x``) and to float64 per
              channel, then cast to ``x``'s dtype.
    Shape:    same as ``x``; per channel, ``scale`` and ``zero_point`` have ``x.shape[axis]`` entries.
    """
    _check_range(quant_min, quant_max)
    _check_granularity(x, axis, None)
    xd = x.detach()
    _, inv = _float32_scale(xd, scale, axis=axis, group_size=None)
    z = _qparam(xd, "zero_point", zero_point, axis=axis, group_size=None)
    value = _fake_value(torch.clamp(_codes(xd, inv, z, False), quant_min, quant_max) - z, scale, axis=axis, like=xd)
    options = dict(scale=scale, zero_point=zero_point, quant_min=quant_min, quant_max=quant_max, axis=axis)
    return value + fake_quantize_grad(xd, x - xd, **options)


def learnable_zero_points(zero_point: torch.Tensor, *, quant_min: int,
                          quant_max: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The learnable fake quantizer's integer zero points (shape ``()``) from its float one (read as float32): the
    forward's ``clamp(round_half_even(zero_point))`` and the backward's ``trunc(clamp(zero_point + 0.5))`` (torch's
    ``_get_zero_point_from_tensor``: for ``zero_point = 0.5`` the forward uses 0 and the gradient 1)."""
    z = zero_point.detach().reshape(()).to(torch.float32)
    forward = torch.clamp(torch.round(z), quant_min, quant_max)
    backward = torch.trunc(torch.clamp(z + 0.5, quant_min, quant_max))
    return forward, backward


def fake_quantize_learnable_grad(x: torch.Tensor, grad_output: torch.Tensor, *, scale: torch.Tensor,
                                 zero_point: torch.Tensor, quant_min: int, quant_max: int,
                                 grad_factor: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Elementwise partials ``(dx, dscale, dzero_point)`` times ``grad_output`` (sum the last two), with the
    backward's integer ``zero_point`` added before rounding, ``q = round(x * inv_scale + zero_point)``:
    inside ``[quant_min, quant_max]``: ``dx = g``, ``dscale = g * (x_fq - x) * inv_scale * grad_factor``,
    ``dzero_point = 0``; outside: ``dx = 0``, ``dscale = g * (quant_min or quant_max - zero_point) * grad_factor``,
    ``dzero_point = -g * scale * grad_factor``; ``x_fq = (clamp(q) - zero_point) * scale``."""
    s, inv = _float32_scale(x, scale, axis=None, group_size=None)
    z = zero_point.to(s.dtype)
    q = _codes(x, inv, z, True)
    inside = (q >= quant_min) & (q <= quant_max)
    x_fq = (torch.clamp(q, quant_min, quant_max) - z) * s
    edge = torch.where(q < quant_min, quant_min - z, quant_max - z)
    zeros = torch.zeros_like(grad_output)
    dx = torch.where(inside, grad_output, zeros)
    dscale = grad_output * torch.where(inside, (x_fq - x.to(s.dtype)) * inv, edge).to(grad_output.dtype) * grad_factor
    dzero_point = torch.where(inside, zeros, -grad_output * s.to(grad_output.dtype) * grad_factor)
    return dx, dscale, dzero_point


def fake_quantize_learnable(x: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor, *, quant_min: int,
                            quant_max: int, grad_factor: float = 1.0) -> torch.Tensor:
    """``torch._fake_quantize_learnable_per_tensor_affine``: fake quantization with learnable scale and zero point
    (torch.ao's ``_LearnableFakeQuantize``).

    Forward:  :func:`fake_quantize` with ``scale`` (one element, read as float32) and the zero point
              ``clamp(round_half_even(zero_point), quant_min, quant_max)``.
    Backward: with the backward's zero point ``z = trunc(clamp(zero_point + 0.5, quant_min, quant_max))`` and
              ``q = round(x * inv_scale + z)`` (zero point before rounding, as torch's CPU kernel):
              ``dL/dx = dL/dy * 1[quant_min <= q <= quant_max]``;
              ``dL/dscale = grad_factor * sum(dL/dy * (x_fq - x) * inv_scale)`` over the elements inside the range,
              plus ``grad_factor * sum(dL/dy * (quant_min - z))`` below it and ``(quant_max - z)`` above it, with
              ``x_fq = (clamp(q) - z) * scale``;
              ``dL/dzero_point = grad_factor * sum(-dL/dy * scale)`` over the elements outside the range.
              (torch.ao's ``_LearnableFakeQuantize`` passes ``grad_factor = 1 / sqrt(x.numel() * quant_max)``
              with ``use_grad_scaling``, else 1.)
    Dtype:    follows ``x`` (torch runs float32 only); ``scale``/``zero_point`` gradients in their own dtypes.
    Shape:    same as ``x``; ``scale`` and ``zero_point`` of one element (torch: shape ``(1,)``).
    """
    _check_range(quant_min, quant_max)
    _validate.positive("scale", scale)
    _validate.in_range("grad_factor", grad_factor)
    if scale.numel() != 1 or zero_point.numel() != 1:
        raise ValueError(f"scale and zero_point must have one element, got {scale.numel()} and {zero_point.numel()}")
    xd, sd = x.detach(), scale.detach().reshape(())
    z_forward, z_backward = learnable_zero_points(zero_point, quant_min=quant_min, quant_max=quant_max)
    _, inv = _float32_scale(xd, sd, axis=None, group_size=None)
    z = z_forward.to(_wide(xd))
    value = _fake_value(torch.clamp(_codes(xd, inv, z, False), quant_min, quant_max) - z, sd, axis=None, like=xd)
    dx, dscale, dzero = fake_quantize_learnable_grad(xd, torch.ones_like(xd), scale=sd, zero_point=z_backward,
                                                     quant_min=quant_min, quant_max=quant_max,
                                                     grad_factor=grad_factor)
    return _attach(value, (x, dx), (scale.reshape(()).to(x.dtype), dscale),
                   (zero_point.reshape(()).to(x.dtype), dzero))


# ----------------------------------------------------------------------------------------------- linear layers

def choose_qparams(x: torch.Tensor, *, quant_min: int, quant_max: int, symmetric: bool, dim: int | None = None,
                   eps: float = float(torch.finfo(torch.float32).eps)) -> tuple[torch.Tensor, torch.Tensor]:
    """``(scale, zero_point)`` from the range of ``x`` (over all of it, or per slice along ``dim`` kept), as torch.ao's
    min/max observers compute them: the range is widened to include 0 (``lo = min(min x, 0)``, ``hi = max(max x,
    0)``); symmetric: ``scale = max(-lo, hi) / ((quant_max - quant_min) / 2)`` and ``zero_point = 0`` (signed) or
    ``(quant_min + quant_max + 1) // 2`` (unsigned: ``quant_min`` 0); asymmetric: ``scale = (hi - lo) / (quant_max -
    quant_min)``, ``zero_point = clamp(quant_min - round(lo / scale), quant_min, quant_max)``; ``scale`` at least
    ``eps``. float64 arithmetic on ``x``'s values: the observers compute in float32, within a few ulps of this.
    Shape: scalars, or ``x.shape[dim]`` entries."""
    _check_range(quant_min, quant_max)
    xd = x.detach().to(torch.float64)
    if dim is None:
        lo, hi = xd.min(), xd.max()
    else:
        rest = tuple(d for d in range(xd.dim()) if d != dim % xd.dim())
        lo, hi = xd.amin(dim=rest), xd.amax(dim=rest)
    lo, hi = torch.clamp(lo, max=0.0), torch.clamp(hi, min=0.0)
    if symmetric:
        scale = torch.clamp(_divided(torch.maximum(-lo, hi), (quant_max - quant_min) / 2), min=eps)
        zero = 0 if quant_min < 0 else (quant_min + quant_max + 1) // 2
        return scale, torch.full_like(scale, float(zero))
    scale = torch.clamp(_divided(hi - lo, quant_max - quant_min), min=eps)
    return scale, torch.clamp(quant_min - torch.round(lo / scale), quant_min, quant_max)


def observed_fake_quantize(x: torch.Tensor, *, quant_min: int, quant_max: int, symmetric: bool) -> torch.Tensor:
    """Fake quantization with the scale and zero point a min/max observer computes from ``x`` itself (torch.ao's
    ``FakeQuantize`` on its first call, whose observer has seen only ``x``).

    Forward:  ``(scale, zero_point) = choose_qparams(x, quant_min, quant_max, symmetric)`` over all of ``x``, then
              :func:`fake_quantize` with them.
    Backward: ``dL/dx = dL/dy * 1[quant_min <= round(x * inv_scale) + zero_point <= quant_max]``; the observed scale
              and zero point are constants (the observer runs on the detached input).
    Dtype:    follows ``x``.
    Shape:    same as ``x``. The statistics span all of ``x`` (the batch included): not per-sample.
    """
    scale, zero_point = choose_qparams(x, quant_min=quant_min, quant_max=quant_max, symmetric=symmetric)
    return fake_quantize(x, scale=scale, zero_point=zero_point, quant_min=quant_min, quant_max=quant_max)


def weight_only_linear(x: torch.Tensor, codes: torch.Tensor, bias: torch.Tensor | None = None, *, scale,
                       zero_point=0, axis: int | None = None, group_size: int | None = None) -> torch.Tensor:
    """A linear layer whose weight is held as integer codes: ``y = x @ dequantize(codes).T + bias``.

    Forward:  ``W = dequantize(codes, scale=scale, zero_point=zero_point, axis=axis, group_size=group_size)`` (per
              output channel is ``axis=0``; per group runs along the input dim), then ``x @ W.T + bias``.
    Backward: autograd through the matmul: ``dL/dx = dL/dy @ W``, ``dL/dbias = sum(dL/dy)``; the codes have none.
    Dtype:    follows ``x`` (``W`` is computed in ``x``'s dtype).
    Shape:    ``x (..., K)``, ``codes (N, K)``, ``bias (N,)`` -> ``(..., N)``.
    """
    weight = dequantize(codes, scale=scale, zero_point=zero_point, axis=axis, group_size=group_size, dtype=x.dtype)
    return torch.nn.functional.linear(x, weight, None if bias is None else bias.to(x.dtype))


def symmetric_weight_only_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
                                 quant_min: int = -128, quant_max: int = 127,
                                 eps: float = float(torch.finfo(torch.float32).eps)) -> torch.Tensor:
    """A weight-only quantized linear layer built from a float ``weight`` (torchao's ``Int8WeightOnlyConfig`` and
    ``IntxWeightOnlyConfig`` defaults: int8, symmetric, one scale per output channel).

    Forward:  ``(s_w, 0) = choose_qparams(weight, quant_min, quant_max, symmetric=True, dim=0, eps=eps)`` (``s_w =
              max(max |row| / ((quant_max - quant_min) / 2), eps)``: for int8, ``max |row| / 127.5``, so the row's
              largest magnitude lands on the tie ``+-127.5``: rounded half to even to 128 and clamped to 127, or to
              -128), codes ``quantize(weight, s_w, axis=0)``, then :func:`weight_only_linear` (``x @ W.T + bias``).
    Backward: autograd through the matmul: ``dL/dx = dL/dy @ W``, ``dL/dbias = sum(dL/dy)``; the weight is a
              constant (its codes carry no gradient).
    Dtype:    follows ``x``.
    Shape:    ``x (..., K)``, ``weight (N, K)``, ``bias (N,)`` -> ``(..., N)``.
    """
    w = weight.detach().to(torch.float32)  # torchao quantizes the float32 weight: x * inv_scale rounds in float32
    scale, _ = choose_qparams(w, quant_min=quant_min, quant_max=quant_max, symmetric=True, dim=0, eps=eps)
    codes = quantize(w, scale=scale, quant_min=quant_min, quant_max=quant_max, axis=0)
    return weight_only_linear(x, codes, bias, scale=scale, axis=0)


def dynamic_quantized_linear(x: torch.Tensor, codes: torch.Tensor, bias: torch.Tensor | None = None, *,
                             weight_scale: Sequence[float] | float, weight_zero_point=0, weight_axis: int | None = None,
                             quant_min: int, quant_max: int, symmetric: bool, per_token: bool) -> torch.Tensor:
    """A linear layer with an integer weight and the activation quantized on the fly (dynamic quantization).

    Forward:  ``(s_x, z_x) = choose_qparams(x, quant_min, quant_max, symmetric)`` per tensor, or per token (each
              row of ``x``, ``per_token``); ``q_x = quantize(x, s_x, z_x)`` (per token from ``float32(x)`` in float32
              arithmetic, as torchao's ``quantize_affine``; per tensor in float64); the integer product
              ``acc = (q_x - z_x) @ (codes - z_w).T`` exactly (integers, summed in float64), rescaled: ``y = acc * s_x * s_w + bias``
              (``s_w``, ``z_w`` per tensor or per output channel, ``weight_axis=0``). No gradient (a quantized
              inference op).
    Dtype:    float32 output; the rescale runs in float64 (the exact product, rounded once).
    Shape:    ``x (..., K)`` (the tokens are its rows), ``codes (N, K)``, ``bias (N,)`` -> ``(..., N)``.
    """
    _validate.ndim_at_least("x", x, 1)
    xd = x.detach().reshape(-1, x.shape[-1])
    sx, zx = choose_qparams(xd, quant_min=quant_min, quant_max=quant_max, symmetric=symmetric,
                            dim=0 if per_token else None)
    # per token (torchao), the float32 activation is quantized in float32 arithmetic; per tensor in float64
    qx = quantize(xd.to(torch.float32 if per_token else torch.float64), scale=sx.to(torch.float32), zero_point=zx,
                  quant_min=quant_min,
                  quant_max=quant_max, axis=0 if per_token else None).to(torch.int64)
    shift = zx.to(torch.int64).reshape(-1, 1) if per_token else zx.to(torch.int64)
    w = codes.to(torch.int64)
    zw = _qparam(w.to(torch.float64), "zero_point", weight_zero_point, axis=weight_axis, group_size=None)
    # The integer product summed in float64, which runs on every device (CUDA has no int64 matmul): with codes of at
    # most 8 bits on both sides every term is below 2**16, so sums over K < 2**37 stay exact integers (below 2**53).
    acc = (qx - shift).to(torch.float64) @ (w - zw.to(torch.int64)).to(torch.float64).T
    sw = _qparam(w.to(torch.float64), "scale", weight_scale, axis=weight_axis, group_size=None)
    sx64 = sx.to(torch.float32).to(torch.float64)
    y = acc * (sx64.reshape(-1, 1) if per_token else sx64) * sw.to(torch.float32).to(torch.float64).reshape(1, -1)
    if bias is not None:
        y = y + bias.detach().to(torch.float64)
    return y.to(torch.float32).reshape(x.shape[:-1] + (codes.shape[0],))


def dynamic_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, quant_min: int = 0,
                   quant_max: int = 127, symmetric: bool = False, per_token: bool = False, weight_quant_min: int = -128,
                   weight_quant_max: int = 127, weight_axis: int | None = None) -> torch.Tensor:
    """A dynamically quantized linear layer built from a float ``weight`` (``torch.ao.nn.quantized.dynamic.Linear``
    with the default dynamic qconfig).

    Forward:  the weight is quantized once, symmetric per tensor: ``(s_w, 0) = choose_qparams(weight,
              weight_quant_min, weight_quant_max, symmetric=True)`` (the default ``MinMaxObserver``, qint8), or per
              output channel with ``weight_axis=0`` (torchao's ``Int8DynamicActivationInt8WeightConfig``), codes
              ``quantize(weight, s_w, 0, zero_point_first=True)`` (``torch.quantize_per_tensor``); then
              :func:`dynamic_quantized_linear` with the activation range ``quant_min..quant_max`` (fbgemm's
              ``reduce_range``: 0..127), asymmetric, per tensor unless ``per_token``.
    Backward: none (a quantized inference layer).
    Dtype:    float32 output.
    Shape:    ``x (..., K)``, ``weight (N, K)``, ``bias (N,)`` -> ``(..., N)``. Per tensor, the activation's scale
              spans the batch: not per-sample.
    """
    w = weight.detach()
    scale, zero_point = choose_qparams(w, quant_min=weight_quant_min, quant_max=weight_quant_max, symmetric=True,
                                       dim=weight_axis)
    codes = quantize(w, scale=scale, zero_point=zero_point, quant_min=weight_quant_min, quant_max=weight_quant_max,
                     axis=weight_axis, zero_point_first=True)
    return dynamic_quantized_linear(x, codes, bias, weight_scale=scale, weight_zero_point=zero_point,
                                    weight_axis=weight_axis, quant_min=quant_min, quant_max=quant_max,
                                    symmetric=symmetric, per_token=per_token)


# ----------------------------------------------------------------------------------------------- weights by min/max

def _weight_rows(weight: torch.Tensor, group_size: int | None) -> torch.Tensor:
    """The weight as rows that each get one scale: its output channels ``(N, K)``, or its groups of ``group_size``
    consecutive elements along the input dim ``(N * K // group_size, group_size)``."""
    if weight.dim() != 2:
        raise ValueError(f"weight must be (out_features, in_features), got shape {tuple(weight.shape)}")
    _check_granularity(weight, None, group_size)
    return weight if group_size is None else weight.reshape(-1, group_size)


def minmax_weight_qparams(weight: torch.Tensor, *, bits: int, symmetric: bool,
                          group_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(scale, shift)`` of each row of :func:`_weight_rows` (shape ``(rows, 1)``, float32), by the range of the row
    (the rule of optimum-quanto's ``AbsmaxOptimizer`` and ``MaxOptimizer``), all in float32:
    symmetric: ``scale = max|row| / (2**(bits-1) - 1)``, no shift; asymmetric: ``scale = (max row - min row) /
    (2**bits - 1)`` and the float ``shift = -min row`` (the row's minimum lands on code 0)."""
    _validate.integer("bits", bits, min_value=2, max_value=8)
    if symmetric and group_size is not None:
        raise ValueError("symmetric weights are quantized per output channel: group_size must be None")
    rows = _weight_rows(weight.detach().to(torch.float32), group_size)
    if symmetric:
        return _divided(rows.abs().amax(dim=1, keepdim=True), 2 ** (bits - 1) - 1), None
    low, high = rows.amin(dim=1, keepdim=True), rows.amax(dim=1, keepdim=True)
    return _divided(high - low, 2 ** bits - 1), -low


def minmax_fake_quantize_weight(weight: torch.Tensor, *, bits: int, symmetric: bool,
                                group_size: int | None = None) -> torch.Tensor:
    """The weight quantized by its range and dequantized again, in float32 (optimum-quanto's ``quantize_weight`` of a
    float32 weight, then ``dequantize()``).

    Forward:  with ``(scale, shift) = minmax_weight_qparams(...)`` per row (division, not a multiplication by an
              inverse; round half to even), symmetric: ``q = clamp(round(w / scale), -2**(bits-1), 2**(bits-1) - 1)``,
              ``w' = scale * q``; asymmetric: ``q = clamp(round((w + shift) / scale), 0, 2**bits - 1)``,
              ``w' = scale * q - shift``. A row whose scale is 0 (all zeros, or all equal when asymmetric) has codes
              0, so ``w'`` is the row itself (quanto's ``0 / 0`` is NaN, which its integer cast makes 0).
    Backward: none here (see :func:`minmax_weight_linear`).
    Dtype:    float32, whatever ``weight``'s dtype.
    Shape:    same as ``weight`` ``(N, K)``; ``group_size`` divides ``K``.
    """
    scale, shift = minmax_weight_qparams(weight, bits=bits, symmetric=symmetric, group_size=group_size)
    rows = _weight_rows(weight.detach().to(torch.float32), group_size)
    if symmetric:
        codes = torch.clamp(torch.round(rows / scale), -2 ** (bits - 1), 2 ** (bits - 1) - 1)
    else:
        codes = torch.clamp(torch.round((rows + shift) / scale), 0, 2 ** bits - 1)
    codes = torch.where(scale == 0, torch.zeros_like(codes), codes)
    value = scale * codes if symmetric else scale * codes - shift
    return value.reshape(weight.shape)


def minmax_weight_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, bits: int,
                         symmetric: bool, group_size: int | None = None) -> torch.Tensor:
    """A linear layer whose float weight is quantized by its range on every call (optimum-quanto's ``QLinear`` with
    quantized weights, before and after ``freeze()``).

    Forward:  ``y = x @ W'.T + bias`` with ``W' = minmax_fake_quantize_weight(weight, bits, symmetric, group_size)``
              (per output channel, or per group of ``group_size`` along the input dim).
    Backward: straight through the weight's quantization (quanto's quantizers return the incoming gradient):
              ``dL/dx = dL/dy @ W'``, ``dL/dweight = dL/dy.T @ x`` (summed over the leading dims), ``dL/dbias =
              sum(dL/dy)``.
    Dtype:    follows ``x``; ``W'`` is computed in float32 (the weight's dtype in quanto's float32 layers) and the
              product summed in ``x``'s dtype, at least float32 (``W'`` is never rounded to bfloat16), then cast.
    Shape:    ``x (..., K)``, ``weight (N, K)``, ``bias (N,)`` -> ``(..., N)``.
    """
    quantized = minmax_fake_quantize_weight(weight, bits=bits, symmetric=symmetric, group_size=group_size)
    wide = torch.promote_types(_wide(x), weight.dtype)
    w = weight.to(wide)
    straight_through = w + (quantized.to(wide) - w).detach()
    y = torch.nn.functional.linear(x.to(wide), straight_through, None if bias is None else bias.to(wide))
    return y.to(x.dtype)


# ------------------------------------------------------------------------------------- quantization-aware training

#: fbgemm's and torch's ``SMALL_SCALE_THRESHOLD`` (``quant_utils.h``): a smaller scale is raised to it.
SMALL_SCALE_THRESHOLD = 6.1e-5
#: The scale ``ChooseQuantizationParams`` puts in place of 0 (or of one whose float32 inverse is infinite).
FALLBACK_SCALE = 0.1


def moving_average_minmax(x_min: torch.Tensor, x_max: torch.Tensor, running_min: torch.Tensor | None = None,
                          running_max: torch.Tensor | None = None, *,
                          averaging_constant: float = 0.01) -> tuple[torch.Tensor, torch.Tensor]:
    """The running statistics of torch.ao's moving-average min/max observers after one observed call, in float32.

    Forward:  a fresh observer (``running_min`` None, or infinite as the fused kernel initialises it) takes the call's
              ``(x_min, x_max)``; after that ``r + c * (m - r)`` with ``c = float32(averaging_constant)``, for each
              of min and max (per channel: elementwise).
    Backward: none (statistics of detached values).
    Dtype:    float32.
    """
    _validate.in_range("averaging_constant", averaging_constant, 0.0, 1.0)
    lo, hi = x_min.detach().to(torch.float32), x_max.detach().to(torch.float32)
    if running_min is None or running_max is None:
        return lo, hi
    c = torch.tensor(averaging_constant, dtype=torch.float32)
    r_lo, r_hi = running_min.detach().to(torch.float32), running_max.detach().to(torch.float32)
    return (torch.where(torch.isinf(r_lo), lo, r_lo + c * (lo - r_lo)),
            torch.where(torch.isinf(r_hi), hi, r_hi + c * (hi - r_hi)))


def fused_observer_qparams(min_val: torch.Tensor, max_val: torch.Tensor, *, quant_min: int, quant_max: int,
                           symmetric: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``(scale, zero_point)`` from running statistics as ``torch.fused_moving_avg_obs_fake_quant`` computes them
    (``ChooseQuantizationParams`` of fbgemm / ``quant_utils.h``, ``preserve_sparsity = symmetric``), elementwise:

    - symmetric and ``min < 0 < max``: ``m = max(|float32(min / -(h + 1))|, |float32(max / h)|)`` with ``h = (quant_max
      - quant_min) // 2`` (127 for int8: the scale is ``max(|min| / 128, max / 127)``, not the observer's ``/ 127.5``),
      ``min = float32(m * -(h + 1))``, ``max = float32(m * h)``, and the zero point ``nearbyint((quant_min +
      quant_max) / 2)`` (0 for int8);
    - otherwise (asymmetric, or a channel of one sign: symmetric does not hold there) the range widened to 0,
      ``scale = (max - min) / (quant_max - quant_min)`` in float64, and the zero point from the end with the smaller
      error ``|q_end| + |end / scale|``: ``q_end - end / scale``, clamped and rounded half to even (a channel ``>= 0``
      gets ``quant_min``, one ``<= 0`` ``quant_max``);
    - a scale that is 0 in float32, or whose float32 inverse is infinite, becomes 0.1; one below 6.1e-5 becomes 6.1e-5
      (the range then scaled alike: the zero point is unchanged by it).
    The scale is stored as float32, the zero point as an integer (int32). Shape: as ``min_val``."""
    _check_range(quant_min, quant_max)
    lo, hi = min_val.detach().to(torch.float32), max_val.detach().to(torch.float32)
    mixed = (lo < 0) & (hi > 0) if symmetric else torch.zeros_like(lo, dtype=torch.bool)
    if symmetric:
        half = (quant_max - quant_min) // 2
        largest = torch.maximum(_divided(lo, -(half + 1)).abs(), _divided(hi, half).abs()).to(torch.float64)  # float32
        lo = torch.where(mixed, (largest * -(half + 1)).to(torch.float32), lo)
        hi = torch.where(mixed, (largest * half).to(torch.float32), hi)
    lo, hi = torch.clamp(lo, max=0.0), torch.clamp(hi, min=0.0)
    scale = _divided(hi.to(torch.float64) - lo.to(torch.float64), quant_max - quant_min)
    s32 = scale.to(torch.float32)
    scale = torch.where((s32 == 0) | torch.isinf(1.0 / s32), torch.full_like(scale, FALLBACK_SCALE), scale)
    threshold = float(torch.tensor(SMALL_SCALE_THRESHOLD, dtype=torch.float32))
    small = scale < threshold
    amplifier = (threshold / scale.to(torch.float32)).to(torch.float32)  # float32, as the C++ float amplifier
    both = small & (lo != 0) & (hi != 0)
    lo = torch.where(small & (hi == 0), torch.full_like(lo, -threshold * (quant_max - quant_min)),
                     torch.where(both, lo * amplifier, lo))
    hi = torch.where(small & (lo == 0), torch.full_like(hi, threshold * (quant_max - quant_min)),
                     torch.where(both, hi * amplifier, hi))
    scale = torch.where(small, torch.full_like(scale, threshold), scale)
    lo64, hi64 = lo.to(torch.float64), hi.to(torch.float64)
    from_min, from_max = quant_min - lo64 / scale, quant_max - hi64 / scale
    error_min, error_max = abs(quant_min) + (lo64 / scale).abs(), abs(quant_max) + (hi64 / scale).abs()
    initial = torch.where(error_min < error_max, from_min, from_max)
    initial = torch.where(mixed, torch.full_like(initial, (quant_min + quant_max) / 2), initial)
    zero_point = torch.round(torch.clamp(initial, quant_min, quant_max))
    return scale.to(torch.float32), zero_point.to(torch.int32)


def _channel_minmax(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    rows = weight.detach().to(torch.float32).reshape(weight.shape[0], -1)
    return rows.amin(dim=1), rows.amax(dim=1)


def qat_weight(weight: torch.Tensor, *, quant_min: int = -128, quant_max: int = 127, symmetric: bool = True,
               running_min: torch.Tensor | None = None, running_max: torch.Tensor | None = None,
               averaging_constant: float = 0.01) -> torch.Tensor:
    """The weight as a torch.ao QAT layer uses it: fake-quantized per output channel (axis 0) by its
    ``FusedMovingAvgObsFakeQuantize`` (the default QAT qconfig's weight fake quantizer, observer
    ``MovingAveragePerChannelMinMaxObserver``, qint8 -128..127, per-channel symmetric).

    Forward:  the observer updates first: ``(lo, hi) = moving_average_minmax(channel min/max of weight, running_min,
              running_max, averaging_constant)`` (a fresh observer: the weight's own min/max); then
              ``(scale, zero_point) = fused_observer_qparams(lo, hi, ...)`` and :func:`fake_quantize` of the weight
              with them along ``axis=0``.
    Backward: the STE of :func:`fake_quantize`: ``dL/dweight = dL/dweight_fq * 1[quant_min <= round(w * inv_scale)
              + zero_point <= quant_max]``; the statistics are constants.
    Dtype:    computed on the float32 weight (torch's QAT layers are float32), returned in ``weight``'s dtype.
    Shape:    same as ``weight`` ``(out_channels, ...)``.
    """
    x_min, x_max = _channel_minmax(weight)
    lo, hi = moving_average_minmax(x_min, x_max, running_min, running_max, averaging_constant=averaging_constant)
    scale, zero_point = fused_observer_qparams(lo, hi, quant_min=quant_min, quant_max=quant_max, symmetric=symmetric)
    w = weight.to(torch.float32)  # the float32 weight is quantized: a float64 one would part from it on the ties
    return fake_quantize(w, scale=scale, zero_point=zero_point, quant_min=quant_min, quant_max=quant_max,
                         axis=0).to(weight.dtype)


def qat_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, quant_min: int = -128,
               quant_max: int = 127, symmetric: bool = True) -> torch.Tensor:
    """``torch.ao.nn.qat.Linear`` with the default QAT qconfig, on a call of a fresh observer, in train or eval mode
    (``eval()`` leaves the observer running: only ``torch.ao.quantization.disable_observer`` freezes it).

    Forward:  ``y = x @ qat_weight(weight).T + bias`` (the activation is not fake-quantized by the layer).
    Backward: ``dL/dx = dL/dy @ W_fq``, ``dL/dbias = sum(dL/dy)``, ``dL/dweight`` the STE of :func:`qat_weight`.
    Dtype:    follows ``x``.
    Shape:    ``x (..., K)``, ``weight (N, K)``, ``bias (N,)`` -> ``(..., N)``. Each sample's output depends on its
              own row only (the statistics are the weight's).
    """
    w = qat_weight(weight, quant_min=quant_min, quant_max=quant_max, symmetric=symmetric)
    return torch.nn.functional.linear(x, w.to(x.dtype), None if bias is None else bias.to(x.dtype))


def qat_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, stride: int = 1,
               padding: int = 0, dilation: int = 1, groups: int = 1, quant_min: int = -128, quant_max: int = 127,
               symmetric: bool = True) -> torch.Tensor:
    """``torch.ao.nn.qat.Conv2d`` with the default QAT qconfig, as :func:`qat_linear`: ``conv2d(x,
    qat_weight(weight), bias)`` (statistics per output channel over ``(in_channels / groups, kh, kw)``).
    Backward: autograd through the convolution and the weight's STE. Shape: ``x (B, C, H, W)``, ``weight (O, C /
    groups, kh, kw)`` -> ``(B, O, H', W')``."""
    w = qat_weight(weight, quant_min=quant_min, quant_max=quant_max, symmetric=symmetric)
    return torch.nn.functional.conv2d(x, w.to(x.dtype), None if bias is None else bias.to(x.dtype), stride=stride,
                                      padding=padding, dilation=dilation, groups=groups)


def _float32_minmax_qparams(rows: torch.Tensor, *, quant_min: int, quant_max: int, symmetric: bool,
                            eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """torchao's ``choose_qparams_affine`` over each row of ``rows`` (float32 arithmetic throughout): the range
    widened to 0; symmetric: ``scale = max(-lo, hi) / ((quant_max - quant_min) / 2)``, zero point
    ``int((quant_max + quant_min + 1) / 2)``; asymmetric: ``scale = (hi - lo) / (quant_max - quant_min)``, zero point
    ``clamp(quant_min - round(lo / scale))``; the scale at least ``eps``."""
    r = rows.detach().to(torch.float32)
    lo, hi = torch.clamp(r.amin(dim=1), max=0.0), torch.clamp(r.amax(dim=1), min=0.0)
    if symmetric:
        scale = torch.clamp(torch.maximum(-lo, hi) / (float(quant_max - quant_min) / 2), min=eps)
        return scale, torch.full_like(scale, float(int((quant_max + quant_min + 1) / 2)))
    scale = torch.clamp((hi - lo) / float(quant_max - quant_min), min=eps)
    return scale, torch.clamp(quant_min - torch.round(lo / scale), quant_min, quant_max)


def fake_quantize_rows(x: torch.Tensor, *, quant_min: int, quant_max: int, symmetric: bool, group_size: int | None,
                       eps: float = float(torch.finfo(torch.float32).tiny)) -> torch.Tensor:
    """Dynamic fake quantization of ``x`` by the range of each row (each token: ``group_size`` None) or of each group
    of ``group_size`` consecutive elements along the last dim, as torchao's ``IntxFakeQuantizer`` (qparams by
    :func:`_float32_minmax_qparams`, recomputed on every call from the detached ``x``).

    Forward:  :func:`fake_quantize` of each row or group with its own scale and zero point (``x * (1 / scale)`` in
              float32, round half to even, clamp, ``(q - zero_point) * scale``).
    Backward: the STE inside the clamp range, ``dL/dx = dL/dy * 1[quant_min <= round(x * inv_scale) + zero_point <=
              quant_max]``; the scale and zero point are constants.
    Dtype:    computed on ``float32(x)`` (a float64 ``x`` would part from it on the ties: a group's negative extreme
              lands on -7.5 steps by construction), returned in ``x``'s dtype.
    Shape:    same as ``x``; ``group_size`` divides its last dim.
    """
    _check_granularity(x, None, group_size)
    width = x.shape[-1] if group_size is None else group_size
    rows = x.to(torch.float32).reshape(-1, width)  # torchao's layers quantize float32 values
    scale, zero_point = _float32_minmax_qparams(rows, quant_min=quant_min, quant_max=quant_max, symmetric=symmetric,
                                                eps=eps)
    return fake_quantize(rows, scale=scale, zero_point=zero_point, quant_min=quant_min, quant_max=quant_max,
                         axis=0).reshape(x.shape).to(x.dtype)


def fake_quantized_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
                          group_size: int = 32, activation_range: tuple[int, int] = (-128, 127),
                          weight_range: tuple[int, int] = (-8, 7)) -> torch.Tensor:
    """torchao's QAT ``FakeQuantizedLinear`` with its documented fake quantizers: int8 per-token asymmetric
    activations and int4 per-group symmetric weights (``IntxFakeQuantizeConfig(torch.int8, "per_token",
    is_symmetric=False)``, ``IntxFakeQuantizeConfig(torch.int4, group_size=32, is_symmetric=True)``).

    Forward:  ``y = fake_quantize_rows(x, asymmetric, per token) @ fake_quantize_rows(weight, symmetric, per group
              of group_size).T + bias``; both dynamic (qparams recomputed on every call; no running statistics, no
              difference between train and eval mode); the scale at least float32's smallest normal.
    Backward: the STEs of :func:`fake_quantize_rows` through ``F.linear``: ``dL/dx = (dL/dy @ W_fq) * mask_x``,
              ``dL/dweight = (dL/dy.T @ x_fq) * mask_w`` (summed over the leading dims), ``dL/dbias = sum(dL/dy)``
              (torchao's chain rule multiplies by ``scale * (1 / scale)``, within an ulp of 1).
              A weight whose ``|w| * inv_scale`` rounds to ``quant_max + 1`` (a group's positive extreme lands on
              7.5, rounded half to even to 8) is clamped and gets no gradient.
    Dtype:    follows ``x`` (float32 here).
    Shape:    ``x (..., K)``, ``weight (N, K)`` with ``group_size`` dividing ``K``, ``bias (N,)`` -> ``(..., N)``.
              Per token: each sample's output depends on its own rows only.
    """
    xq = fake_quantize_rows(x, quant_min=activation_range[0], quant_max=activation_range[1], symmetric=False,
                            group_size=None)
    wq = fake_quantize_rows(weight, quant_min=weight_range[0], quant_max=weight_range[1], symmetric=True,
                            group_size=group_size)
    return torch.nn.functional.linear(xq, wq.to(x.dtype), None if bias is None else bias.to(x.dtype))
