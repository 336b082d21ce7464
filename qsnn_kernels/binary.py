"""Packed binary kernels as PyTorch operators: sign + bit packing, binary linear/matmul, binary conv2d.

Each forward is an operator in the ``qsnn_kernels`` namespace (``_runtime.operator``) with a fake (meta) kernel and a
vmap rule (opaque to ``torch.compile(fullgraph=True)`` and ``torch.export``); an ``autograd.Function`` with
``setup_context`` adds the spec's straight-through backward (:mod:`qsnn_reference.quant`'s ``*_grad`` formulas and
``a * sign(W)`` weights), so ``torch.func.grad``/``vmap`` compose with it (``torch.library.custom_op``'s
``register_autograd`` does not, torch 2.13: "an autograd.Function ... must override the setup_context staticmethod"). The forward is exact
integer arithmetic on the signs:

- weights are bit-packed along K into int32 words (lsb first: the layout of :func:`reference.packing.pack_signs`
  with ``word_bits=32, bit_order="lsb"``), 16 times fewer bytes than float16;
- small batches (``M <= GEMV_MAX_M``, +-1 activations) pack the activations too and XOR-popcount them against
  the packed weights (:func:`xnor_gemv`): on the integer ALUs up to 4 rows, on the binary tensor cores
  (``mma.sync`` ``b1`` ``xor.popc``, CUDA compute capability 8.0+) from 5 rows;
- larger batches on a CUDA GPU with FP8 tensor cores (compute capability 8.9+) write the signs as e4m3 bytes
  (+-1 and 0 are exact in e4m3) and multiply them with ``torch._scaled_mm`` (cuBLASLt; integer sums are exact:
  every partial sum is an integer far below 2^24), scale and bias in its epilogue (``"fp8"``);
- otherwise (the CPU interpreter, older GPUs, float64) int8 activations (+-1, or 0 from a zero padding) go to
  the int8 tensor cores of our Triton GEMM, expanding the weight bits to int8 on chip (``"onchip"``) or once per
  call into device memory (``"expand"``, from ``EXPAND_MIN_M`` rows);
- the epilogue applies the spec's weight scale (none / per tensor / per output channel) and the bias.
"""

from __future__ import annotations

import functools
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from qsnn_reference import quant as Q

from ._runtime import kernel, operator, signature_once

#: Dispatch thresholds (rows of the activation matrix); measured on an H200, see docs/kernels.md.
GEMV_MAX_M = 16
EXPAND_MIN_M = 1024
FP8_MIN_M = 64
#: The implicit-GEMM conv's configs on CUDA: (BLOCK_M, BLOCK_N, num_warps, num_stages). A conv whose GEMM has at
#: least CONV_TUNE_MIN_FLOP operations times each config once (per device and problem, outside CUDA-graph capture:
#: every config computes the same bits) and keeps the fastest; smaller ones, and any call during a capture before
#: its problem was timed, take the first. CONV_IMPLICIT False: im2col instead. docs/kernels.md, "Binary conv2d".
CONV_CUDA = [(128, 128, 8, 3), (128, 128, 8, 4), (256, 128, 8, 3), (128, 256, 8, 3)]
CONV_TUNE_MIN_FLOP = 2e9
CONV_IMPLICIT = True
#: XOR-popcount kernels on CUDA by batch rows (the first entry whose bound is >= M): (kernel, BLOCK_N,
#: BLOCK_W, num_warps, fused). "plain": [BLOCK_M, BLOCK_N, BLOCK_W] word tiles, one popcount a word;
#: "hs": Harley-Seal carry-save counting, eight words a step; fused: the float activations are signed and packed
#: inside the GEMV (no separate packing launch). "bmma": the binary tensor cores, (kind, tiles of 8 weight rows
#: a program, warps splitting K a tile, steps unrolled, -); compute capability 8.0+, else the batch-16 "plain"
#: tile. "tc" (measured, not dispatched): int8 tensor cores on bits unpacked on chip, (kind, BLOCK_N, BLOCK_W,
#: num_warps, num_stages). Chosen on an H100 (docs/kernels.md, "Binary GEMV").
GEMV_CUDA = [(1, ("plain", 32, 256, 8, True)), (4, ("plain", 16, 64, 4, False)), (16, ("bmma", 1, 2, 2, False))]
#: The popcount tile that "bmma" falls back to below compute capability 8.0.
GEMV_NO_BMMA = ("plain", 16, 64, 4, False)
#: cuBLASLt's fast accumulation for the fp8 GEMM: 5% faster at 8192^3 on an H200; exact for these integer sums
#: while |sum| <= K <= FP8_FAST_MAX_K (suites/kernels checks K all-equal products at 8192).
FP8_FAST_ACCUM = True
FP8_FAST_MAX_K = 8192

INPUT_QUANTS = ("ste", "clipped_ste", "approx_sign", "hardtanh_ste")
WEIGHT_SCALINGS = ("none", "tensor", "channel")
PATHS = ("auto", "gemv", "onchip", "expand", "fp8")
#: e4m3 bit patterns of +1.0 and -1.0 (as int8: 0x38, 0xB8).
E4M3_ONE, E4M3_MINUS_ONE = 0x38, 0xB8 - 256


def _src():
    from . import _src_binary

    return _src_binary


class _Kernels:
    """The kernels, built on first use (so importing this module never imports Triton)."""

    def __getattr__(self, name: str):
        k = kernel(getattr(_src(), name + "_kernel"))
        setattr(self, name, k)
        return k


K_ = _Kernels()


def _cuda(t: torch.Tensor) -> bool:
    return t.device.type == "cuda"


def _kernel_view(t: torch.Tensor) -> torch.Tensor:
    """``t`` as the kernel reads it: Triton's interpreter (CPU) misreads bfloat16 (numpy has none), so CPU bfloat16
    tensors go in as float32 (exact)."""
    return t.float() if (t.dtype == torch.bfloat16 and not _cuda(t)) else t


def _kernel_out_dtype(dtype: torch.dtype, device: torch.device) -> torch.dtype:
    return torch.float32 if (dtype == torch.bfloat16 and device.type != "cuda") else dtype


def _fresh(t: torch.Tensor) -> torch.Tensor:
    """A custom op must not return a view (autograd refuses in-place ops on it downstream)."""
    return t.clone() if t._base is not None else t


def fp8_available(device: torch.device) -> bool:
    """Whether ``device`` has FP8 tensor cores that ``torch._scaled_mm`` drives (CUDA, compute capability 8.9+)."""
    if device.type != "cuda" or not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return False
    return _capability(torch.cuda.current_device() if device.index is None else device.index) >= (8, 9)


