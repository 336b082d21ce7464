"""Triton sources of the binary kernels (plain functions; :mod:`qsnn_kernels._runtime` compiles or interprets them).

Only stable ``triton.language`` API. Outside ``USE_ASM``/CUDA-only branches, nothing from Triton's standard library that is itself a
``@triton.jit`` function is called (``tl.sum``, ``tl.zeros``, ``tl.cdiv``, ``tl.sigmoid``, ...): an explicitly interpreted kernel
(``qsnn_kernels._runtime``) cannot call a compiled helper, so reductions are written as unrolled loops or avoided, and
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


def sign_i8_kernel(x_ptr, out_ptr, n, POS: tl.constexpr, NEG: tl.constexpr, ZERO: tl.constexpr,
                   BLOCK: tl.constexpr):
    """``out = POS, NEG or ZERO`` as ``x`` is positive, negative or zero, one byte each: the int8 signs (1, -1) or
    their e4m3 bit patterns (0x38 = +1.0, 0xB8 = -1.0, read back through a float8 view)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.where(x > 0, POS, tl.where(x < 0, NEG, ZERO)).to(tl.int8)
    tl.store(out_ptr + offs, s, mask=offs < n)


def sign_rows_kernel(x_ptr, out_ptr, R, L, LP, stride_xr, stride_or,
                     POS: tl.constexpr, NEG: tl.constexpr, ZERO: tl.constexpr,
                     BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    """:func:`sign_i8_kernel` on the rows of ``x [R, L]`` into ``out [R, LP]``, columns ``L <= l < LP`` zero (the
    K padding that a tensor-core GEMM wants: a zero contributes nothing)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    r = rows[:, None]
    c = cols[None, :]
    x = tl.load(x_ptr + r * stride_xr + c, mask=(r < R) & (c < L), other=0.0)
    s = tl.where(x > 0, POS, tl.where(x < 0, NEG, ZERO))
    s = tl.where(c < L, s, 0).to(tl.int8)
    tl.store(out_ptr + r * stride_or + c, s, mask=(r < R) & (c < LP))


def unpack_bits_i8_kernel(b_ptr, out_ptr, N, K, KP, KW, stride_bn, stride_on,
                          POS: tl.constexpr, NEG: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr):
    """``out[n, k]`` = bit ``k`` of the packed row ``b[n]`` as the byte ``POS`` (1) or ``NEG`` (0), lsb order, for
    ``k < K``; zero for ``K <= k < KP``."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    words = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    w = tl.load(b_ptr + rows[:, None] * stride_bn + words[None, :], mask=(rows[:, None] < N) & (words[None, :] < KW),
                other=0)
    j = tl.arange(0, 32)
    bit = (w[:, :, None] >> j[None, None, :]) & 1
    cols = words[None, :, None] * 32 + j[None, None, :]
    val = tl.where(cols < K, tl.where(bit == 1, POS, NEG), 0).to(tl.int8)
    tl.store(out_ptr + rows[:, None, None] * stride_on + cols, val, mask=(rows[:, None, None] < N) & (cols < KP))


