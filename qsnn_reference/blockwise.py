"""Weight quantization by blocks as bitsandbytes defines it: 4-bit NF4 / FP4 codes with one absmax per block of 64
weights (QLoRA), the absmax itself quantized to 8 bits (double quantization), and LLM.int8's vector-wise int8 codes
(one absmax per row, 127 levels a side).

The words are bitsandbytes' (``functional.py``): ``code`` (the code book: the real values a code stands for, in
``[-1, 1]``), ``absmax`` (a block's scale), ``blocksize``, ``quant_type``, ``offset`` and ``compress_statistics``
(double quantization). A code ``q`` of a block stands for ``code[q] * absmax``.

Every number follows bitsandbytes 0.50's CPU path (``backends/default/ops.py`` for the 4-bit quantization,
``csrc/cpu_ops.cpp`` for the 8-bit blockwise quantization of the absmax): float32 arithmetic, the scaled value
``w * (1 / absmax)`` (a float32 reciprocal; the tail block, shorter than ``blocksize``, divides instead), clamped to
``[-1, 1]``, then the nearest code; a value exactly halfway between two codes takes the lower one. The weights are
frozen: the layers' gradient reaches the input (and the bias), never the quantized weight.
"""

from __future__ import annotations

import torch

from qsnn_reference import _validate

#: The NF4 code book (QLoRA, appendix E; bitsandbytes ``get_4bit_type("nf4")``): quantiles of N(0, 1) scaled to
#: [-1, 1], with an exact 0; code q stands for NF4_CODE[q]. Sorted.
NF4_CODE = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
            -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
            0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023,
            1.0)

#: The FP4 code book (1 sign, 2 exponent, 1 mantissa bit, exponent bias 2; bitsandbytes ``get_4bit_type("fp4")``):
#: in bit-pattern order, code q stands for FP4_MAGNITUDES[q % 8] / 12, negated for q >= 8 (code 8 is -0).
FP4_MAGNITUDES = (0.0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0)

QUANT_TYPES = ("nf4", "fp4")

#: LLM.int8's levels on either side of 0: a row's absmax maps to 127.
INT8_LEVELS = 127

#: bitsandbytes' CPU 8-bit quantizer looks the scaled value up in a table of this many evenly spaced bins over
#: [-1, 1] (``kLUTSize``), each bin holding the code nearest its centre.
LOOKUP_BINS = 65536


# Each float32 operation the library rounds is computed in float64 and rounded to float32 once: for +, -, * and / of
# float32 operands that is the float32 result (float64 has more than twice float32's precision), and it keeps its
# rounding under torch.compile, which may otherwise fuse or reorder float32 arithmetic.
def _f32(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32)


def _times(a, b) -> torch.Tensor:
    return _f32(torch.as_tensor(a, dtype=torch.float64) * torch.as_tensor(b, dtype=torch.float64))


def _over(a, b) -> torch.Tensor:
    return _f32(torch.as_tensor(a, dtype=torch.float64) / torch.as_tensor(b, dtype=torch.float64))


def _plus(a, b) -> torch.Tensor:
    return _f32(torch.as_tensor(a, dtype=torch.float64) + torch.as_tensor(b, dtype=torch.float64))


def float16_values(t: torch.Tensor) -> torch.Tensor:
    """``t`` rounded to float16's values (nearest, ties to even), as float32: 11 significant bits for normal
    magnitudes, steps of 2**-24 below 2**-14 (subnormals), infinity past 65520. Written out rather than cast, so a
    compiler that keeps the value in float32 cannot skip the rounding."""
    t = t.to(torch.float64)
    exponent = torch.floor(torch.log2(t.abs().clamp(min=2.0**-14)))
    quantum = torch.exp2(exponent - 10)
    rounded = torch.round(t / quantum) * quantum
    return _f32(torch.where(rounded.abs() > 65504.0, torch.sign(t) * float("inf"), rounded))


def code_book(quant_type: str) -> torch.Tensor:
    """The 16 values of a 4-bit code book, indexed by code, float32: ``code_book("fp4")[3] == 1.0``."""
    _validate.one_of("quant_type", quant_type, QUANT_TYPES)
    if quant_type == "nf4":
        return torch.tensor(NF4_CODE, dtype=torch.float32)
    magnitudes = torch.tensor(FP4_MAGNITUDES, dtype=torch.float32) / 12.0
    return torch.cat([magnitudes, -magnitudes])


