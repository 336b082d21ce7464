"""Bit packing of {-1, +1} tensors into integer words and the XNOR-popcount product on packed operands.

Word dtype: ``word_bits`` 8/16/32/64 -> int8/int16/int32/int64, always the *signed* two's-complement type of
that width (torch's unsigned types are incomplete). The bit pattern is what counts: the top bit lands in the
sign bit, so a word with bit ``word_bits - 1`` set is negative; view it as unsigned with e.g.
``packed.view(torch.uint8)`` to compare with a ``uint8_t`` kernel (bitorch-engine's CUTLASS container).
"""

from __future__ import annotations

import torch

from qsnn_reference import _validate
from qsnn_reference.quant import _sign, sign_ste

WORD_BITS = (8, 16, 32, 64)
WORD_DTYPES = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}
BIT_ORDERS = ("lsb", "msb")


def _bit_positions(word_bits: int, bit_order: str, device: torch.device) -> torch.Tensor:
    """The bit position inside a word that holds the j-th element of its group of ``word_bits``."""
    j = torch.arange(word_bits, dtype=torch.int64, device=device)
    return j if bit_order == "lsb" else (word_bits - 1) - j


def _word_bits_of(dtype: torch.dtype) -> int:
    for bits, word_dtype in WORD_DTYPES.items():
        if word_dtype == dtype:
            return bits
    raise ValueError(f"packed must have one of the word dtypes {tuple(WORD_DTYPES.values())}, got {dtype}")


def pack_signs(x: torch.Tensor, *, dim: int = -1, word_bits: int = 32, bit_order: str = "lsb",
               pad: float | None = None) -> torch.Tensor:
    """Pack the signs of ``x`` along ``dim`` into integer words.

    Forward:  bit = 1 where ``x > 0`` (+1), 0 otherwise (-1; a 0 in ``x`` packs as -1, so binarize with
              ``zero_value`` first). Element ``j`` of each group of ``word_bits`` consecutive elements goes
              to bit ``j`` (``bit_order="lsb"``: the first element is the least significant bit) or to bit
              ``word_bits - 1 - j`` (``"msb"``). When ``x.shape[dim]`` is not a multiple of ``word_bits`` the
              last word is filled with ``pad`` (+1.0 -> bits 1, -1.0 -> bits 0); ``pad=None`` makes that a
              ValueError. Words are two's-complement signed (see the module docstring).
    Backward: none (integer output).
    Dtype:    int8 / int16 / int32 / int64 for word_bits 8 / 16 / 32 / 64, whatever the input dtype.
    Shape:    ``x.shape`` with ``dim`` replaced by ``ceil(x.shape[dim] / word_bits)``. A negative ``dim`` is
              robust to vmap.
    """
    _validate.one_of("word_bits", word_bits, WORD_BITS)
    _validate.one_of("bit_order", bit_order, BIT_ORDERS)
    if pad is not None:
        _validate.one_of("pad", pad, (-1.0, 1.0))
    _validate.ndim_at_least("x", x, 1)
    _validate.integer("dim", dim, min_value=-x.dim(), max_value=x.dim() - 1)
    n = x.shape[dim]
    rest = -n % word_bits
    if rest and pad is None:
        raise ValueError(f"x.shape[dim] = {n} is not divisible by word_bits = {word_bits}; pass pad=+1.0 or -1.0")
    bits = (x.detach() > 0).to(torch.int64).movedim(dim, -1)
    if rest:
        filler = torch.full(bits.shape[:-1] + (rest,), int(pad > 0), dtype=torch.int64, device=x.device)
        bits = torch.cat([bits, filler], dim=-1)
    bits = bits.reshape(bits.shape[:-1] + (-1, word_bits))
    words = (bits << _bit_positions(word_bits, bit_order, x.device)).sum(dim=-1)
    if word_bits < 64:
        # Reinterpret the unsigned value as the signed word explicitly instead of relying on a wrapping cast.
        words = torch.where(words >= 2 ** (word_bits - 1), words - 2 ** word_bits, words)
    return words.to(WORD_DTYPES[word_bits]).movedim(-1, dim)


def _unpacked_bits(packed: torch.Tensor, bit_order: str) -> torch.Tensor:
    """``[..., W]`` words -> ``[..., W, word_bits]`` bits (0/1 int64) in element order."""
    word_bits = _word_bits_of(packed.dtype)
    shifts = _bit_positions(word_bits, bit_order, packed.device)
    return (packed.to(torch.int64).unsqueeze(-1) >> shifts) & 1


