"""FP8 quantization with scales: the saturating casts to ``float8_e4m3fn`` / ``float8_e5m2``, per-tensor and per-row
scales, and the weight-only fp8 linear layer (torchao's ``Float8WeightOnlyConfig``).

The words are torchao's (``quant_primitives._choose_scale_float8`` / ``_quantize_affine_float8``): a code ``q`` (an
fp8 number) stands for the real value ``q * scale``; ``fmt`` names the format, ``per_row`` one scale per row (the
last dim reduced) instead of one per tensor.

The arithmetic is float32's, as torchao's on the CPU:

- ``scale = max(float32(amax / max_finite), eps)``: the quotient rounded once to float32 (``amax`` of the float32
  values); ``eps`` keeps it positive, so an all-zero row has codes 0. torchao's weight-only path clamps nothing
  (``eps = 0``): a zero row then gets ``scale = 0`` and codes ``0 / 0 = NaN``.
- ``q = fp8(clamp(float32(x / scale), -max_finite, max_finite))``: a true division rounded to float32, then
  saturated, then one cast, round to nearest with ties to even (torch's ``Tensor.to``). The clamp is the
  saturation: an unclamped cast overflows to NaN (e4m3fn has no infinity) or inf (e5m2).
- ``dequantize(q) = float32(q) * scale`` in float32.

Inputs must be finite. The format's constants (IEEE-style, bias ``2**(e-1) - 1``): e4m3fn has 3 mantissa bits,
max 448, smallest normal ``2**-6``, smallest subnormal ``2**-9``, no infinity; e5m2 has 2 mantissa bits, max 57344,
smallest normal ``2**-14``, smallest subnormal ``2**-16``.
"""

from __future__ import annotations

import torch

from qsnn_reference import _validate

#: The fp8 formats by name.
FORMATS = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}

#: The default lower bound of a scale: float32's smallest normal.
SCALE_EPS = float(torch.finfo(torch.float32).tiny)


def max_finite(fmt: str) -> float:
    """The largest finite value of a format: ``max_finite("e4m3fn") == 448.0``, ``max_finite("e5m2") == 57344.0``."""
    _validate.one_of("fmt", fmt, tuple(FORMATS))
    return float(torch.finfo(FORMATS[fmt]).max)


def choose_scale(x: torch.Tensor, *, fmt: str, per_row: bool, eps: float = SCALE_EPS) -> torch.Tensor:
    """The scale that maps ``amax`` onto the format's largest finite value.

    Forward:  ``scale = max(float32(amax / max_finite(fmt)), eps)`` with ``amax = max |float32(x)|`` over all of
              ``x`` (``per_row`` False) or over each row, the last dim (``per_row`` True); the quotient is rounded
              once to float32. ``eps = 0`` is torchao's rule (no clamp).
    Backward: none (a statistic of the detached input).
    Dtype:    float32.
    Shape:    ``()`` per tensor; ``x.shape[:-1] + (1,)`` per row.
    """
    _validate.one_of("fmt", fmt, tuple(FORMATS))
    _validate.in_range("eps", eps, 0.0)
    x32 = x.detach().to(torch.float32).abs()
    amax = x32.amax(dim=-1, keepdim=True) if per_row else x32.amax()
    # float64 division of float32 operands rounded to float32 is float32's correctly rounded division
    scale = (amax.to(torch.float64) / max_finite(fmt)).to(torch.float32)
    return torch.clamp(scale, min=eps)


def quantize(x: torch.Tensor, *, scale: torch.Tensor, fmt: str) -> torch.Tensor:
    """The saturating cast of ``x / scale`` to fp8.

    Forward:  ``q = fp8(clamp(float32(x / scale), -max_finite, max_finite))``, round to nearest, ties to even;
              ``scale`` (float32, broadcasting against ``x``) may be 0 (torchao's unclamped scale): ``0 / 0`` gives
              NaN codes.
    Backward: none (codes).
    Dtype:    ``FORMATS[fmt]``.
    Shape:    same as ``x``.
    """
    _validate.one_of("fmt", fmt, tuple(FORMATS))
    s = torch.as_tensor(scale).detach().to(device=x.device, dtype=torch.float32)
    _validate.in_range("scale", s, 0.0)
    scaled = (x.detach().to(torch.float32).to(torch.float64) / s.to(torch.float64)).to(torch.float32)
    top = max_finite(fmt)
    return torch.clamp(scaled, -top, top).to(FORMATS[fmt])


def dequantize(q: torch.Tensor, *, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The real values of fp8 codes: ``float32(q) * scale`` rounded to float32, then cast to ``dtype``."""
    s = torch.as_tensor(scale).to(device=q.device, dtype=torch.float32)
    return (q.to(torch.float32) * s).to(dtype)


def weight_only_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
                       fmt: str = "e4m3fn", per_row: bool = True, eps: float = SCALE_EPS) -> torch.Tensor:
    """A linear layer whose weight is held in fp8 with its scales (torchao's ``Float8WeightOnlyConfig``: e4m3fn,
    per row).

    Forward:  ``s = choose_scale(weight, fmt, per_row, eps)`` (per row: one per output channel),
              ``W = dequantize(quantize(weight, s, fmt), s)``, ``y = x @ W.T + bias``.
    Backward: autograd through the matmul: ``dL/dx = dL/dy @ W``, ``dL/dbias = sum(dL/dy)``; the weight is a
              constant (the quantized weight has no gradient).
    Dtype:    follows ``x`` (``W`` is cast to it).
    Shape:    ``x (..., K)``, ``weight (N, K)``, ``bias (N,)`` -> ``(..., N)``.
    """
    _validate.ndim_at_least("weight", weight, 2)
    scale = choose_scale(weight, fmt=fmt, per_row=per_row, eps=eps)
    w = dequantize(quantize(weight, scale=scale, fmt=fmt), scale=scale, dtype=x.dtype)
    return torch.nn.functional.linear(x, w, None if bias is None else bias.to(x.dtype))