@functools.lru_cache(maxsize=None)
def _capability(index: int) -> tuple:
    """A CUDA device's compute capability (asked once: the query costs host time on every eager call)."""
    return torch.cuda.get_device_capability(index)


# ----------------------------------------------------------------------------------------------- building blocks

def pack_rows(x2d: torch.Tensor, *, zero_bit: int = 0, pad_bit: int = 1, msb: bool = False) -> torch.Tensor:
    """``[R, L]`` floats -> ``[R, ceil(L / 32)]`` int32 words of their signs (1 = positive)."""
    x2d = _kernel_view(x2d).contiguous()
    rows, length = x2d.shape
    words = -(-length // 32)
    out = torch.empty((rows, words), dtype=torch.int32, device=x2d.device)
    if rows and words:
        if _cuda(x2d):
            block_r, block_w = (16, 4) if rows > 8 else (1, 16)
        else:
            block_r, block_w = (8, 2)
        grid = (-(-rows // block_r), -(-words // block_w))
        K_.pack_signs(x2d.device, grid, x2d, out, rows, length, words, x2d.stride(0), out.stride(0),
                      ZERO_BIT=zero_bit, PAD_BIT=pad_bit, MSB=msb, BLOCK_R=block_r, BLOCK_W=block_w)
    return out


def _sign_bytes(zero_value: float, fp8: bool) -> dict:
    pos, neg = (E4M3_ONE, E4M3_MINUS_ONE) if fp8 else (1, -1)
    return dict(POS=pos, NEG=neg, ZERO=pos if zero_value > 0 else neg if zero_value < 0 else 0)


def sign_int8(x: torch.Tensor, zero_value: float, *, fp8: bool = False) -> torch.Tensor:
    """``sign(x)`` as int8 with ``sign(0) = zero_value`` (any shape); ``fp8``: as e4m3 (a ``float8_e4m3fn`` view)."""
    x = _kernel_view(x).contiguous()
    out = torch.empty(x.shape, dtype=torch.int8, device=x.device)
    n = x.numel()
    if n:
        block = 1024 if _cuda(x) else 256
        K_.sign_i8(x.device, (-(-n // block),), x, out, n, BLOCK=block, **_sign_bytes(zero_value, fp8))
    return out.view(torch.float8_e4m3fn) if fp8 else out


def sign_rows(x2d: torch.Tensor, zero_value: float, *, k_pad: int = 16, fp8: bool = True) -> torch.Tensor:
    """``sign(x2d)`` rows ``[R, L]`` as bytes ``[R, ceil(L / k_pad) * k_pad]``, the padding zero; ``fp8``: e4m3."""
    x2d = _kernel_view(x2d)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    rows, length = x2d.shape
    lp = -(-length // k_pad) * k_pad
    out = torch.empty((rows, lp), dtype=torch.int8, device=x2d.device)
    if rows and lp:
        block_r, block_l = (16, 256) if _cuda(x2d) else (8, 32)
        K_.sign_rows(x2d.device, (-(-rows // block_r), -(-lp // block_l)), x2d, out, rows, length, lp,
                     x2d.stride(0), out.stride(0), BLOCK_R=block_r, BLOCK_L=block_l,
                     **_sign_bytes(zero_value, fp8))
    return out.view(torch.float8_e4m3fn) if fp8 else out


def unpack_bits(packed: torch.Tensor, k: int, *, k_pad: int = 1, fp8: bool = False) -> torch.Tensor:
    """``[N, KW]`` int32 words -> ``[N, ceil(k / k_pad) * k_pad]`` signs -1/+1 (lsb order), the padding zero;
    int8, or e4m3 (``fp8``)."""
    packed = packed.contiguous()
    n, kw = packed.shape
    kp = -(-k // k_pad) * k_pad
    out = torch.empty((n, kp), dtype=torch.int8, device=packed.device)
    if n and kp:
        block_n, block_w = (32, 8) if _cuda(packed) else (8, 2)
        words = -(-kp // 32)
        pos, neg = (E4M3_ONE, E4M3_MINUS_ONE) if fp8 else (1, -1)
        K_.unpack_bits_i8(packed.device, (-(-n // block_n), -(-words // block_w)), packed, out, n, k, kp, kw,
                          packed.stride(0), out.stride(0), POS=pos, NEG=neg, BLOCK_N=block_n, BLOCK_W=block_w)
    return out.view(torch.float8_e4m3fn) if fp8 else out


def _scale_args(scale: Optional[torch.Tensor], like: torch.Tensor):
    if scale is None:
        return 0, like
    return (1 if scale.numel() == 1 else 2), _kernel_view(scale.reshape(-1)).contiguous()


def _gemv_config(m: int) -> tuple:
    for bound, config in GEMV_CUDA:
        if m <= bound:
            return config
    return GEMV_CUDA[-1][1]


def _even_words(kw: int, *packed: torch.Tensor) -> bool:
    """Whether packed rows can be read two words at a time: even word counts, row strides and addresses."""
    return kw % 2 == 0 and all(t.stride(0) % 2 == 0 and t.data_ptr() % 8 == 0 for t in packed)


def xnor_gemv(a: torch.Tensor, b_packed: torch.Tensor, k: int, *, scale: Optional[torch.Tensor] = None,
              bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.float32, zero_bit: int = 1,
              config: tuple | None = None) -> torch.Tensor:
    """``scale * (k - 2 popcount(a ^ b)) + bias`` for +-1 rows: ``b [N, KW]`` packed (pad bit 1), ``a`` packed
    ``[M, KW]`` likewise, or the float activations ``[M, k]`` (their signs, ``sign(0)`` packed as ``zero_bit``:
    packed here, or inside the GEMV when the CUDA config says ``fused``). ``config``: see ``GEMV_CUDA``."""
    m = a.shape[0]
    n = b_packed.shape[0]
    kw = b_packed.shape[1]
    out = torch.empty((m, n), dtype=_kernel_out_dtype(out_dtype, a.device), device=a.device)
    bias = None if bias is None else _kernel_view(bias)
    if not (m and n):
        return out.to(out_dtype)
    mode, scale_t = _scale_args(scale, out)
    cuda = _cuda(a)
    config = config or _gemv_config(m)
    if config[0] == "bmma" and cuda and _capability(a.device.index if a.device.index is not None
                                                    else torch.cuda.current_device()) < (8, 0):
        config = GEMV_NO_BMMA  # mma.sync m16n8k256 .b1 needs sm_80
    kind, block_n, block_w, warps, fused = config
    if kind == "tc":
        if a.dtype != torch.int32:
            return _xnor_gemv_tc(a, b_packed, k, scale=scale, bias=bias, out_dtype=out_dtype, zero_bit=zero_bit,
                                 block_n=block_n, block_w=block_w, warps=warps, stages=fused)
        kind, block_n, block_w, warps, fused = "plain", 16, 64, 4, False  # packed activations: popcounts
    if not cuda:  # the interpreter: the same kernel as CUDA would run, small blocks, packing outside
        block_n, block_w, fused = 16, 4, False
    a_float = a.dtype.is_floating_point
    if a_float and not fused:
        a = pack_rows(a, zero_bit=zero_bit, pad_bit=1)
        a_float = False
    a = _kernel_view(a).contiguous()
    block_m = min(16, 1 << (m - 1).bit_length()) if kind == "plain" else 16
    if not cuda:
        block_m = max(2, block_m)
    grid = (-(-n // block_n), -(-m // block_m))
    common = (a.device, grid, a, b_packed, out, scale_t, bias if bias is not None else out, m, n, k, kw,
              a.stride(0), b_packed.stride(0), out.stride(0))
    extra = {"num_warps": warps} if cuda else {}
    if kind == "bmma":
        ntile, ksplit, unroll = config[1:4]
        K_.xnor_gemv_bmma(a.device, (-(-n // (8 * ntile)), -(-m // 16)), a, b_packed, out, scale_t,
                          bias if bias is not None else out, m, n, k, kw, a.stride(0), b_packed.stride(0),
                          out.stride(0), SCALE_MODE=mode, HAS_BIAS=bias is not None, USE_ASM=cuda, NTILE=ntile,
                          KSPLIT=ksplit, UNROLL=unroll, VEC=cuda and _even_words(kw, a, b_packed),
                          **({"num_warps": ntile * ksplit} if cuda else {}))
    elif kind == "hs":
        K_.xnor_gemv_hs(*common, SCALE_MODE=mode, HAS_BIAS=bias is not None, USE_ASM=cuda, BLOCK_M=block_m,
                        BLOCK_N=block_n, **extra)
    else:
        K_.xnor_gemv(*common, SCALE_MODE=mode, HAS_BIAS=bias is not None, USE_ASM=cuda, A_FLOAT=a_float,
                     ZERO_BIT=zero_bit, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_W=block_w, **extra)
    return out.to(out_dtype)


def _xnor_gemv_tc(a: torch.Tensor, b_packed: torch.Tensor, k: int, *, scale: Optional[torch.Tensor],
                  bias: Optional[torch.Tensor], out_dtype: torch.dtype, zero_bit: int, block_n: int, block_w: int,
                  warps: int, stages: int) -> torch.Tensor:
    """:func:`xnor_gemv` on the int8 tensor cores (config kind ``"tc"``): the signs of ``a [M, k]`` (float, or
    int8 signs) as permuted int8 rows plus their sums (``sign_perm_kernel``), then ``xnor_gemv_tc_kernel``, which
    unpacks the weight bits to bytes on chip. Measured slower than the popcounts at batch 16 (docs/kernels.md):
    a measured alternative, not dispatched."""
    a = _kernel_view(a)
    if a.stride(-1) != 1:
        a = a.contiguous()
    m = a.shape[0]
    n, kw = b_packed.shape
    b_packed = b_packed.contiguous()
    cuda = _cuda(a)
    if not cuda:
        block_n, block_w = 16, 1
    kp = -(-kw // block_w) * block_w * 32
    out = torch.empty((m, n), dtype=_kernel_out_dtype(out_dtype, a.device), device=a.device)
    bias = None if bias is None else _kernel_view(bias)
    if not (m and n):
        return out.to(out_dtype)
    mode, scale_t = _scale_args(scale, out)
    x8 = torch.empty((m, kp), dtype=torch.int8, device=a.device)
    sums = torch.empty((m,), dtype=torch.int32, device=a.device)
    block = min(4096 if cuda else 64, 1 << (kp - 1).bit_length())
    K_.sign_perm(a.device, (m,), a, x8, sums, k, kp, a.stride(0), x8.stride(0), ZERO=1 if zero_bit else -1,
                 USE_SUM=cuda, BLOCK=block, LOG_BLOCK=block.bit_length() - 1, **({"num_warps": 4} if cuda else {}))
    extra = {"num_warps": warps, "num_stages": stages} if cuda else {}
    K_.xnor_gemv_tc(a.device, (-(-n // block_n), -(-m // 16)), x8, sums, b_packed, out, scale_t,
                    bias if bias is not None else out, m, n, kw, x8.stride(0), b_packed.stride(0), out.stride(0),
                    SCALE_MODE=mode, HAS_BIAS=bias is not None, USE_ASM=cuda, BLOCK_N=block_n, BLOCK_M=16,
                    BLOCK_W=block_w, **extra)
    return out.to(out_dtype)


#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) on CUDA, chosen by the rows M.
_GEMM_CONFIGS = {"large": (128, 256, 128, 8, 3), "medium": (64, 128, 128, 4, 4), "small": (16, 128, 256, 4, 4)}


def gemm_a8(a_i8: torch.Tensor, b: torch.Tensor, k: int, *, scale: Optional[torch.Tensor] = None,
            bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.float32,
            config: tuple | None = None) -> torch.Tensor:
    """``scale * (a @ b.T) + bias`` on the int8 tensor cores; ``b`` +-1 signs, packed int32 ``[N, KW]`` or int8
    ``[N, k]``; ``a`` int8 ``[M, k]`` in {-1, 0, 1}. With e4m3 ``a`` and ``b`` (CUDA only) on the fp8 tensor cores
    (our Triton GEMM, measured against ``torch._scaled_mm``)."""
    a_i8 = a_i8.contiguous()
    b = b.contiguous()
    m = a_i8.shape[0]
    n = b.shape[0]
    out = torch.empty((m, n), dtype=_kernel_out_dtype(out_dtype, a_i8.device), device=a_i8.device)
    bias = None if bias is None else _kernel_view(bias)
    if not (m and n):
        return out.to(out_dtype)
    mode, scale_t = _scale_args(scale, out)
    packed = b.dtype == torch.int32
    is_float = a_i8.dtype.is_floating_point
    kw = -(-k // 32)
    extra = {}
    if _cuda(a_i8):
        size = "large" if m >= 512 and out.dtype != torch.float64 else "medium" if m > 64 else "small"
        bm, bn, bk, warps, stages = config or _GEMM_CONFIGS[size]
        extra = dict(num_warps=warps, num_stages=stages)
    else:
        bm, bn, bk = config[:3] if config else (16, 16, 64)
    grid = (-(-m // bm) * -(-n // bn),)
    K_.gemm_a8(a_i8.device, grid, a_i8, b, out, scale_t, bias if bias is not None else out, m, n, k, kw,
               a_i8.stride(0), b.stride(0), out.stride(0), B_PACKED=packed, SCALE_MODE=mode,
               HAS_BIAS=bias is not None, FLOAT=is_float, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, **extra)
    return out.to(out_dtype)


def fp8_matmul(a8: torch.Tensor, b8: torch.Tensor, *, scale: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.float32,
               fast_accum: Optional[bool] = None) -> torch.Tensor:
    """``scale * (a8 @ b8.T) + bias`` by ``torch._scaled_mm`` for e4m3 signs ``a8 [M, Kp]``, ``b8 [N, Kp]``
    (``Kp % 16 == 0``, ``N % 16 == 0``). The sums are exact integers in fp32; the scale and, for a float16/bfloat16
    output, the bias are applied in cuBLASLt's epilogue (fp32 arithmetic, one rounding); a float32 output adds its
    bias after (cuBLASLt's fp8 kernels take no bias with a float32 output)."""
    k = a8.shape[1]
    fast = (FP8_FAST_ACCUM and k <= FP8_FAST_MAX_K) if fast_accum is None else fast_accum
    mm_dtype = out_dtype if out_dtype in (torch.float16, torch.bfloat16) else torch.float32
    one = _one(a8.device)
    scale_b = one
    rowwise = False
    if scale is not None:
        if scale.numel() == 1:
            scale_b = scale.reshape(()).float()
        else:
            rowwise = True
    fused_bias = bias is not None and mm_dtype != torch.float32
    kw = dict(out_dtype=mm_dtype, use_fast_accum=fast, bias=bias.to(mm_dtype) if fused_bias else None)
    y = None
    if rowwise and _ROWWISE.get(mm_dtype, True):
        try:  # per-channel scale in the epilogue (rowwise scaling; not every torch/cuBLAS takes it for every dtype)
            y = torch._scaled_mm(a8, b8.t(), scale_a=one.expand(a8.shape[0], 1).contiguous(),
                                 scale_b=scale.reshape(1, -1).float(), **kw)
        except RuntimeError:
            _ROWWISE[mm_dtype] = False
    if y is None and rowwise:  # exact sums in fp32, then the scale and bias in fp32, one rounding to out_dtype
        y = torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=fast)
        y = y.mul_(scale.reshape(1, -1).float())
        fused_bias = False
    elif y is None:
        y = torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=scale_b, **kw)
    if bias is not None and not fused_bias:
        y = y.add_(bias.to(y.dtype))
    return y if y.dtype == out_dtype else y.to(out_dtype)


_ONES: dict = {}
#: Output dtypes for which torch._scaled_mm refused rowwise (per-channel) scaling in this process.
_ROWWISE: dict = {}


def _one(device: torch.device) -> torch.Tensor:
    key = str(device)
    if key not in _ONES:
        _ONES[key] = torch.ones((), dtype=torch.float32, device=device)
    return _ONES[key]


def _fp8_ok(m: int, n: int, device: torch.device, dtype: torch.dtype) -> bool:
    return (m >= FP8_MIN_M and n % 16 == 0 and dtype in (torch.float16, torch.bfloat16, torch.float32)
            and fp8_available(device))


def packed_matmul(a_i8: torch.Tensor, w_packed: torch.Tensor, k: int, *, scale: Optional[torch.Tensor] = None,
                  bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.float32,
                  path: str = "auto", a_is_pm1: bool = True) -> torch.Tensor:
    """``a_i8 [M, k]`` (int8 signs) times the packed weight ``[N, ceil(k/32)]``, by ``path`` (see module doc).

    ``a_is_pm1``: ``a`` holds only +-1 (no zeros), so the XOR-popcount path is exact.
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    m = a_i8.shape[0]
    n = w_packed.shape[0]
    if path == "auto":
        if m <= GEMV_MAX_M and a_is_pm1:
            path = "gemv"
        elif _fp8_ok(m, n, a_i8.device, out_dtype):
            path = "fp8"
        else:
            path = "expand" if m >= EXPAND_MIN_M else "onchip"
    if path == "gemv":
        if not a_is_pm1:
            raise ValueError("the XOR-popcount path needs +-1 activations (no zeros)")
        a_packed = pack_rows(a_i8, zero_bit=0, pad_bit=1)
        return xnor_gemv(a_packed, w_packed, k, scale=scale, bias=bias, out_dtype=out_dtype)
    if path == "fp8":
        if not fp8_available(a_i8.device):
            raise ValueError("the fp8 path needs a CUDA GPU with FP8 tensor cores (compute capability 8.9+)")
        kp = -(-k // 16) * 16
        a8 = a_i8.to(torch.float8_e4m3fn)
        if kp != k:
            a8 = F.pad(a_i8, (0, kp - k)).to(torch.float8_e4m3fn)
        return fp8_matmul(a8, unpack_bits(w_packed, k, k_pad=16, fp8=True), scale=scale, bias=bias,
                          out_dtype=out_dtype)
    if path == "expand":
        return gemm_a8(a_i8, unpack_bits(w_packed, k), k, scale=scale, bias=bias, out_dtype=out_dtype)
    return gemm_a8(a_i8, w_packed, k, scale=scale, bias=bias, out_dtype=out_dtype)


def _conv_block_k(c: int) -> int:
    """The channel block of the implicit-GEMM conv: the largest of 128, 64, 32 that divides ``c`` (0: none)."""
    return next((b for b in (128, 64, 32) if c % b == 0), 0)


def conv_implicit(xb: torch.Tensor, w: torch.Tensor, *, stride: int, padding: int, dilation: int, pad_value: float,
                  zero_value: float, scale: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                  out_dtype: torch.dtype, fp8: bool, channels_last: bool = False,
                  config: tuple | None = None) -> torch.Tensor:
    """Binary conv2d (``groups=1``) as an implicit GEMM: the signs of ``xb [N, C, H, W]`` (any strides) written
    once as padded channels-last bytes (int8, or e4m3 with ``fp8``), the weight signs as ``[C_out, kh, kw, C]``,
    then one kernel that gathers each patch from the padded signs (no patch matrix) and writes the output, NCHW or
    (``channels_last``) channels-last in memory. ``C % 32 == 0``. ``config``: see ``CONV_CUDA``."""
    n, c, h, wd = xb.shape
    cout, _, kh, kw = w.shape
    hp, wp = h + 2 * padding, wd + 2 * padding
    oh = (hp - dilation * (kh - 1) - 1) // stride + 1
    ow = (wp - dilation * (kw - 1) - 1) // stride + 1
    xk = _kernel_view(xb)
    device = xk.device
    cuda = _cuda(xk)
    signs = _sign_bytes(zero_value, fp8)
    fill = 0 if pad_value == 0 else signs["POS"] if pad_value > 0 else signs["NEG"]
    xs = torch.empty((n, hp, wp, c), dtype=torch.int8, device=device)
    if n * hp * wp and c:
        block_w, block_c = sign_nhwc_blocks(wp, c, cuda)
        K_.sign_nhwc(device, (n * hp, -(-c // block_c), -(-wp // block_w)), xk, xs, c, h, wd, hp, wp, padding,
                     *xk.stride(), FILL=fill, BLOCK_W=block_w, BLOCK_C=block_c, **signs)
    taps = kh * kw
    wk = _kernel_view(w).contiguous()
    wsign = torch.empty((cout, taps * c), dtype=torch.int8, device=device)
    if cout and c:
        block_r, block_l = SIGN_WEIGHT_BLOCKS[cuda]
        K_.sign_conv_weight(device, (-(-cout // block_r), -(-(taps * c) // block_l)), wk, wsign, cout, c, taps,
                            BLOCK_R=block_r, BLOCK_L=block_l, **signs)
    dtype = _kernel_out_dtype(out_dtype, device)
    out = (torch.empty((n, cout, oh, ow), dtype=dtype, device=device, memory_format=torch.channels_last)
           if channels_last else torch.empty((n, cout, oh, ow), dtype=dtype, device=device))
    m = n * oh * ow
    if not (m and cout):
        return out.to(out_dtype)  # itself when the dtype matches
    bias = None if bias is None else _kernel_view(bias)
    mode, scale_t = _scale_args(scale, out)
    bk = _conv_block_k(c)
    a = xs.view(torch.float8_e4m3fn) if fp8 else xs
    b = wsign.view(torch.float8_e4m3fn) if fp8 else wsign

    def launch(config):
        if cuda:
            bm, bn, warps, stages = config
            extra = dict(num_warps=warps, num_stages=stages)
        else:
            bm, bn, extra = 16, 16, {}
        K_.conv_implicit(device, (-(-m // bm), -(-cout // bn)), a, b, out, scale_t, bias if bias is not None else out,
                         m, cout, c, oh, ow, hp, wp, stride, dilation, SCALE_MODE=mode, HAS_BIAS=bias is not None,
                         FLOAT=fp8, KH=kh, KW=kw, CL_OUT=channels_last, BLOCK_M=bm, BLOCK_N=bn,
                         BLOCK_K=bk if cuda else 32, **extra)

    if config is None and cuda:
        key = (device.index, tuple(xb.shape), cout, kh, kw, stride, padding, dilation, channels_last, fp8, dtype)
        config = _CONV_TUNED.get(key) or _conv_tune(key, launch, 2.0 * m * cout * c * kh * kw, cout)
    launch(config)
    return out.to(out_dtype)  # itself when the dtype matches


#: the conv weight's sign pass (``sign_conv_weight_kernel``): (BLOCK_R, BLOCK_L), on the CPU [False] and CUDA [True]
SIGN_WEIGHT_BLOCKS = {False: (8, 32), True: (16, 256)}


def sign_nhwc_blocks(wp: int, c: int, cuda: bool) -> tuple[int, int]:
    """``sign_nhwc_kernel``'s (BLOCK_W, BLOCK_C) for a padded row of ``wp`` pixels and ``c`` channels."""
    block_w = min(32, 1 << (wp - 1).bit_length()) if cuda else 8
    return block_w, min(64 if cuda else 16, 1 << (c - 1).bit_length())


#: problem -> the fastest of CONV_CUDA's configs, as timed on its first call (see CONV_CUDA)
_CONV_TUNED: dict = {}


def _conv_tune(key: tuple, launch, flop: float, cout: int) -> tuple:
    """The fastest config of ``CONV_CUDA`` for one problem (``launch(config)`` runs it), remembered under ``key``;
    the first config, unremembered, for small problems and during a CUDA-graph capture."""
    if flop < CONV_TUNE_MIN_FLOP or torch.cuda.is_current_stream_capturing():
        return CONV_CUDA[0]
    times = {}
    for config in CONV_CUDA:
        if config[1] > max(128, cout):
            continue  # a block of output channels wider than the layer's
        launch(config)  # compiles
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(3):
            launch(config)
        end.record()
        end.synchronize()
        times[config] = start.elapsed_time(end)
    best = min(times, key=times.get)
    _CONV_TUNED[key] = best
    return best


def _channels_last(x: torch.Tensor) -> bool:
    """Whether the conv's output is laid out channels last: a batched input that is channels-last and not also
    contiguous (as cuDNN's conv decides; the fake kernel decides the same way)."""
    return x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)


def _weight_scale(w: torch.Tensor, scaling: str) -> Optional[torch.Tensor]:
    """The spec's ``binarize_weight`` scale in ``w``'s dtype (None for ``"none"``): per tensor or per row."""
    if scaling == "none":
        return None
    if scaling == "tensor":
        return w.abs().mean()
    return w.abs().mean(dim=tuple(range(1, w.dim())))


def pack_weight(w: torch.Tensor, zero_value: float = 1.0) -> torch.Tensor:
    """A weight ``[N, ...]`` as packed signs ``[N, ceil(K/32)]`` (K = the rest flattened), ``sign(0) = zero_value``."""
    return pack_rows(w.reshape(w.shape[0], -1), zero_bit=int(zero_value > 0), pad_bit=1)


# ----------------------------------------------------------------------------------------------- validation

def _check_layer(input_quant: str, zero_value: float, weight_scaling: str) -> None:
    if input_quant not in INPUT_QUANTS:
        raise ValueError(f"input_quant must be one of {INPUT_QUANTS} (a binary kernel needs binary inputs), "
                         f"got {input_quant!r}")
    if zero_value not in (-1.0, 1.0):
        raise ValueError(f"zero_value must be -1.0 or 1.0 (a packed bit has no 0), got {zero_value!r}")
    if weight_scaling not in WEIGHT_SCALINGS:
        raise ValueError(f"weight_scaling must be one of {WEIGHT_SCALINGS}, got {weight_scaling!r}")


def _input_grad(x: torch.Tensor, grad: torch.Tensor, input_quant: str, threshold: Optional[float]) -> torch.Tensor:
    """The spec's straight-through input gradient (reference.quant's ``*_grad`` formulas)."""
    if input_quant == "ste":
        return Q.sign_ste_grad(x, grad)
    if input_quant == "clipped_ste":
        return Q.sign_clipped_ste_grad(x, grad, threshold=threshold)
    if input_quant == "approx_sign":
        return Q.approx_sign_grad(x, grad)
    return Q.sign_hardtanh_ste_grad(x, grad)


def _binary_weight(weight: torch.Tensor, dtype: torch.dtype, zero_value: float, scaling: str) -> torch.Tensor:
    w = weight.to(dtype)
    scale = _weight_scale(w, scaling)
    signs = Q._sign(w, zero_value)
    if scale is None:
        return signs
    return signs * (scale if scale.dim() == 0 else scale.reshape((-1,) + (1,) * (w.dim() - 1)))


# ----------------------------------------------------------------------------------------------- pack_signs op

@operator("pack_signs")
def pack_signs_op(x: torch.Tensor, dim: int, msb: bool, pad: Optional[float]) -> torch.Tensor:
    moved = x.movedim(dim, -1)
    length = moved.shape[-1]
    if length % 32 and pad is None:
        raise ValueError(f"x.shape[dim] = {length} is not divisible by word_bits = 32; pass pad=+1.0 or -1.0")
    packed = pack_rows(moved.reshape(-1, length), zero_bit=0, pad_bit=int((pad or 1.0) > 0), msb=msb)
    return _fresh(packed.reshape(moved.shape[:-1] + (packed.shape[-1],)).movedim(-1, dim).contiguous())


@torch.library.register_fake("qsnn_kernels::pack_signs")
def _(x, dim, msb, pad):
    shape = list(x.shape)
    shape[dim] = -(-shape[dim] // 32)
    return x.new_empty(shape, dtype=torch.int32)


@torch.library.register_vmap("qsnn_kernels::pack_signs")
def _(info, in_dims, x, dim, msb, pad):
    bdim = in_dims[0]
    if bdim is None:
        return pack_signs_op(x, dim, msb, pad), None
    x = x.movedim(bdim, 0)
    return pack_signs_op(x, dim if dim < 0 else dim + 1, msb, pad), 0


def pack_signs(x: torch.Tensor, *, dim: int = -1, word_bits: int = 32, bit_order: str = "lsb",
               pad: float | None = None) -> torch.Tensor:
    """:func:`reference.packing.pack_signs` for ``word_bits=32`` on the packing kernel."""
    if word_bits != 32:
        raise ValueError(f"the packing kernel writes 32-bit words, got word_bits={word_bits}")
    if bit_order not in ("lsb", "msb"):
        raise ValueError(f"bit_order must be 'lsb' or 'msb', got {bit_order!r}")
    if pad is not None and pad not in (-1.0, 1.0):
        raise ValueError(f"pad must be -1.0, 1.0 or None, got {pad!r}")
    return pack_signs_op(x, dim, bit_order == "msb", pad)


# ----------------------------------------------------------------------------------------------- binary linear op

@operator("binary_linear")
def binary_linear_op(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], input_quant: str,
                     threshold: Optional[float], zero_value: float, weight_scaling: str) -> torch.Tensor:
    _check_layer(input_quant, zero_value, weight_scaling)
    k = x.shape[-1]
    w = weight.to(x.dtype)
    x2d = x.reshape(-1, k)
    options = dict(scale=_weight_scale(w, weight_scaling), bias=None if bias is None else bias.to(x.dtype),
                   out_dtype=x.dtype)
    m, n = x2d.shape[0], w.shape[0]
    if m <= GEMV_MAX_M:  # small batch: pack the activations straight from x, XOR-popcount
        y = xnor_gemv(x2d, pack_weight(w, zero_value), k, zero_bit=int(zero_value > 0), **options)
    elif _fp8_ok(m, n, x.device, x.dtype):  # e4m3 signs straight from x and from the weight, cuBLASLt fp8 GEMM
        y = fp8_matmul(sign_rows(x2d, zero_value), sign_rows(w, zero_value), **options)
    else:
        y = packed_matmul(sign_int8(x2d, zero_value), pack_weight(w, zero_value), k, **options)
    return _fresh(y.reshape(x.shape[:-1] + (weight.shape[0],)))


@torch.library.register_fake("qsnn_kernels::binary_linear")
def _(x, weight, bias, input_quant, threshold, zero_value, weight_scaling):
    return x.new_empty(x.shape[:-1] + (weight.shape[0],))


def _linear_setup(ctx, inputs, output):
    x, weight, bias, input_quant, threshold, zero_value, weight_scaling = inputs
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None
    ctx.bias_dtype = None if bias is None else bias.dtype
    ctx.options = (input_quant, threshold, zero_value, weight_scaling)


def _linear_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    input_quant, threshold, zero_value, weight_scaling = ctx.options
    w = weight.to(x.dtype)
    wb = _binary_weight(w, x.dtype, zero_value, weight_scaling)
    g2 = grad.reshape(-1, grad.shape[-1]).to(x.dtype)
    x2 = x.reshape(-1, x.shape[-1])
    dx = _input_grad(x2, g2 @ wb, input_quant, threshold).reshape(x.shape)
    dw = g2.t() @ Q._sign(x2, zero_value)
    scale = _weight_scale(w, weight_scaling)
    if scale is not None:
        dw = dw * (scale if scale.dim() == 0 else scale[:, None])
    db = g2.sum(0).to(ctx.bias_dtype) if ctx.has_bias else None
    return dx, dw.to(weight.dtype), db, None, None, None, None


@signature_once
class BinaryLinearFunction(torch.autograd.Function):
    """The operator with the spec's straight-through backward. An ``autograd.Function`` with ``setup_context``
    (rather than ``custom_op.register_autograd``) so that torch.func's grad/vmap compose with it; its vmap rule is
    generated from the operator's own."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, weight, bias, input_quant, threshold, zero_value, weight_scaling):
        return binary_linear_op(x, weight, bias, input_quant, threshold, zero_value, weight_scaling)

    setup_context = staticmethod(_linear_setup)
    backward = staticmethod(_linear_backward)


@torch.library.register_vmap("qsnn_kernels::binary_linear")
def _(info, in_dims, x, weight, bias, input_quant, threshold, zero_value, weight_scaling):
    x_dim, w_dim, b_dim = in_dims[:3]
    options = (input_quant, threshold, zero_value, weight_scaling)
    if w_dim is None and b_dim is None:
        if x_dim is None:
            return binary_linear_op(x, weight, bias, *options), None
        return binary_linear_op(x.movedim(x_dim, 0), weight, bias, *options), 0
    # batched parameters (per-sample weights): one call per sample
    size = info.batch_size
    pick = lambda t, d, i: t if (t is None or d is None) else t.select(d, i)  # noqa: E731
    outs = [binary_linear_op(pick(x, x_dim, i), pick(weight, w_dim, i), pick(bias, b_dim, i), *options)
            for i in range(size)]
    return torch.stack(outs), 0


def binary_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
                  input_quant: str = "ste", threshold: float | None = 1.0, zero_value: float = 1.0,
                  weight_scaling: str = "none") -> torch.Tensor:
    """:func:`reference.binary.binary_linear` on the packed kernels (binary ``input_quant`` and ``zero_value``
    +-1 only)."""
    return BinaryLinearFunction.apply(x, weight, bias, input_quant, threshold, float(zero_value), weight_scaling)


def binary_matmul(x: torch.Tensor, w: torch.Tensor, *, zero_value: float = 1.0, word_bits: int = 32,
                  bit_order: str = "lsb") -> torch.Tensor:
    """:func:`reference.packing.binary_matmul`: ``sign(x) @ sign(w).T`` with the identity STE. ``word_bits`` and
    ``bit_order`` only name the spec's internal layout; the result does not depend on them."""
    return BinaryLinearFunction.apply(x, w, None, "ste", None, float(zero_value), "none")


# ----------------------------------------------------------------------------------------------- binary conv2d op

def _im2col(s: torch.Tensor, kh: int, kw: int, stride: int, dilation: int) -> tuple[torch.Tensor, int, int]:
    """``[N, C, H, W]`` (padded) -> ``[N * OH * OW, C * kh * kw]`` patches, (c, i, j) order like a conv weight."""
    n, c, h, w = s.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (w - dilation * (kw - 1) - 1) // stride + 1
    sn, sc, sh, sw = s.stride()
    patches = s.as_strided((n, oh, ow, c, kh, kw), (sn, sh * stride, sw * stride, sc, sh * dilation, sw * dilation))
    return patches.reshape(n * oh * ow, c * kh * kw), oh, ow


@operator("binary_conv2d")
def binary_conv2d_op(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], stride: int,
                     padding: int, dilation: int, groups: int, pad_value: float, input_quant: str,
                     threshold: Optional[float], zero_value: float, weight_scaling: str) -> torch.Tensor:
    _check_layer(input_quant, zero_value, weight_scaling)
    unbatched = x.dim() == 3
    xb = x.unsqueeze(0) if unbatched else x
    w = weight.to(x.dtype)
    cout, cin_g, kh, kw = w.shape
    per_group = cout // groups
    oh, ow = _conv_out_shape(xb, w, stride, padding, dilation)[-2:]
    scale = _weight_scale(w, weight_scaling)
    b = None if bias is None else bias.to(x.dtype)
    pixels = xb.shape[0] * oh * ow
    padded = xb.shape[0] * cin_g * (xb.shape[-2] + 2 * padding) * (xb.shape[-1] + 2 * padding)
    if (CONV_IMPLICIT and groups == 1 and _conv_block_k(cin_g) and _fp8_ok(pixels, 16, x.device, x.dtype)
            and padded < 2 ** 31 and pixels * cout < 2 ** 31):  # implicit GEMM, fp8 tensor cores (int32 offsets)
        y = conv_implicit(xb, w, stride=stride, padding=padding, dilation=dilation, pad_value=pad_value,
                          zero_value=zero_value, scale=scale, bias=b, out_dtype=x.dtype, fp8=True,
                          channels_last=_channels_last(xb))
        return _fresh(y[0] if unbatched else y)
    # e4m3 signs and the fp8 GEMM when the patch length and the output channels suit it (no K padding needed)
    fp8 = (cin_g * kh * kw) % 16 == 0 and _fp8_ok(pixels, per_group, x.device, x.dtype)
    s = sign_int8(xb, zero_value, fp8=fp8)
    if padding:
        fill = int(pad_value) if not fp8 else E4M3_ONE if pad_value > 0 else E4M3_MINUS_ONE if pad_value < 0 else 0
        s = F.pad(s.view(torch.int8), (padding,) * 4, value=fill)
    outs = []
    for g in range(groups):
        a, oh, ow = _im2col(s[:, g * cin_g:(g + 1) * cin_g], kh, kw, stride, dilation)
        rows = slice(g * per_group, (g + 1) * per_group)
        sc = None if scale is None else (scale if scale.dim() == 0 else scale[rows])
        bg = None if b is None else b[rows]
        if fp8:
            outs.append(fp8_matmul(a.contiguous().view(torch.float8_e4m3fn),
                                   sign_rows(w[rows].reshape(per_group, -1), zero_value), scale=sc, bias=bg,
                                   out_dtype=x.dtype))
        else:
            outs.append(packed_matmul(a.contiguous(), pack_weight(w[rows], zero_value), cin_g * kh * kw, scale=sc,
                                      bias=bg, out_dtype=x.dtype, a_is_pm1=not (padding and pad_value == 0.0)))
    y = torch.cat(outs, dim=1) if groups > 1 else outs[0]
    y = y.reshape(xb.shape[0], oh, ow, cout).permute(0, 3, 1, 2)
    y = y.contiguous(memory_format=torch.channels_last) if _channels_last(xb) else y.contiguous()
    return _fresh(y[0] if unbatched else y)


def _conv_out_shape(x, weight, stride, padding, dilation):
    h, w = x.shape[-2:]
    kh, kw = weight.shape[-2:]
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    return tuple(x.shape[:-3]) + (weight.shape[0], oh, ow)


@torch.library.register_fake("qsnn_kernels::binary_conv2d")
def _(x, weight, bias, stride, padding, dilation, groups, pad_value, input_quant, threshold, zero_value,
      weight_scaling):
    shape = _conv_out_shape(x, weight, stride, padding, dilation)
    if _channels_last(x):
        return x.new_empty(shape).contiguous(memory_format=torch.channels_last)
    return x.new_empty(shape)


def _conv_setup(ctx, inputs, output):
    x, weight, bias = inputs[:3]
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None
    ctx.bias_dtype = None if bias is None else bias.dtype
    ctx.options = inputs[3:]


def _conv_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    stride, padding, dilation, groups, pad_value, input_quant, threshold, zero_value, weight_scaling = ctx.options
    unbatched = x.dim() == 3
    xb = x.unsqueeze(0) if unbatched else x
    g = (grad.unsqueeze(0) if unbatched else grad).to(x.dtype)
    w = weight.to(x.dtype)
    qp = Q._sign(xb, zero_value)
    if padding:
        qp = F.pad(qp, (padding,) * 4, value=pad_value)
    wb = _binary_weight(w, x.dtype, zero_value, weight_scaling)
    dqp = torch.nn.grad.conv2d_input(qp.shape, wb, g, stride=stride, padding=0, dilation=dilation, groups=groups)
    if padding:
        dqp = dqp[..., padding:-padding, padding:-padding]
    dx = _input_grad(xb, dqp, input_quant, threshold)
    dw = torch.nn.grad.conv2d_weight(qp, w.shape, g, stride=stride, padding=0, dilation=dilation, groups=groups)
    scale = _weight_scale(w, weight_scaling)
    if scale is not None:
        dw = dw * (scale if scale.dim() == 0 else scale[:, None, None, None])
    db = g.sum((0, 2, 3)).to(ctx.bias_dtype) if ctx.has_bias else None
    return (dx[0] if unbatched else dx), dw.to(weight.dtype), db, *([None] * 9)


@signature_once
class BinaryConv2dFunction(torch.autograd.Function):
    """The conv operator with the spec's straight-through backward (see :class:`BinaryLinearFunction`)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, weight, bias, stride, padding, dilation, groups, pad_value, input_quant, threshold, zero_value,
                weight_scaling):
        return binary_conv2d_op(x, weight, bias, stride, padding, dilation, groups, pad_value, input_quant,
                                threshold, zero_value, weight_scaling)

    setup_context = staticmethod(_conv_setup)
    backward = staticmethod(_conv_backward)


@torch.library.register_vmap("qsnn_kernels::binary_conv2d")
def _(info, in_dims, x, weight, bias, *options):
    x_dim, w_dim, b_dim = in_dims[:3]
    if w_dim is None and b_dim is None:
        if x_dim is None:
            return binary_conv2d_op(x, weight, bias, *options), None
        xm = x.movedim(x_dim, 0)
        if xm.dim() == 4:  # unbatched samples: the vmap batch is the conv batch
            return binary_conv2d_op(xm, weight, bias, *options), 0
        size, n = xm.shape[:2]
        y = binary_conv2d_op(xm.reshape((size * n,) + xm.shape[2:]), weight, bias, *options)
        return y.reshape((size, n) + y.shape[1:]), 0
    pick = lambda t, d, i: t if (t is None or d is None) else t.select(d, i)  # noqa: E731
    outs = [binary_conv2d_op(pick(x, x_dim, i), pick(weight, w_dim, i), pick(bias, b_dim, i), *options)
            for i in range(info.batch_size)]
    return torch.stack(outs), 0


def binary_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, stride: int = 1,
                  padding: int = 0, dilation: int = 1, groups: int = 1, pad_value: float = 0.0,
                  input_quant: str = "ste", threshold: float | None = 1.0, zero_value: float = 1.0,
                  weight_scaling: str = "none") -> torch.Tensor:
    """:func:`reference.binary.binary_conv2d` on the packed kernels (im2col of int8 signs + the binary GEMM)."""
    return BinaryConv2dFunction.apply(x, weight, bias, stride, padding, dilation, groups, float(pad_value),
                                      input_quant, threshold, float(zero_value), weight_scaling)


# ----------------------------------------------------------------------------------------------- modules

class PackSigns(nn.Module):
    """:func:`pack_signs` as a module (no parameters)."""

    def __init__(self, dim: int = -1, bit_order: str = "lsb", pad: Optional[float] = None):
        super().__init__()
        self.dim = dim
        self.msb = bit_order == "msb"
        self.pad = pad

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.qsnn_kernels.pack_signs(x, self.dim, self.msb, self.pad)


class BinaryLinear(nn.Module):
    """A binary linear layer on the packed kernels: ``weight [N, K]`` and optional ``bias [N]`` parameters."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, input_quant: str = "ste",
                 threshold: Optional[float] = 1.0, zero_value: float = 1.0, weight_scaling: str = "none"):
        super().__init__()
        _check_layer(input_quant, float(zero_value), weight_scaling)
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-1, 1))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.input_quant = input_quant
        self.threshold = None if threshold is None else float(threshold)
        self.zero_value = float(zero_value)
        self.weight_scaling = weight_scaling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return BinaryLinearFunction.apply(x, self.weight, self.bias, self.input_quant, self.threshold,
                                          self.zero_value, self.weight_scaling)


class BinaryMatmul(nn.Module):
    """``sign(x) @ sign(w).T`` with the identity STE; ``w [N, K]`` is the parameter."""

    def __init__(self, in_features: int, out_features: int, *, zero_value: float = 1.0):
        super().__init__()
        self.w = nn.Parameter(torch.empty(out_features, in_features).uniform_(-1, 1))
        self.zero_value = float(zero_value)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return BinaryLinearFunction.apply(x, self.w, None, "ste", None, self.zero_value, "none")


class BinaryConv2d(nn.Module):
    """A binary conv2d on the packed kernels: ``weight [C_out, C_in / groups, k, k]``, optional ``bias``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = True, pad_value: float = 0.0,
                 input_quant: str = "ste", threshold: Optional[float] = 1.0, zero_value: float = 1.0,
                 weight_scaling: str = "none"):
        super().__init__()
        _check_layer(input_quant, float(zero_value), weight_scaling)
        shape = (out_channels, in_channels // groups, kernel_size, kernel_size)
        self.weight = nn.Parameter(torch.empty(shape).uniform_(-1, 1))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        self.stride, self.padding, self.dilation, self.groups = int(stride), int(padding), int(dilation), int(groups)
        self.pad_value = float(pad_value)
        self.input_quant = input_quant
        self.threshold = None if threshold is None else float(threshold)
        self.zero_value = float(zero_value)
        self.weight_scaling = weight_scaling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return BinaryConv2dFunction.apply(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                                          self.groups, self.pad_value, self.input_quant, self.threshold,
                                          self.zero_value, self.weight_scaling)
