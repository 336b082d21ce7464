"""Triton sources of the binary kernels (plain functions; :mod:`kernels._runtime` compiles or interprets them).

Only stable ``triton.language`` API. Outside ``USE_ASM``/CUDA-only branches, nothing from Triton's standard library that is itself a
``@triton.jit`` function is called (``tl.sum``, ``tl.zeros``, ``tl.cdiv``, ``tl.sigmoid``, ...): an explicitly interpreted kernel
(``kernels._runtime``) cannot call a compiled helper, so reductions are written as unrolled loops or avoided, and
each kernel is self-contained.
"""

import triton.language as tl


def pack_signs_kernel(x_ptr, out_ptr, R, L, W, stride_xr, stride_or,
                      ZERO_BIT: tl.constexpr, PAD_BIT: tl.constexpr, MSB: tl.constexpr,
                      BLOCK_R: tl.constexpr, BLOCK_W: tl.constexpr):
    """``out[r, w]`` = the 32 signs ``x[r, 32 w : 32 w + 32]`` as one int32 word (1 = positive).

    ``x == 0`` packs as ``ZERO_BIT``; positions past ``L`` as ``PAD_BIT``; element ``j`` of a word goes to bit ``j``
    (``MSB`` False) or ``31 - j``.
    """
    pid_r = tl.program_id(0)
    pid_w = tl.program_id(1)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    words = pid_w * BLOCK_W + tl.arange(0, BLOCK_W)
    # the block's 32 elements of every word at once: [BLOCK_R, BLOCK_W, 32] (each word's 32 floats are contiguous)
    j = tl.arange(0, 32)
    cols = words[None, :, None] * 32 + j[None, None, :]
    row = rows[:, None, None]
    x = tl.load(x_ptr + row * stride_xr + cols, mask=(row < R) & (cols < L), other=0.0)
    bit = tl.where(x > 0, 1, tl.where(x < 0, 0, ZERO_BIT))
    bit = tl.where(cols < L, bit, PAD_BIT).to(tl.int32)
    if MSB:
        bits = bit << (31 - j)[None, None, :]
    else:
        bits = bit << j[None, None, :]
    # OR the 32 disjoint bits into the word: five halvings of the last axis (no tl.sum or tl.reduce: see the module doc)
    lo, hi = tl.split(tl.reshape(bits, (BLOCK_R, BLOCK_W, 16, 2)))
    lo, hi = tl.split(tl.reshape(lo | hi, (BLOCK_R, BLOCK_W, 8, 2)))
    lo, hi = tl.split(tl.reshape(lo | hi, (BLOCK_R, BLOCK_W, 4, 2)))
    lo, hi = tl.split(tl.reshape(lo | hi, (BLOCK_R, BLOCK_W, 2, 2)))
    lo, hi = tl.split(tl.reshape(lo | hi, (BLOCK_R, BLOCK_W, 1, 2)))
    word = tl.reshape(lo | hi, (BLOCK_R, BLOCK_W))
    keep = (rows[:, None] < R) & (words[None, :] < W)
    tl.store(out_ptr + rows[:, None] * stride_or + words[None, :], word, mask=keep)


def sign_i8_kernel(x_ptr, out_ptr, n, ZERO_VALUE: tl.constexpr, BLOCK: tl.constexpr):
    """``out = sign(x)`` as int8 with ``sign(0) = ZERO_VALUE`` (-1, 0 or 1)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.where(x > 0, 1, tl.where(x < 0, -1, ZERO_VALUE)).to(tl.int8)
    tl.store(out_ptr + offs, s, mask=offs < n)


def unpack_bits_i8_kernel(b_ptr, out_ptr, N, K, KW, stride_bn, stride_on,
                          BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr):
    """``out[n, k]`` = bit ``k`` of the packed row ``b[n]`` as int8 -1/+1 (lsb order), ``k < K``."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    words = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    w = tl.load(b_ptr + rows[:, None] * stride_bn + words[None, :], mask=(rows[:, None] < N) & (words[None, :] < KW),
                other=0)
    j = tl.arange(0, 32)
    bits = (((w[:, :, None] >> j[None, None, :]) & 1) * 2 - 1).to(tl.int8)
    cols = words[None, :, None] * 32 + j[None, None, :]
    tl.store(out_ptr + rows[:, None, None] * stride_on + cols, bits, mask=(rows[:, None, None] < N) & (cols < K))


