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


def sign_nhwc_kernel(x_ptr, out_ptr, C, H, W, HP, WP, PAD, P, stride_xn, stride_xc,
                     POS: tl.constexpr, NEG: tl.constexpr, ZERO: tl.constexpr, FILL: tl.constexpr,
                     BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    """``x [N, C, H, W]`` (contiguous H, W) -> its sign bytes in ``out [N, H + 2 PAD, W + 2 PAD, C]`` (channels
    last), the border ``FILL``: the operand an implicit-GEMM conv reads with contiguous channel runs."""
    pix = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)  # over N * HP * WP
    cs = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    n = pix // (HP * WP)
    hw = pix % (HP * WP)
    h = hw // WP - PAD
    w = hw % WP - PAD
    inside = (h >= 0) & (h < H) & (w >= 0) & (w < W) & (pix < P)
    src = x_ptr + n[:, None] * stride_xn + cs[None, :] * stride_xc + (h * W + w)[:, None]
    x = tl.load(src, mask=inside[:, None] & (cs[None, :] < C), other=0.0)
    s = tl.where(x > 0, POS, tl.where(x < 0, NEG, ZERO))
    s = tl.where(inside[:, None], s, FILL).to(tl.int8)
    tl.store(out_ptr + pix[:, None] * C + cs[None, :], s, mask=(pix[:, None] < P) & (cs[None, :] < C))


def conv_implicit_kernel(x_ptr, w_ptr, out_ptr, scale_ptr, bias_ptr, M, COUT, C, OH, OW, HP, WP, STRIDE, DIL,
                         SCALE_MODE: tl.constexpr, HAS_BIAS: tl.constexpr, FLOAT: tl.constexpr,
                         KH: tl.constexpr, KW: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Implicit-GEMM binary conv2d: ``out [N, COUT, OH, OW]`` from the padded channels-last signs
    ``x [N, HP, WP, C]`` and the weight signs ``w [COUT, KH, KW, C]`` (bytes: int8, or e4m3 with ``FLOAT``),
    no patch matrix in memory. Row ``m`` of the GEMM is the output pixel ``(n, oh, ow)``; the K loop walks the
    kernel taps and ``BLOCK_K`` channels at a time (``C % BLOCK_K == 0``). Exact integer sums (int32, or fp32 for
    fp8); the scale and bias epilogue writes NCHW directly.
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
    for tap in range(KH * KW):
        i = tap // KW
        j = tap % KW
        pix = row + (i * DIL) * WP + j * DIL
        for c0 in range(0, C, BLOCK_K):
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
    dst = out_ptr + (n * (COUT * OH * OW) + ohw)[:, None] + offs_n[None, :] * (OH * OW)
    tl.store(dst, y.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])