def unpack_signs(packed: torch.Tensor, *, dim: int = -1, length: int | None = None, bit_order: str = "lsb",
                 dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Inverse of :func:`pack_signs`.

    Forward:  bit 1 -> +1, bit 0 -> -1; the first ``length`` elements along ``dim`` are kept (None: all
              ``W * word_bits``). ``word_bits`` is read from the word dtype.
    Backward: none.
    Dtype:    ``dtype`` (float32 by default).
    Shape:    ``packed.shape`` with ``dim`` replaced by ``length``.
    """
    _validate.one_of("bit_order", bit_order, BIT_ORDERS)
    word_bits = _word_bits_of(packed.dtype)
    _validate.ndim_at_least("packed", packed, 1)
    _validate.integer("dim", dim, min_value=-packed.dim(), max_value=packed.dim() - 1)
    total = packed.shape[dim] * word_bits
    if length is not None:
        _validate.integer("length", length, min_value=0, max_value=total)
    bits = _unpacked_bits(packed.movedim(dim, -1), bit_order)
    bits = bits.reshape(bits.shape[:-2] + (total,))[..., : total if length is None else length]
    return (bits.to(dtype) * 2 - 1).movedim(-1, dim)


def xnor_popcount_matmul(a_packed: torch.Tensor, b_packed: torch.Tensor, *, k: int,
                         bit_order: str = "lsb") -> torch.Tensor:
    """The ±1 dot products of packed rows: ``out[..., m, n] = k - 2 * popcount((a[..., m, :] ^ b[n, :]) & valid)``.

    Forward:  ``a_packed`` ``[..., M, W]`` and ``b_packed`` ``[N, W]`` hold rows of ``k`` signs packed along
              the last dim with the same word dtype and ``bit_order``. Bits past ``k`` (padding) are masked
              out, so the result equals ``unpack(a) @ unpack(b).T`` exactly whatever the padding value was.
    Backward: none (integer output).
    Dtype:    int64.
    Shape:    ``[..., M, N]``.
    """
    _validate.one_of("bit_order", bit_order, BIT_ORDERS)
    word_bits = _word_bits_of(a_packed.dtype)
    if b_packed.dtype != a_packed.dtype:
        raise ValueError(f"b_packed must have a_packed's word dtype {a_packed.dtype}, got {b_packed.dtype}")
    _validate.ndim_at_least("a_packed", a_packed, 2)
    if b_packed.dim() != 2 or b_packed.shape[-1] != a_packed.shape[-1]:
        raise ValueError(f"b_packed must be [N, W] with W = {a_packed.shape[-1]}, got {tuple(b_packed.shape)}")
    words = a_packed.shape[-1]
    _validate.integer("k", k, min_value=max(1, (words - 1) * word_bits + 1), max_value=words * word_bits)
    differ = _unpacked_bits(a_packed.unsqueeze(-2) ^ b_packed, bit_order)  # [..., M, N, W, word_bits]
    index = (torch.arange(words, device=a_packed.device).unsqueeze(-1) * word_bits
             + torch.arange(word_bits, device=a_packed.device))
    popcount = (differ * (index < k)).sum(dim=(-1, -2))
    return k - 2 * popcount


def binary_matmul(x: torch.Tensor, w: torch.Tensor, *, zero_value: float = 1.0, word_bits: int = 32,
                  bit_order: str = "lsb") -> torch.Tensor:
    """``sign(x) @ sign(w).T`` computed through bit packing and XNOR-popcount.

    Forward:  ``x`` ``[..., K]`` and ``w`` ``[N, K]`` are binarized (``sign(0) = zero_value``, +1 or -1: a
              packed bit has no 0), packed along K with ``word_bits`` and ``bit_order`` (padding masked),
              and ``y = K - 2 * popcount(xnor)``, which equals the float product exactly.
    Backward: identity STE through both signs: ``dL/dx = dL/dy @ sign(w)``,
              ``dL/dw = sum over leading dims of dL/dy^T @ sign(x)``.
    Dtype:    follows ``x`` (``w`` is cast to it); integer results are exact up to 2^8 in bfloat16.
    Shape:    ``[..., N]``.
    """
    _validate.one_of("zero_value", zero_value, (-1.0, 1.0))
    _validate.one_of("word_bits", word_bits, WORD_BITS)
    _validate.one_of("bit_order", bit_order, BIT_ORDERS)
    _validate.ndim_at_least("x", x, 1)
    if w.dim() != 2 or w.shape[1] != x.shape[-1]:
        raise ValueError(f"w must be [N, K] with K = x.shape[-1] = {x.shape[-1]}, got {tuple(w.shape)}")
    w = w.to(x.dtype)
    k = x.shape[-1]
    options = dict(word_bits=word_bits, bit_order=bit_order, pad=1.0)
    a = pack_signs(_sign(x.detach(), zero_value), **options)
    b = pack_signs(_sign(w.detach(), zero_value), **options)
    exact = xnor_popcount_matmul(a, b, k=k, bit_order=bit_order).to(x.dtype)
    through = sign_ste(x, zero_value=zero_value) @ sign_ste(w, zero_value=zero_value).T
    return exact + (through - through.detach())