def _dynamic_code_values() -> tuple[float, ...]:
    values = []
    for e in range(7):
        points = torch.linspace(0.1, 1.0, 2**e + 1, dtype=torch.float32)
        midpoints = (points[:-1] + points[1:]) / 2.0
        decade = midpoints * (10.0 ** (e - 6)) if e < 6 else midpoints
        values += decade.tolist() + (-decade).tolist()
    return tuple(sorted(values + [0.0, 1.0]))


#: The values of :func:`dynamic_code` (a constant, so that the specs trace without leaving the graph).
DYNAMIC_CODE = _dynamic_code_values()


def dynamic_code() -> torch.Tensor:
    """The 256 values of bitsandbytes' signed dynamic 8-bit code book (``create_dynamic_map()``: 7 exponent bits,
    8 bits in all), sorted, float32: for each decade ``e = 0..6``, the ``2**e`` midpoints of ``2**e + 1`` points
    evenly spaced over [0.1, 1] (float32), times ``10**(e - 6)``, with both signs; then 0 and 1."""
    return torch.tensor(DYNAMIC_CODE, dtype=torch.float32)


def _nearest_sorted(scaled: torch.Tensor, sorted_code: torch.Tensor) -> torch.Tensor:
    """The index into ``sorted_code`` nearest each value; exactly halfway takes the lower (float32 midpoints)."""
    midpoints = _over(_plus(sorted_code[:-1], sorted_code[1:]), 2.0)
    return torch.bucketize(scaled, midpoints)


def _per_element(per_block: torch.Tensor, numel: int, blocksize: int) -> torch.Tensor:
    """Each block's value repeated over its ``blocksize`` elements, the first ``numel`` kept."""
    return per_block.unsqueeze(1).expand(-1, blocksize).reshape(-1)[:numel]


