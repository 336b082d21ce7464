"""Conv kernels measured against ``conv_implicit_kernel`` and not dispatched (docs/kernels.md, "Binary conv2d"):
the implicit GEMM before 2026-12-06 (its K loop nested: taps outer, channel blocks inner), its sign pass, a
variant that reads channels-last float16 ``x`` and signs it in registers (no sign pass), and a persistent variant.
CUDA only (``explore.py`` times them)."""

import triton.language as tl


def sign_nhwc_old_kernel(x_ptr, out_ptr, C, H, W, HP, WP, PAD, P, stride_xn, stride_xc,
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


def conv_nested_kernel(x_ptr, w_ptr, out_ptr, scale_ptr, bias_ptr, M, COUT, C, OH, OW, HP, WP, STRIDE, DIL,
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


def conv_fused_kernel(x_ptr, w_ptr, out_ptr, scale_ptr, bias_ptr, M, COUT, C, H, W, OH, OW, PAD, DIL,
                      POS: tl.constexpr, NEG: tl.constexpr, ZERO: tl.constexpr, FILL: tl.constexpr,
                      KH: tl.constexpr, KW: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """stride 1, channels-last fp16 x read directly, signed in registers."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    n = offs_m // (OH * OW)
    ohw = offs_m % (OH * OW)
    oh = ohw // OW
    ow = ohw % OW
    m_ok = offs_m < M
    n_ok = offs_n < COUT
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)
    csteps = C // BLOCK_K
    for kk in range(KH * KW * csteps):
        tap = kk // csteps
        c0 = (kk % csteps) * BLOCK_K
        hh = oh + (tap // KW) * DIL - PAD
        ww = ow + (tap % KW) * DIL - PAD
        inside = m_ok & (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W)
        cs = c0 + offs_k
        xv = tl.load(x_ptr + ((n * H + hh) * W + ww)[:, None] * C + cs[None, :], mask=inside[:, None], other=0.0)
        s = tl.where(xv > 0, 1.0, tl.where(xv < 0, -1.0, ZERO))
        s = tl.where(inside[:, None], s, FILL)
        a = s.to(tl.float8e4nv)
        b = tl.load(w_ptr + offs_n[:, None] * (KH * KW * C) + tap * C + cs[None, :], mask=n_ok[:, None], other=0.0)
        acc = tl.dot(a, tl.trans(b), acc)
    y = acc * tl.load(scale_ptr).to(tl.float32)
    y = y + tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
    dst = out_ptr + offs_m[:, None] * COUT + offs_n[None, :]
    tl.store(dst, y.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def conv_persistent_kernel(x_ptr, w_ptr, out_ptr, scale_ptr, bias_ptr, M, COUT, C, OH, OW, HP, WP, DIL, NUM_SMS,
                           KH: tl.constexpr, KW: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, FLATTEN: tl.constexpr):
    """conv_implicit (stride 1, tensor scale, bias, channels-last out) as a persistent kernel."""
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (COUT + BLOCK_N - 1) // BLOCK_N
    num_tiles = grid_m * grid_n
    csteps = C // BLOCK_K
    ksteps = KH * KW * csteps
    offs_k = tl.arange(0, BLOCK_K)
    scale = tl.load(scale_ptr).to(tl.float32)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=FLATTEN):
        pid_m = tile // grid_n
        pid_n = tile % grid_n
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        n = offs_m // (OH * OW)
        ohw = offs_m % (OH * OW)
        oh = ohw // OW
        ow = ohw % OW
        row = (n * HP + oh) * WP + ow
        m_ok = offs_m < M
        n_ok = offs_n < COUT
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)
        for kk in range(ksteps):
            tap = kk // csteps
            c0 = (kk % csteps) * BLOCK_K
            pix = row + ((tap // KW) * DIL) * WP + (tap % KW) * DIL
            cs = c0 + offs_k
            a = tl.load(x_ptr + pix[:, None] * C + cs[None, :], mask=m_ok[:, None], other=0.0)
            b = tl.load(w_ptr + offs_n[:, None] * (KH * KW * C) + tap * C + cs[None, :], mask=n_ok[:, None],
                        other=0.0)
            acc = tl.dot(a, tl.trans(b), acc)
        y = acc * scale + tl.load(bias_ptr + offs_n, mask=n_ok, other=0.0).to(tl.float32)[None, :]
        tl.store(out_ptr + offs_m[:, None] * COUT + offs_n[None, :], y.to(out_ptr.dtype.element_ty),
                 mask=m_ok[:, None] & n_ok[None, :])