def gemm_a8_kernel(a_ptr, b_ptr, out_ptr, scale_ptr, bias_ptr, M, N, K, KW,
                   stride_am, stride_bn, stride_om,
                   B_PACKED: tl.constexpr, SCALE_MODE: tl.constexpr, HAS_BIAS: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """``out[m, n] = scale * sum_k a[m, k] b[n, k] + bias[n]`` on the int8 tensor cores (exact int32 sums).

    ``a``: int8 ``[M, K]`` in {-1, 0, +1}. ``b``: +-1 signs, either packed int32 ``[N, KW]`` (lsb order, expanded
    to int8 on chip, ``B_PACKED``) or int8 ``[N, K]``. ``SCALE_MODE`` 0: none, 1: one scale, 2: one per n.
    Output in ``out``'s dtype.
    """
    pid = tl.program_id(0)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N
    group = pid // (GROUP_M * grid_n)
    first_m = group * GROUP_M
    size_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * grid_n)) % size_m
    pid_n = (pid % (GROUP_M * grid_n)) // size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    offs_w = tl.arange(0, BLOCK_K // 32)
    j = tl.arange(0, 32)
    acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + ks[None, :],
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0)
        if B_PACKED:
            ws = k0 // 32 + offs_w
            w = tl.load(b_ptr + offs_n[:, None] * stride_bn + ws[None, :],
                        mask=(offs_n[:, None] < N) & (ws[None, :] < KW), other=0)
            bits = tl.reshape(((w[:, :, None] >> j[None, None, :]) & 1) * 2 - 1, (BLOCK_N, BLOCK_K)).to(tl.int8)
        else:
            bits = tl.load(b_ptr + offs_n[:, None] * stride_bn + ks[None, :],
                           mask=(offs_n[:, None] < N) & (ks[None, :] < K), other=0)
        acc = tl.dot(a, tl.trans(bits), acc, out_dtype=tl.int32)
    exact = acc
    y = exact.to(tl.float32)
    if out_ptr.dtype.element_ty == tl.float64:
        y = exact.to(tl.float64)
    if SCALE_MODE == 1:
        y = y * tl.load(scale_ptr).to(y.dtype)
    if SCALE_MODE == 2:
        y = y * tl.load(scale_ptr + offs_n, mask=offs_n < N, other=0.0).to(y.dtype)[None, :]
    if HAS_BIAS:
        y = y + tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(y.dtype)[None, :]
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :], y.to(out_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def xnor_gemv_kernel(a_ptr, b_ptr, out_ptr, scale_ptr, bias_ptr, M, N, K, KW,
                     stride_am, stride_bn, stride_om,
                     SCALE_MODE: tl.constexpr, HAS_BIAS: tl.constexpr, USE_ASM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr):
    """``out[m, n] = scale * (K - 2 popcount(a[m] ^ b[n])) + bias[n]`` for packed +-1 rows (small ``M``).

    Both operands pad their last word with the same bit, so padding never differs and needs no mask. ``USE_ASM``:
    the hardware ``popc`` through inline PTX (CUDA only); otherwise the SWAR popcount.
    """
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.int32)
    if USE_ASM:
        # CUDA: [BLOCK_M, BLOCK_N, BLOCK_W] tiles (coalesced word rows), hardware popc, reduction over the words.
        offs_w = tl.arange(0, BLOCK_W)
        for w0 in range(0, KW, BLOCK_W):
            ws = w0 + offs_w
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + ws[None, :],
                        mask=(offs_m[:, None] < M) & (ws[None, :] < KW), other=0)
            b = tl.load(b_ptr + offs_n[:, None] * stride_bn + ws[None, :],
                        mask=(offs_n[:, None] < N) & (ws[None, :] < KW), other=0)
            x = a[:, None, :] ^ b[None, :, :]
            pc = tl.inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
            acc += tl.sum(pc, axis=2)
    else:
        # Portable (and interpretable, no tl.sum): one word column at a time, SWAR popcount.
        for w0 in range(0, KW, BLOCK_W):
            for i in tl.static_range(BLOCK_W):
                ws = w0 + i
                a = tl.load(a_ptr + offs_m * stride_am + ws, mask=(offs_m < M) & (offs_m * 0 + ws < KW), other=0)
                b = tl.load(b_ptr + offs_n * stride_bn + ws, mask=(offs_n < N) & (offs_n * 0 + ws < KW), other=0)
                u = (a[:, None] ^ b[None, :]).to(tl.uint32, bitcast=True)
                u = u - ((u >> 1) & 0x55555555)
                u = (u & 0x33333333) + ((u >> 2) & 0x33333333)
                u = (u + (u >> 4)) & 0x0F0F0F0F
                u = (u * 0x01010101) >> 24
                acc += u.to(tl.int32)
    exact = K - 2 * acc
    y = exact.to(tl.float32)
    if out_ptr.dtype.element_ty == tl.float64:
        y = exact.to(tl.float64)
    if SCALE_MODE == 1:
        y = y * tl.load(scale_ptr).to(y.dtype)
    if SCALE_MODE == 2:
        y = y * tl.load(scale_ptr + offs_n, mask=offs_n < N, other=0.0).to(y.dtype)[None, :]
    if HAS_BIAS:
        y = y + tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(y.dtype)[None, :]
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :], y.to(out_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