def _blocks(flat: torch.Tensor, blocksize: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(absmax, scaled)`` of a flat float32 tensor: one absmax per block of ``blocksize`` consecutive elements (the
    last block may be shorter), ``scaled = clamp(w * (1 / absmax), -1, 1)`` with a float32 reciprocal (of at least
    1e-38, so a zero block scales to 0) and, for the short tail block only, ``w / absmax`` with the tail's absmax
    itself at least 1e-38 (bitsandbytes stores the bound for a zero tail, 0 for a zero full block)."""
    n = flat.numel()
    full = n - n % blocksize
    body = flat[:full].reshape(-1, blocksize)
    absmax = body.abs().amax(dim=1)
    scaled = _times(body, _over(1.0, absmax.clamp(min=1e-38)).unsqueeze(1)).reshape(-1)
    if full < n:
        tail_absmax = flat[full:].abs().amax().clamp(min=1e-38)
        absmax = torch.cat([absmax, tail_absmax.reshape(1)])
        scaled = torch.cat([scaled, _over(flat[full:], tail_absmax)])
    return absmax, torch.clamp(scaled, -1.0, 1.0)


def quantize_4bit(weight: torch.Tensor, *, quant_type: str, blocksize: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """``(codes, absmax)``: 4-bit codes (int64, indices into :func:`code_book`, ``weight``'s shape) and one float32
    absmax per block of ``blocksize`` consecutive elements of the flattened (row-major) weight.

    Each element gets the code nearest its scaled value (:func:`_blocks`); halfway between two code values it takes
    the lower value. A block of zeros has absmax 0 and codes for 0; FP4's 0 and -0 are one value: code 0.
    """
    _validate.integer("blocksize", blocksize, min_value=1)
    code = code_book(quant_type).to(weight.device)
    absmax, scaled = _blocks(weight.detach().reshape(-1).to(torch.float32), blocksize)
    sorted_code, order = torch.sort(code, stable=True)
    return order[_nearest_sorted(scaled, sorted_code)].reshape(weight.shape), absmax


def dequantize_4bit(codes: torch.Tensor, absmax: torch.Tensor, *, quant_type: str, blocksize: int = 64) -> torch.Tensor:
    """``code[q] * absmax`` of each element's block, float32 (one rounding), ``codes``' shape."""
    values = code_book(quant_type).to(codes.device)[codes.reshape(-1)]
    scales = _per_element(absmax.to(torch.float32), values.numel(), blocksize)
    return _times(values, scales).reshape(codes.shape)


def quantize_8bit_blockwise(values: torch.Tensor, *, blocksize: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """``(codes, absmax)``: bitsandbytes' CPU 8-bit blockwise quantization with :func:`dynamic_code` (codes index
    its sorted values). Per block ``absmax = max |v|``; a block whose absmax is 0 gets code 0 throughout; else
    ``s = v * (1 / absmax)`` (float32 reciprocal) picks bin ``i = trunc((clamp(s, -1, 1) + 1) * 0.5 * 65535 +
    0.5)`` (float32) of the lookup table, and the code is the one nearest the bin's centre ``-1 + 2 i / 65535``
    (halfway: the lower), so a value within half a bin of a midpoint may take the farther code."""
    _validate.integer("blocksize", blocksize, min_value=1)
    flat = values.detach().reshape(-1).to(torch.float32)
    n = flat.numel()
    padded = torch.nn.functional.pad(flat, (0, (-n) % blocksize)).reshape(-1, blocksize)
    absmax = padded.abs().amax(dim=1)
    inverse = torch.where(absmax > 0, _over(1.0, absmax), torch.zeros_like(absmax))
    scaled = torch.clamp(_times(padded, inverse.unsqueeze(1)), -1.0, 1.0)
    bins = _plus(_times(_times(_plus(scaled, 1.0), 0.5), float(LOOKUP_BINS - 1)), 0.5).to(torch.int64)
    centres = _plus(-1.0, _over(2.0 * torch.arange(LOOKUP_BINS, dtype=torch.float64), float(LOOKUP_BINS - 1)))
    codes = _nearest_sorted(centres, dynamic_code()).to(bins.device)[bins]
    codes = torch.where((absmax == 0).unsqueeze(1), torch.zeros_like(codes), codes)
    return codes.reshape(-1)[:n].reshape(values.shape), absmax


def dequantize_8bit_blockwise(codes: torch.Tensor, absmax: torch.Tensor, *, blocksize: int = 256) -> torch.Tensor:
    """``dynamic_code()[q] * absmax`` of each element's block, float32."""
    values = dynamic_code().to(codes.device)[codes.reshape(-1)]
    return _times(values, _per_element(absmax, values.numel(), blocksize)).reshape(codes.shape)


def double_quantized_absmax(absmax: torch.Tensor, *, blocksize: int = 256) -> torch.Tensor:
    """The 4-bit absmax as a layer with ``compress_statistics=True`` reads it back: ``offset = mean(absmax)``
    (float32), the differences ``absmax - offset`` quantized by :func:`quantize_8bit_blockwise` (blocks of 256),
    dequantized and the offset added (float32)."""
    a = absmax.to(torch.float32)
    offset = a.mean()  # float32, torch's summation order (as bitsandbytes')
    codes, scales = quantize_8bit_blockwise(_plus(a, -offset), blocksize=blocksize)
    return _plus(dequantize_8bit_blockwise(codes, scales, blocksize=blocksize), offset)


def dequantized_weight_4bit(weight: torch.Tensor, *, quant_type: str, blocksize: int = 64,
                            compress_statistics: bool) -> torch.Tensor:
    """The weight a 4-bit layer computes with: :func:`quantize_4bit`, the absmax through
    :func:`double_quantized_absmax` where ``compress_statistics``, then :func:`dequantize_4bit` (float32)."""
    codes, absmax = quantize_4bit(weight, quant_type=quant_type, blocksize=blocksize)
    if compress_statistics:
        absmax = double_quantized_absmax(absmax)
    return dequantize_4bit(codes, absmax, quant_type=quant_type, blocksize=blocksize)


def linear_4bit(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, quant_type: str,
                blocksize: int = 64, compress_statistics: bool = True) -> torch.Tensor:
    """A linear layer whose weight is held as 4-bit codes (bitsandbytes ``Linear4bit``).

    Forward:  ``W = dequantized_weight_4bit(weight)`` (NF4 or FP4 codes, one absmax per block of ``blocksize``
              consecutive weights in row-major order, the absmax double-quantized where ``compress_statistics``),
              then ``y = x @ W.T + bias``.
    Backward: ``dL/dx = dL/dy @ W``, ``dL/dbias = sum(dL/dy)``; none for ``weight`` (frozen codes).
    Dtype:    follows ``x``; ``W`` is computed in float32 from the float32 weight.
    Shape:    ``x (..., K)``, ``weight (N, K)``, ``bias (N,)`` -> ``(..., N)``.
    """
    w = dequantized_weight_4bit(weight.to(torch.float32), quant_type=quant_type, blocksize=blocksize,
                                compress_statistics=compress_statistics)
    return torch.nn.functional.linear(x, w.to(x.dtype), None if bias is None else bias.to(x.dtype))


def quantize_int8_rows(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(codes, row_absmax)``: LLM.int8's vector-wise quantization as bitsandbytes runs it (``int8_vectorwise_quant``
    of a float16 tensor). The rows are rounded to float16 first; ``row_absmax = max |row|`` (float32); ``codes =
    round_half_even(row * (127 / row_absmax))`` in float32 (int64 here), where ``127 / row_absmax`` is
    ``float32(1 / row_absmax) * 127`` rounded again (torch's number-over-tensor). A row of zeros gets codes 0.
    Shape: ``a (M, K)`` -> ``(M, K)`` and ``(M,)``."""
    a16 = float16_values(a.detach())
    row_absmax = a16.abs().amax(dim=-1)
    # ``127.0 / row_absmax`` as torch computes a number over a tensor: the reciprocal, then times 127 (two roundings)
    codes = torch.round(_times(a16, _times(_over(1.0, row_absmax), float(INT8_LEVELS)).unsqueeze(-1)))
    return torch.nan_to_num(codes, nan=0.0).to(torch.int64), row_absmax


def linear_int8(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
                quantize_input: bool) -> torch.Tensor:
    """A linear layer whose weight is held as LLM.int8 codes (bitsandbytes ``Linear8bitLt``, threshold 0: no outlier
    columns).

    Forward:  ``(C_w, s_w) = quantize_int8_rows(weight)`` (one absmax per output row). Without ``quantize_input``:
              ``y = x @ (C_w * s_w / 127).T + bias`` (the dequantized weight). With it (LLM.int8's int8 product):
              ``(C_x, s_x) = quantize_int8_rows(x)`` per row of ``x``, ``y = (C_x @ C_w.T) * s_x * s_w / 127**2 +
              bias`` (the integer product exact).
    Backward: ``dL/dx = dL/dy @ (C_w * s_w / 127)``, ``dL/dbias = sum(dL/dy)``, both ways; none for ``weight``.
    Dtype:    follows ``x``; the weight (and the input, where quantized) are rounded to float16 before quantization.
    Shape:    ``x (..., K)``, ``weight (N, K)``, ``bias (N,)`` -> ``(..., N)``.
    """
    _validate.ndim_at_least("x", x, 1)
    codes_w, scale_w = quantize_int8_rows(weight)
    w = (codes_w.to(torch.float64) * scale_w.to(torch.float64).unsqueeze(1) / INT8_LEVELS).to(x.dtype)
    b = None if bias is None else bias.to(x.dtype)
    y = torch.nn.functional.linear(x, w, b)
    if not quantize_input:
        return y
    rows = x.detach().reshape(-1, x.shape[-1])
    codes_x, scale_x = quantize_int8_rows(rows)
    product = codes_x.to(torch.float64) @ codes_w.to(torch.float64).T  # integers below 2**53 for K < 2**38
    exact = product * scale_x.to(torch.float64).unsqueeze(1) * scale_w.to(torch.float64) / INT8_LEVELS**2
    if bias is not None:
        exact = exact + bias.detach().to(torch.float64)
    value = exact.to(x.dtype).reshape(x.shape[:-1] + (weight.shape[0],))
    return value + (y - y.detach())