def gemm_a8_kernel(a_ptr, b_ptr, out_ptr, scale_ptr, bias_ptr, M, N, K, KW,
                   stride_am, stride_bn, stride_om,
                   B_PACKED: tl.constexpr, SCALE_MODE: tl.constexpr, HAS_BIAS: tl.constexpr, FLOAT: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """``out[m, n] = scale * sum_k a[m, k] b[n, k] + bias[n]`` on the int8 tensor cores (exact int32 sums), or on
    the fp8 ones (``FLOAT``: e4m3 operands, fp32 sums, exact for integer sums below 2^24; CUDA only).

    ``a``: ``[M, K]`` in {-1, 0, +1}. ``b``: +-1 signs, either packed int32 ``[N, KW]`` (lsb order, expanded
    to int8 on chip, ``B_PACKED``) or ``[N, K]`` like ``a``. ``SCALE_MODE`` 0: none, 1: one scale, 2: one per n.
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
    if FLOAT:
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)
    else:
        acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + ks[None, :],
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        if B_PACKED:
            ws = k0 // 32 + offs_w
            w = tl.load(b_ptr + offs_n[:, None] * stride_bn + ws[None, :],
                        mask=(offs_n[:, None] < N) & (ws[None, :] < KW), other=0)
            bits = tl.reshape(((w[:, :, None] >> j[None, None, :]) & 1) * 2 - 1, (BLOCK_N, BLOCK_K)).to(tl.int8)
        else:
            bits = tl.load(b_ptr + offs_n[:, None] * stride_bn + ks[None, :],
                           mask=(offs_n[:, None] < N) & (ks[None, :] < K), other=0.0)
        if FLOAT:
            acc = tl.dot(a, tl.trans(bits), acc)
        else:
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
                     A_FLOAT: tl.constexpr, ZERO_BIT: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr):
    """``out[m, n] = scale * (K - 2 popcount(a[m] ^ b[n])) + bias[n]`` for packed +-1 rows (small ``M``).

    Both operands pad their last word with the same bit (1), so padding never differs and needs no mask.
    ``USE_ASM``: the hardware ``popc`` through inline PTX (CUDA only); otherwise the SWAR popcount. ``A_FLOAT``
    (CUDA only): ``a`` is the float activations ``[M, K]``, signed and packed here (``sign(0)`` as ``ZERO_BIT``).
    """
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.int32)
    if USE_ASM:
        # CUDA: [BLOCK_M, BLOCK_N, BLOCK_W] tiles (coalesced word rows), hardware popc, summed elementwise over the
        # K loop and reduced over the words once at the end (a reduction per step costs a warp shuffle per word).
        offs_w = tl.arange(0, BLOCK_W)
        m3 = offs_m[:, None, None]
        n3 = offs_n[None, :, None]
        acc3 = tl.full((BLOCK_M, BLOCK_N, BLOCK_W), 0, dtype=tl.int32)
        j = tl.arange(0, 32)
        for w0 in range(0, KW, BLOCK_W):
            ws = w0 + offs_w[None, None, :]
            if A_FLOAT:
                ks = (w0 + offs_w)[None, :, None] * 32 + j[None, None, :]
                xf = tl.load(a_ptr + offs_m[:, None, None] * stride_am + ks,
                             mask=(offs_m[:, None, None] < M) & (ks < K), other=0.0)
                bit = tl.where(ks < K, tl.where(xf > 0, 1, tl.where(xf < 0, 0, ZERO_BIT)), 1)
                a = tl.sum(bit << j[None, None, :], axis=2)[:, None, :]  # disjoint bits: the sum is the OR
                a = tl.where(ws < KW, a, 0)  # words past KW: zero, as the masked weight load gives
            else:
                a = tl.load(a_ptr + m3 * stride_am + ws, mask=(m3 < M) & (ws < KW), other=0)
            b = tl.load(b_ptr + n3 * stride_bn + ws, mask=(n3 < N) & (ws < KW), other=0)
            acc3 += tl.inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", [a ^ b], dtype=tl.int32, is_pure=True,
                                              pack=1)
        acc += tl.sum(acc3, axis=2)
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


def xnor_gemv_hs_kernel(a_ptr, b_ptr, out_ptr, scale_ptr, bias_ptr, M, N, K, KW,
                        stride_am, stride_bn, stride_om,
                        SCALE_MODE: tl.constexpr, HAS_BIAS: tl.constexpr, USE_ASM: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """:func:`xnor_gemv_kernel` with a Harley-Seal carry-save count: eight XOR words per step go through seven
    carry-save adders (two bitwise ops each) into running ``ones``/``twos``/``fours`` bit planes, and only the
    carry out (``eights``) is popcounted: one popcount per eight words instead of eight, which is what bounds the
    plain kernel at batch > 1 (``popc`` issues at a quarter of the integer rate).
    Each step loads two ``[., 4]`` word tiles per operand (16 bytes a row: one vector load, split in registers).
    """
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    q = tl.arange(0, 4)
    m3 = offs_m[:, None, None]
    n3 = offs_n[None, :, None]
    q3 = q[None, None, :]
    zero = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.int32)
    ones = zero
    twos = zero
    fours = zero
    eights = zero  # popcount of the carries out, accumulated
    for w0 in range(0, KW, 8):
        ws = w0 + q3
        a0 = tl.load(a_ptr + m3 * stride_am + ws, mask=(m3 < M) & (ws < KW), other=0)
        b0 = tl.load(b_ptr + n3 * stride_bn + ws, mask=(n3 < N) & (ws < KW), other=0)
        a1 = tl.load(a_ptr + m3 * stride_am + ws + 4, mask=(m3 < M) & (ws + 4 < KW), other=0)
        b1 = tl.load(b_ptr + n3 * stride_bn + ws + 4, mask=(n3 < N) & (ws + 4 < KW), other=0)
        xa, xb = tl.split(tl.reshape(a0 ^ b0, (BLOCK_M, BLOCK_N, 2, 2)))
        x0, x1 = tl.split(xa)
        x2, x3 = tl.split(xb)
        xa, xb = tl.split(tl.reshape(a1 ^ b1, (BLOCK_M, BLOCK_N, 2, 2)))
        x4, x5 = tl.split(xa)
        x6, x7 = tl.split(xb)
        # carry-save adders: (high, low) = (majority, parity) of three bit planes
        u = ones ^ x0
        twos_a = (ones & x0) | (u & x1)
        ones = u ^ x1
        u = ones ^ x2
        twos_b = (ones & x2) | (u & x3)
        ones = u ^ x3
        u = twos ^ twos_a
        fours_a = (twos & twos_a) | (u & twos_b)
        twos = u ^ twos_b
        u = ones ^ x4
        twos_a = (ones & x4) | (u & x5)
        ones = u ^ x5
        u = ones ^ x6
        twos_b = (ones & x6) | (u & x7)
        ones = u ^ x7
        u = twos ^ twos_a
        fours_b = (twos & twos_a) | (u & twos_b)
        twos = u ^ twos_b
        u = fours ^ fours_a
        carry = (fours & fours_a) | (u & fours_b)
        fours = u ^ fours_b
        if USE_ASM:
            eights += tl.inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", [carry], dtype=tl.int32, is_pure=True,
                                                pack=1)
        else:  # SWAR popcount (the interpreter's)
            c = carry.to(tl.uint32, bitcast=True)
            c = c - ((c >> 1) & 0x55555555)
            c = (c & 0x33333333) + ((c >> 2) & 0x33333333)
            c = (c + (c >> 4)) & 0x0F0F0F0F
            eights += ((c * 0x01010101) >> 24).to(tl.int32)
    # the bit planes left: ones + 2 twos + 4 fours, counted together as one [BLOCK_M, BLOCK_N, 2, 2] tensor
    planes = tl.join(tl.join(ones, twos), tl.join(fours, zero))
    if USE_ASM:
        pc = tl.inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", [planes], dtype=tl.int32, is_pure=True, pack=1)
    else:
        c = planes.to(tl.uint32, bitcast=True)
        c = c - ((c >> 1) & 0x55555555)
        c = (c & 0x33333333) + ((c >> 2) & 0x33333333)
        c = (c + (c >> 4)) & 0x0F0F0F0F
        pc = ((c * 0x01010101) >> 24).to(tl.int32)
    low, high = tl.split(pc)
    p_ones, p_twos = tl.split(low)
    p_fours, _ = tl.split(high)
    acc = 8 * eights + 4 * p_fours + 2 * p_twos + p_ones
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


def sign_nhwc_kernel(x_ptr, out_ptr, C, H, W, HP, WP, PAD, stride_xn, stride_xc, stride_xh, stride_xw,
                     POS: tl.constexpr, NEG: tl.constexpr, ZERO: tl.constexpr, FILL: tl.constexpr,
                     BLOCK_W: tl.constexpr, BLOCK_C: tl.constexpr):
    """``x [N, C, H, W]`` (any strides) -> its sign bytes in ``out [N, H + 2 PAD, W + 2 PAD, C]`` (channels
    last), the border ``FILL``: the operand an implicit-GEMM conv reads with contiguous channel runs. A program
    writes ``BLOCK_W`` pixels of one padded row by ``BLOCK_C`` channels, so an NCHW input is read along its rows
    and a channels-last one along its channels (each side contiguous; the transpose goes through the compiler's
    layout conversion)."""
    row = tl.program_id(0)  # over N * HP
    cs = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    wp = tl.program_id(2) * BLOCK_W + tl.arange(0, BLOCK_W)
    n = row // HP
    w = wp - PAD
    h = row % HP - PAD
    hv = h + 0 * w  # as a vector: the interpreter refuses a mask built from a scalar comparison
    inside = (w >= 0) & (w < W) & (hv >= 0) & (hv < H)
    src = x_ptr + n * stride_xn + h * stride_xh + w[:, None] * stride_xw + cs[None, :] * stride_xc
    x = tl.load(src, mask=inside[:, None] & (cs[None, :] < C), other=0.0)
    s = tl.where(x > 0, POS, tl.where(x < 0, NEG, ZERO))
    s = tl.where(inside[:, None], s, FILL).to(tl.int8)
    tl.store(out_ptr + (row * WP + wp)[:, None] * C + cs[None, :], s, mask=(wp[:, None] < WP) & (cs[None, :] < C))


def sign_conv_weight_kernel(w_ptr, out_ptr, COUT, C, TAPS, POS: tl.constexpr, NEG: tl.constexpr,
                            ZERO: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    """A contiguous conv weight ``w [COUT, C, KH, KW]`` -> its sign bytes ``out [COUT, KH, KW, C]`` (the
    implicit-GEMM conv's K order: taps outer, channels inner), one launch instead of a permuting copy and a sign
    pass."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    ks = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)  # out's column: tap * C + c
    tap = ks // C
    c = ks % C
    ok = (rows[:, None] < COUT) & (ks[None, :] < TAPS * C)
    x = tl.load(w_ptr + rows[:, None] * (C * TAPS) + (c * TAPS + tap)[None, :], mask=ok, other=0.0)
    s = tl.where(x > 0, POS, tl.where(x < 0, NEG, ZERO)).to(tl.int8)
    tl.store(out_ptr + rows[:, None] * (C * TAPS) + ks[None, :], s, mask=ok)


def conv_implicit_kernel(x_ptr, w_ptr, out_ptr, scale_ptr, bias_ptr, M, COUT, C, OH, OW, HP, WP, STRIDE, DIL,
                         SCALE_MODE: tl.constexpr, HAS_BIAS: tl.constexpr, FLOAT: tl.constexpr,
                         KH: tl.constexpr, KW: tl.constexpr, CL_OUT: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Implicit-GEMM binary conv2d: ``out [N, COUT, OH, OW]`` from the padded channels-last signs
    ``x [N, HP, WP, C]`` and the weight signs ``w [COUT, KH, KW, C]`` (bytes: int8, or e4m3 with ``FLOAT``),
    no patch matrix in memory. Row ``m`` of the GEMM is the output pixel ``(n, oh, ow)``; the K loop walks the
    kernel taps and ``BLOCK_K`` channels at a time (``C % BLOCK_K == 0``). Exact integer sums (int32, or fp32 for
    fp8); the scale and bias epilogue writes NCHW directly, or channels last (``CL_OUT``: ``out [N, OH, OW, COUT]``
    in memory, the rows of the GEMM as they are).
    """
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    n = offs_m // (OH * OW)
    ohw = offs_m % (OH * OW)
    oh = ohw // OW
    ow = ohw % OW
    row = (n * HP + oh * STRIDE) * WP + ow * STRIDE  # the tap (0, 0) of each output pixel, in pixels
    m_ok = offs_m < M
    n_ok = offs_n < COUT
    if FLOAT:
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)
    else:
        acc = tl.full((BLOCK_M, BLOCK_N), 0, dtype=tl.int32)
    # one flat loop over (tap, channel block): Triton software-pipelines only an innermost loop, and a channel loop
    # of one or two turns inside the tap loop left every load unpipelined (one shared-memory buffer, load then MMA)
    csteps = C // BLOCK_K
    for kk in range(KH * KW * csteps):
        tap = kk // csteps
        c0 = (kk % csteps) * BLOCK_K
        i = tap // KW
        j = tap % KW
        pix = row + (i * DIL) * WP + j * DIL
        cs = c0 + offs_k
        a = tl.load(x_ptr + pix[:, None] * C + cs[None, :], mask=m_ok[:, None], other=0.0)
        b = tl.load(w_ptr + offs_n[:, None] * (KH * KW * C) + tap * C + cs[None, :], mask=n_ok[:, None],
                    other=0.0)
        if FLOAT:
            acc = tl.dot(a, tl.trans(b), acc)
        else:
            acc = tl.dot(a, tl.trans(b), acc, out_dtype=tl.int32)
    y = acc.to(tl.float32)
    if out_ptr.dtype.element_ty == tl.float64:
        y = acc.to(tl.float64)
    if SCALE_MODE == 1:
        y = y * tl.load(scale_ptr).to(y.dtype)
    if SCALE_MODE == 2:
        y = y * tl.load(scale_ptr + offs_n, mask=n_ok, other=0.0).to(y.dtype)[None, :]
    if HAS_BIAS:
        y = y + tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0).to(y.dtype)[None, :]
    if CL_OUT:
        dst = out_ptr + offs_m[:, None] * COUT + offs_n[None, :]
    else:
        dst = out_ptr + (n * (COUT * OH * OW) + ohw)[:, None] + offs_n[None, :] * (OH * OW)
    tl.store(dst, y.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def sign_perm_kernel(x_ptr, out_ptr, sum_ptr, K, KP, stride_xm, stride_om,
                     ZERO: tl.constexpr, USE_SUM: tl.constexpr, BLOCK: tl.constexpr, LOG_BLOCK: tl.constexpr):
    """Row ``m`` of ``x [M, K]`` as int8 signs (``sign(0) = ZERO``) in the K order of :func:`xnor_gemv_tc_kernel`'s
    unpacked weight bytes: position ``32 w + 4 i + j`` holds ``k = 32 w + 8 j + i``; zero for ``k >= K`` up to
    ``KP``. ``sum[m]`` = the sum of the row's signs. ``USE_SUM`` (CUDA): ``tl.sum``; otherwise ``LOG_BLOCK``
    halvings."""
    m = tl.program_id(0)
    p = tl.arange(0, BLOCK)
    kk = (p // 32) * 32 + (p % 4) * 8 + (p % 32) // 4
    total = tl.full((BLOCK,), 0, dtype=tl.int32)
    for p0 in range(0, KP, BLOCK):
        k = p0 + kk
        x = tl.load(x_ptr + m * stride_xm + k, mask=k < K, other=0)
        s = tl.where(x > 0, 1, tl.where(x < 0, -1, ZERO))
        s = tl.where(k < K, s, 0)
        tl.store(out_ptr + m * stride_om + p0 + p, s.to(tl.int8), mask=p0 + p < KP)
        total += s
    if USE_SUM:
        tl.store(sum_ptr + m, tl.sum(total, axis=0))
    else:  # halvings of the last axis (no tl.sum in the interpreter: see the module doc)
        t = total
        for h in tl.static_range(LOG_BLOCK):
            lo, hi = tl.split(tl.reshape(t, (BLOCK >> (h + 1), 2)))
            t = lo + hi
        tl.store(sum_ptr + m + tl.arange(0, 1), t)


def xnor_gemv_tc_kernel(x8_ptr, sum_ptr, b_ptr, out_ptr, scale_ptr, bias_ptr, M, N, KW,
                        stride_xm, stride_bn, stride_om,
                        SCALE_MODE: tl.constexpr, HAS_BIAS: tl.constexpr, USE_ASM: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_W: tl.constexpr):
    """The small-batch binary GEMV on the int8 tensor cores: ``acc[n, m] = sum_k b[n, k] s[m, k]`` with the weight
    bits ``b`` in {0, 1} unpacked on chip and the signs ``s`` from :func:`sign_perm_kernel`, so that
    ``sum_k (2 b - 1) s = 2 acc - sum_k s`` (exact int32). ``b``: packed int32 ``[N, KW]``, lsb order (the bits
    past K multiply the zero padding of ``s``).

    Unpacking: byte ``j`` of ``(word >> i) & 0x01010101`` is bit ``8 j + i``: two integer ops give four weight bytes,
    which become K positions ``4 i + j`` (the activations are permuted to match). ``USE_ASM`` (CUDA): the int32 is
    handed to the MMA operand as its four bytes by an inline-asm ``mov`` with ``pack=4``; the four packed elements
    are four copies joined on the last axes, which ``tl.join`` keeps in one thread. Otherwise (interpreter) each bit
    is shifted out separately. Measured, not dispatched: Triton converts the unpacked tile to the MMA operand
    layout through shared memory, which bounds it (docs/kernels.md, "Binary GEMV")."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_w = tl.arange(0, BLOCK_W)
    offs_k = tl.arange(0, BLOCK_W * 32)
    bit = (offs_k % 4) * 8 + (offs_k % 32) // 4
    acc = tl.full((BLOCK_N, BLOCK_M), 0, dtype=tl.int32)
    for w0 in range(0, KW, BLOCK_W):
        ws = w0 + offs_w
        w = tl.load(b_ptr + offs_n[:, None] * stride_bn + ws[None, :],
                    mask=(offs_n[:, None] < N) & (ws[None, :] < KW), other=0)
        if USE_ASM:
            r = w & 0x01010101
            r = tl.join(tl.join(r, r), tl.join(r, r))
            p0 = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", [r], dtype=tl.int8, is_pure=True, pack=4)
            r = (w >> 1) & 0x01010101
            r = tl.join(tl.join(r, r), tl.join(r, r))
            p1 = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", [r], dtype=tl.int8, is_pure=True, pack=4)
            r = (w >> 2) & 0x01010101
            r = tl.join(tl.join(r, r), tl.join(r, r))
            p2 = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", [r], dtype=tl.int8, is_pure=True, pack=4)
            r = (w >> 3) & 0x01010101
            r = tl.join(tl.join(r, r), tl.join(r, r))
            p3 = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", [r], dtype=tl.int8, is_pure=True, pack=4)
            r = (w >> 4) & 0x01010101
            r = tl.join(tl.join(r, r), tl.join(r, r))
            p4 = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", [r], dtype=tl.int8, is_pure=True, pack=4)
            r = (w >> 5) & 0x01010101
            r = tl.join(tl.join(r, r), tl.join(r, r))
            p5 = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", [r], dtype=tl.int8, is_pure=True, pack=4)
            r = (w >> 6) & 0x01010101
            r = tl.join(tl.join(r, r), tl.join(r, r))
            p6 = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", [r], dtype=tl.int8, is_pure=True, pack=4)
            r = (w >> 7) & 0x01010101
            r = tl.join(tl.join(r, r), tl.join(r, r))
            p7 = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r,r,r", [r], dtype=tl.int8, is_pure=True, pack=4)
            # [BLOCK_N, BLOCK_W, j (2, 2), i (4s, 2s, 1s)] -> positions 4 i + j
            wb = tl.join(tl.join(tl.join(p0, p4), tl.join(p2, p6)), tl.join(tl.join(p1, p5), tl.join(p3, p7)))
            wb = tl.reshape(tl.permute(wb, (0, 1, 4, 5, 6, 2, 3)), (BLOCK_N, BLOCK_W * 32))
        else:
            wr = tl.reshape(tl.broadcast_to(w[:, :, None], (BLOCK_N, BLOCK_W, 32)), (BLOCK_N, BLOCK_W * 32))
            wb = ((wr >> bit[None, :]) & 1).to(tl.int8)
        xa = tl.load(x8_ptr + offs_m[:, None] * stride_xm + (w0 * 32 + offs_k)[None, :], mask=offs_m[:, None] < M,
                     other=0)
        acc = tl.dot(wb, tl.trans(xa), acc, out_dtype=tl.int32)
    exact = 2 * acc - tl.load(sum_ptr + offs_m, mask=offs_m < M, other=0)[None, :]
    y = exact.to(tl.float32)
    if out_ptr.dtype.element_ty == tl.float64:
        y = exact.to(tl.float64)
    if SCALE_MODE == 1:
        y = y * tl.load(scale_ptr).to(y.dtype)
    if SCALE_MODE == 2:
        y = y * tl.load(scale_ptr + offs_n, mask=offs_n < N, other=0.0).to(y.dtype)[:, None]
    if HAS_BIAS:
        y = y + tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(y.dtype)[:, None]
    tl.store(out_ptr + offs_m[None, :] * stride_om + offs_n[:, None], y.to(out_ptr.dtype.element_ty),
             mask=(offs_m[None, :] < M) & (offs_n[:, None] < N))


def xnor_gemv_bmma_kernel(a_ptr, b_ptr, out_ptr, scale_ptr, bias_ptr, M, N, K, KW, stride_am, stride_bn, stride_om,
                          SCALE_MODE: tl.constexpr, HAS_BIAS: tl.constexpr, USE_ASM: tl.constexpr,
                          NTILE: tl.constexpr, KSPLIT: tl.constexpr, UNROLL: tl.constexpr, VEC: tl.constexpr):
    """:func:`xnor_gemv_kernel` on the binary tensor cores: ``mma.sync.m16n8k256.b1`` with ``xor.popc`` (CUDA,
    ``USE_ASM``) takes 16 packed activation rows and 8 packed weight rows, 256 bits of K an instruction, and adds
    ``popcount(a ^ b)`` into int32 sums; ``out = scale * (K - 2 sum) + bias`` as in the popcount kernel (both
    operands pad with bit 1, so padding never differs; words past ``KW`` load as 0 on both sides).

    One program: ``NTILE`` tiles of 8 weight rows by 16 activation rows, ``NTILE * KSPLIT`` warps: warp ``w`` takes
    tile ``w % NTILE`` and every ``KSPLIT``-th step of 16 words (two MMAs) from step ``w // NTILE``, ``UNROLL``
    steps per loop turn (all loads first); the ``KSPLIT`` partial sums are added at the end. The MMA is issued by
    inline PTX on 1-D tensors of ``32 * warps`` elements, element ``r`` in thread ``r`` (Triton's layout of a 1-D
    tensor whose loads have no contiguity): each thread passes its own fragment registers. Fragments (lane ``l``,
    ``g = l // 4``, ``t = l % 4``): A rows ``g`` and ``g + 8``, B row ``g``, each with words ``4 t .. 4 t + 3`` of the
    step; the MMA pairs A's and B's registers by position, so K has the same order on both sides. Sums: rows
    ``g, g + 8`` by weight rows ``2 t, 2 t + 1``. Otherwise (interpreter): the same sums by XOR and SWAR popcount."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    m0 = pid_m * 16
    # the sums' indices: [tile, lane, m half, n parity]
    lane = tl.arange(0, 32)[None, :, None, None]
    m = m0 + lane // 4 + 8 * tl.arange(0, 2)[None, None, :, None]
    n = (pid_n * NTILE + tl.arange(0, NTILE)[:, None, None, None]) * 8 + 2 * (lane % 4) + \
        tl.arange(0, 2)[None, None, None, :]
    if USE_ASM:
        r = tl.arange(0, 32 * NTILE * KSPLIT)
        warp = r // 32
        g = (r % 32) // 4
        rb = (pid_n * NTILE + warp % NTILE) * 8 + g
        ra0 = m0 + g
        ra1 = ra0 + 8
        first = (warp // NTILE) * 16 + (r % 4) * 4
        c0 = tl.full((32 * NTILE * KSPLIT,), 0, dtype=tl.int32)
        c1 = c0
        c2 = c0
        c3 = c0
        for s0 in range(0, KW, 16 * KSPLIT * UNROLL):
            w = s0 + first
            if VEC:
                ok = w < KW  # VEC: KW, the strides and the pointers are even, so a pair is all in or all out
                pb = (b_ptr + rb * stride_bn + w).to(tl.pointer_type(tl.int64))
                pa0 = (a_ptr + ra0 * stride_am + w).to(tl.pointer_type(tl.int64))
                pa1 = (a_ptr + ra1 * stride_am + w).to(tl.pointer_type(tl.int64))
                x = tl.load(pb, mask=(rb < N) & ok, other=0)
                b0 = x.to(tl.int32)
                b1 = (x >> 32).to(tl.int32)
                x = tl.load(pa0, mask=(ra0 < M) & ok, other=0)
                a00 = x.to(tl.int32)
                a01 = (x >> 32).to(tl.int32)
                x = tl.load(pa1, mask=(ra1 < M) & ok, other=0)
                a10 = x.to(tl.int32)
                a11 = (x >> 32).to(tl.int32)
                x = tl.load(pb + 1, mask=(rb < N) & (w + 2 < KW), other=0)
                b2 = x.to(tl.int32)
                b3 = (x >> 32).to(tl.int32)
                x = tl.load(pa0 + 1, mask=(ra0 < M) & (w + 2 < KW), other=0)
                a02 = x.to(tl.int32)
                a03 = (x >> 32).to(tl.int32)
                x = tl.load(pa1 + 1, mask=(ra1 < M) & (w + 2 < KW), other=0)
                a12 = x.to(tl.int32)
                a13 = (x >> 32).to(tl.int32)
            else:
                ok = w < KW
                b0 = tl.load(b_ptr + rb * stride_bn + w, mask=(rb < N) & ok, other=0)
                a00 = tl.load(a_ptr + ra0 * stride_am + w, mask=(ra0 < M) & ok, other=0)
                a10 = tl.load(a_ptr + ra1 * stride_am + w, mask=(ra1 < M) & ok, other=0)
                ok = w + 1 < KW
                b1 = tl.load(b_ptr + rb * stride_bn + w + 1, mask=(rb < N) & ok, other=0)
                a01 = tl.load(a_ptr + ra0 * stride_am + w + 1, mask=(ra0 < M) & ok, other=0)
                a11 = tl.load(a_ptr + ra1 * stride_am + w + 1, mask=(ra1 < M) & ok, other=0)
                ok = w + 2 < KW
                b2 = tl.load(b_ptr + rb * stride_bn + w + 2, mask=(rb < N) & ok, other=0)
                a02 = tl.load(a_ptr + ra0 * stride_am + w + 2, mask=(ra0 < M) & ok, other=0)
                a12 = tl.load(a_ptr + ra1 * stride_am + w + 2, mask=(ra1 < M) & ok, other=0)
                ok = w + 3 < KW
                b3 = tl.load(b_ptr + rb * stride_bn + w + 3, mask=(rb < N) & ok, other=0)
                a03 = tl.load(a_ptr + ra0 * stride_am + w + 3, mask=(ra0 < M) & ok, other=0)
                a13 = tl.load(a_ptr + ra1 * stride_am + w + 3, mask=(ra1 < M) & ok, other=0)
            if UNROLL == 2:
                v = w + 16 * KSPLIT
                if VEC:
                    ok = v < KW  # VEC: KW, the strides and the pointers are even, so a pair is all in or all out
                    pb = (b_ptr + rb * stride_bn + v).to(tl.pointer_type(tl.int64))
                    pa0 = (a_ptr + ra0 * stride_am + v).to(tl.pointer_type(tl.int64))
                    pa1 = (a_ptr + ra1 * stride_am + v).to(tl.pointer_type(tl.int64))
                    x = tl.load(pb, mask=(rb < N) & ok, other=0)
                    bu0 = x.to(tl.int32)
                    bu1 = (x >> 32).to(tl.int32)
                    x = tl.load(pa0, mask=(ra0 < M) & ok, other=0)
                    au00 = x.to(tl.int32)
                    au01 = (x >> 32).to(tl.int32)
                    x = tl.load(pa1, mask=(ra1 < M) & ok, other=0)
                    au10 = x.to(tl.int32)
                    au11 = (x >> 32).to(tl.int32)
                    x = tl.load(pb + 1, mask=(rb < N) & (v + 2 < KW), other=0)
                    bu2 = x.to(tl.int32)
                    bu3 = (x >> 32).to(tl.int32)
                    x = tl.load(pa0 + 1, mask=(ra0 < M) & (v + 2 < KW), other=0)
                    au02 = x.to(tl.int32)
                    au03 = (x >> 32).to(tl.int32)
                    x = tl.load(pa1 + 1, mask=(ra1 < M) & (v + 2 < KW), other=0)
                    au12 = x.to(tl.int32)
                    au13 = (x >> 32).to(tl.int32)
                else:
                    ok = v < KW
                    bu0 = tl.load(b_ptr + rb * stride_bn + v, mask=(rb < N) & ok, other=0)
                    au00 = tl.load(a_ptr + ra0 * stride_am + v, mask=(ra0 < M) & ok, other=0)
                    au10 = tl.load(a_ptr + ra1 * stride_am + v, mask=(ra1 < M) & ok, other=0)
                    ok = v + 1 < KW
                    bu1 = tl.load(b_ptr + rb * stride_bn + v + 1, mask=(rb < N) & ok, other=0)
                    au01 = tl.load(a_ptr + ra0 * stride_am + v + 1, mask=(ra0 < M) & ok, other=0)
                    au11 = tl.load(a_ptr + ra1 * stride_am + v + 1, mask=(ra1 < M) & ok, other=0)
                    ok = v + 2 < KW
                    bu2 = tl.load(b_ptr + rb * stride_bn + v + 2, mask=(rb < N) & ok, other=0)
                    au02 = tl.load(a_ptr + ra0 * stride_am + v + 2, mask=(ra0 < M) & ok, other=0)
                    au12 = tl.load(a_ptr + ra1 * stride_am + v + 2, mask=(ra1 < M) & ok, other=0)
                    ok = v + 3 < KW
                    bu3 = tl.load(b_ptr + rb * stride_bn + v + 3, mask=(rb < N) & ok, other=0)
                    au03 = tl.load(a_ptr + ra0 * stride_am + v + 3, mask=(ra0 < M) & ok, other=0)
                    au13 = tl.load(a_ptr + ra1 * stride_am + v + 3, mask=(ra1 < M) & ok, other=0)
            c0, c1, c2, c3 = tl.inline_asm_elementwise(
                "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc {$0, $1, $2, $3}, {$4, $5, $6, $7}, "
                "{$8, $9}, {$10, $11, $12, $13};", "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r",
                [a00, a10, a01, a11, b0, b1, c0, c1, c2, c3],
                dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True, pack=1)
            c0, c1, c2, c3 = tl.inline_asm_elementwise(
                "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc {$0, $1, $2, $3}, {$4, $5, $6, $7}, "
                "{$8, $9}, {$10, $11, $12, $13};", "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r",
                [a02, a12, a03, a13, b2, b3, c0, c1, c2, c3],
                dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True, pack=1)
            if UNROLL == 2:
                c0, c1, c2, c3 = tl.inline_asm_elementwise(
                    "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc {$0, $1, $2, $3}, {$4, $5, $6, $7}, "
                    "{$8, $9}, {$10, $11, $12, $13};", "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r",
                    [au00, au10, au01, au11, bu0, bu1, c0, c1, c2, c3],
                    dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True, pack=1)
                c0, c1, c2, c3 = tl.inline_asm_elementwise(
                    "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc {$0, $1, $2, $3}, {$4, $5, $6, $7}, "
                    "{$8, $9}, {$10, $11, $12, $13};", "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r",
                    [au02, au12, au03, au13, bu2, bu3, c0, c1, c2, c3],
                    dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True, pack=1)
        c0 = tl.sum(tl.reshape(c0, (KSPLIT, NTILE * 32)), axis=0)
        c1 = tl.sum(tl.reshape(c1, (KSPLIT, NTILE * 32)), axis=0)
        c2 = tl.sum(tl.reshape(c2, (KSPLIT, NTILE * 32)), axis=0)
        c3 = tl.sum(tl.reshape(c3, (KSPLIT, NTILE * 32)), axis=0)
        acc = tl.reshape(tl.join(tl.join(c0, c2), tl.join(c1, c3)), (NTILE, 32, 2, 2))
    else:
        acc = tl.full((NTILE, 32, 2, 2), 0, dtype=tl.int32)
        for w in range(0, KW):
            a = tl.load(a_ptr + m * stride_am + w, mask=m < M, other=0)
            b = tl.load(b_ptr + n * stride_bn + w, mask=n < N, other=0)
            u = (a ^ b).to(tl.uint32, bitcast=True)
            u = u - ((u >> 1) & 0x55555555)
            u = (u & 0x33333333) + ((u >> 2) & 0x33333333)
            u = (u + (u >> 4)) & 0x0F0F0F0F
            acc += ((u * 0x01010101) >> 24).to(tl.int32)
    exact = K - 2 * acc
    y = exact.to(tl.float32)
    if out_ptr.dtype.element_ty == tl.float64:
        y = exact.to(tl.float64)
    if SCALE_MODE == 1:
        y = y * tl.load(scale_ptr).to(y.dtype)
    if SCALE_MODE == 2:
        y = y * tl.load(scale_ptr + n, mask=n < N, other=0.0).to(y.dtype)
    if HAS_BIAS:
        y = y + tl.load(bias_ptr + n, mask=n < N, other=0.0).to(y.dtype)
    tl.store(out_ptr + m * stride_om + n, y.to(out_ptr.dtype.element_ty), mask=(m < M) & (n < N))
