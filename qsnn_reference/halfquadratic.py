"""Half-quadratic quantization's (HQQ's) weight format, with its optimizer off: the min/max rule that starts it.

A weight ``(N, K)`` is cut into groups of ``group_size`` consecutive elements along the input dim (HQQ's
``axis=1``: ``weight.reshape(-1, group_size)``, one row per group). Each group holds unsigned ``nbits`` codes, a
float ``scale`` and a float ``zero`` (HQQ's words): a code ``q`` stands for ``(q - zero) * scale``.

HQQ computes with the inverse of the scale (``inv_scale``) and inverts it once at the end; every step below is the
float32 operation it performs (``hqq/core/quantize.py``, ``Quantizer.quantize``), rounded as torch rounds (half to
even). The optimizer (``optimize=True``, HQQ's default) moves ``zero`` from this starting point to lower the weight's
error; it is not stated here: a weight already on the grid (every group's minimum on code 0, its maximum on
``2**nbits - 1``, the zero an integer code) is where the starting point has nothing left to improve.
"""

from __future__ import annotations

import torch

from qsnn_reference import _validate

#: HQQ's bounds on the inverse scale: a group whose range is at most this is given ``inv_scale = 1`` ...
TINY_RANGE = 1e-4
#: ... and ``inv_scale`` is at most this (HQQ: "to avoid half-precision problems").
MAX_INV_SCALE = 2e4


def groups(weight: torch.Tensor, group_size: int) -> torch.Tensor:
    """The weight as one row per group: ``weight.reshape(-1, group_size)``; ``group_size`` divides ``K``."""
    if weight.dim() != 2:
        raise ValueError(f"weight must be (out_features, in_features), got shape {tuple(weight.shape)}")
    _validate.integer("group_size", group_size, min_value=1)
    if weight.shape[1] % group_size:
        raise ValueError(f"group_size={group_size} must divide in_features={weight.shape[1]}")
    return weight.reshape(-1, group_size)


def minmax_qparams(weight: torch.Tensor, *, nbits: int, group_size: int,
                   round_zero: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``(inv_scale, zero)`` of each group (shape ``(groups, 1)``, float32) from its range, in float32:
    ``inv_scale = (2**nbits - 1) / (max - min)`` as torch divides a number by a tensor (the reciprocal, rounded to
    float32, times the number), 1 where ``max - min <= 1e-4``, at most ``2e4``;
    ``zero = -min * inv_scale``, rounded half to even where ``round_zero`` (HQQ's default for 4 bits)."""
    _validate.integer("nbits", nbits, min_value=1, max_value=8)
    rows = groups(weight.detach().to(torch.float32), group_size)
    low, high = rows.amin(dim=1, keepdim=True), rows.amax(dim=1, keepdim=True)
    span = high - low
    inv_scale = torch.where(span.abs() <= TINY_RANGE, torch.ones_like(span), (2 ** nbits - 1) / span)
    inv_scale = inv_scale.clamp(max=MAX_INV_SCALE)
    zero = -low * inv_scale
    return inv_scale, torch.round(zero) if round_zero else zero


def quantize_weight(weight: torch.Tensor, *, nbits: int, group_size: int,
                    round_zero: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(codes, scale, zero)`` by the min/max rule (HQQ's ``Quantizer.quantize`` with ``optimize=False``).

    Forward:  with ``(inv_scale, zero) = minmax_qparams(...)`` per group, ``codes = clamp(round(w * inv_scale +
              zero), 0, 2**nbits - 1)`` (product and sum each rounded to float32, then half to even) and ``scale =
              1 / inv_scale`` (float32, the reciprocal).
    Backward: none (integer codes).
    Dtype:    float32 codes (integers), scales and zeros.
    Shape:    codes ``(groups, group_size)``, scale and zero ``(groups, 1)``.
    """
    inv_scale, zero = minmax_qparams(weight, nbits=nbits, group_size=group_size, round_zero=round_zero)
    rows = groups(weight.detach().to(torch.float32), group_size)
    codes = torch.clamp(torch.round(rows * inv_scale + zero), 0, 2 ** nbits - 1)
    return codes, 1.0 / inv_scale, zero


def dequantize_weight(codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, *,
                      shape: tuple[int, int]) -> torch.Tensor:
    """HQQ's ``Quantizer.dequantize``: ``((codes - zero) * scale).reshape(shape)`` in float32 (the compute dtype of
    a float32 layer), each operation rounded to float32; ``scale`` and ``zero`` broadcast over their group's row."""
    rows = codes.to(torch.float32)
    return ((rows - zero.to(torch.float32)) * scale.to(torch.float32)).reshape(shape)


def minmax_weight_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, nbits: int,
                         group_size: int, round_zero: bool) -> torch.Tensor:
    """A linear layer whose float weight is quantized once by HQQ's min/max rule (``HQQLinear`` of a float32 layer,
    ``compute_dtype=torch.float32``, ``axis=1``, with ``optimize=False``; or on a weight already on the grid, with
    its optimizer on).

    Forward:  ``W' = dequantize_weight(*quantize_weight(weight, nbits, group_size, round_zero))`` (float32), then
              ``y = x @ W'.T + bias``.
    Backward: ``dL/dx = dL/dy @ W'``, ``dL/dbias = sum(dL/dy)``; the weight is a constant (HQQ's quantized weight
              has no gradient).
    Dtype:    follows ``x``; ``W'`` is computed in float32 and the product summed in ``x``'s dtype, at least
              float32, then cast.
    Shape:    ``x (..., K)``, ``weight (N, K)``, ``bias (N,)`` -> ``(..., N)``; ``group_size`` divides ``K``.
    """
    codes, scale, zero = quantize_weight(weight, nbits=nbits, group_size=group_size, round_zero=round_zero)
    quantized = dequantize_weight(codes, scale, zero, shape=tuple(weight.shape))
    wide = torch.promote_types(torch.promote_types(x.dtype, torch.float32), weight.dtype)
    y = torch.nn.functional.linear(x.to(wide), quantized.to(wide), None if bias is None else bias.to(wide))
    return y.to(x.dtype)
