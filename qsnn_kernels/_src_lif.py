"""Triton sources of the fused multi-step LIF kernels (see :mod:`kernels._src_binary` for the rules they follow).

One program owns ``BLOCK`` neurons and walks all ``T`` steps, the membrane in registers. Forward reads ``x[t]``,
writes ``spk[t]`` and, when a backward will follow, the membrane it needs (``U`` after the reset, plus ``V`` before
the reset when the reset is immediate). Backward walks time in reverse with the carried ``dL/dU``.
``ROUND``: the membrane is rounded to bfloat16 after every step (the spec computes in bfloat16), by integer bit
arithmetic, which the interpreter runs too. Surrogate ids: 0 straight_through, 1 fast_sigmoid, 2 atan, 3 sigmoid
(``reference.surrogate``'s formulas).

Float scalars come in a small tensor ``c_ptr`` of the arithmetic's dtype (float64 for float64 input): a plain
Python float argument is passed to a compiled kernel as fp32, which rounded float64 runs' constants.
``PREFETCH`` (1 or 2): how many steps ahead the loads are issued (a time step's arithmetic is short; what keeps
the memory busy is the number of loads in flight).
"""

import triton.language as tl


def leaky_fwd_kernel(x_ptr, spk_ptr, u_ptr, v_ptr, beta_ptr, thr_ptr, gsf_ptr, T, N,
                     RESET: tl.constexpr, DELAY: tl.constexpr, SAVE: tl.constexpr, F64: tl.constexpr,
                     ROUND: tl.constexpr, BLOCK: tl.constexpr, PREFETCH: tl.constexpr):
    """snntorch ``Leaky`` over time (``reference.neurons.leaky``); RESET 0 subtract, 1 zero, 2 none."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < N
    ahead = inside & (offs * 0 + PREFETCH > 1)  # the second prefetched step is loaded
    if F64:
        acc_ty = tl.float64
    else:
        acc_ty = tl.float32
    b = tl.load(beta_ptr).to(acc_ty)
    thr = tl.load(thr_ptr).to(acc_ty)
    g = tl.load(gsf_ptr).to(acc_ty)
    if ROUND:  # float32 parameters of a bfloat16 neuron: rounded to bfloat16, as the spec's arithmetic rounds them
        # (names of their own: a scalar `bits` here would clash with the loop's block-shaped one in the compiler)
        b_bits = b.to(tl.uint32, bitcast=True)
        b = (((b_bits + 0x7FFF + ((b_bits >> 16) & 1)) >> 16) << 16).to(tl.float32, bitcast=True)
        thr_bits = thr.to(tl.uint32, bitcast=True)
        thr = (((thr_bits + 0x7FFF + ((thr_bits >> 16) & 1)) >> 16) << 16).to(tl.float32, bitcast=True)
        g_bits = g.to(tl.uint32, bitcast=True)
        g = (((g_bits + 0x7FFF + ((g_bits >> 16) & 1)) >> 16) << 16).to(tl.float32, bitcast=True)
    b = tl.minimum(tl.maximum(b, 0.0), 1.0)
    u = tl.full((BLOCK,), 0.0, dtype=acc_ty)
    x_a = tl.load(x_ptr + offs, mask=inside, other=0.0)
    x_b = tl.load(x_ptr + N + offs, mask=ahead & (offs * 0 + 1 < T), other=0.0)
    for t in range(T):
        x = x_a.to(acc_ty)
        # the loads of the next PREFETCH steps go out before this step's arithmetic
        if PREFETCH > 1:
            x_a = x_b
            x_b = tl.load(x_ptr + (t + 2) * N + offs, mask=inside & (offs * 0 + t + 2 < T), other=0.0)
        else:
            x_a = tl.load(x_ptr + (t + 1) * N + offs, mask=inside & (offs * 0 + t + 1 < T), other=0.0)
        r = tl.where(u - thr > 0, 1.0, 0.0).to(acc_ty)
        if RESET == 0:
            v = b * u + x - r * thr
        elif RESET == 1:
            v = b * ((1.0 - r) * u) + x
        else:
            v = b * u + x
        if ROUND:  # round to bfloat16, nearest-even, by bits (the interpreter has no bfloat16)
            bits = v.to(tl.uint32, bitcast=True)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
            v = bits.to(tl.float32, bitcast=True)
        h = tl.where(v - thr > 0, 1.0, 0.0).to(acc_ty)
        tl.store(spk_ptr + t * N + offs, (g * h).to(spk_ptr.dtype.element_ty), mask=inside)
        if DELAY:
            u = v
        else:
            if SAVE:
                tl.store(v_ptr + t * N + offs, v.to(v_ptr.dtype.element_ty), mask=inside)
            d = h - r
            if RESET == 0:
                u = v - d * thr
            elif RESET == 1:
                u = v - d * v
            else:
                u = v
            if ROUND:
                bits = u.to(tl.uint32, bitcast=True)
                bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
                u = bits.to(tl.float32, bitcast=True)
        if SAVE:
            tl.store(u_ptr + t * N + offs, u.to(u_ptr.dtype.element_ty), mask=inside)


def leaky_bwd_kernel(gspk_ptr, u_ptr, v_ptr, dx_ptr, part_ptr, beta_ptr, thr_ptr, gsf_ptr, c_ptr, T, N,
                     RESET: tl.constexpr, DELAY: tl.constexpr, SURROGATE: tl.constexpr, F64: tl.constexpr,
                     ROUND: tl.constexpr, PARAM_GRAD: tl.constexpr, BLOCK: tl.constexpr, PREFETCH: tl.constexpr):
    """Reverse sweep of :func:`leaky_fwd_kernel`: ``dx`` and, per neuron, the time sums of ``d beta`` (before the
    clamp), ``d threshold``, ``d graded_spikes_factor`` into ``part[3, N]`` (summed over neurons by the caller, so
    a vmapped backward keeps them per sample; only with ``PARAM_GRAD``). ``c``: the surrogate's alpha, alpha / 2,
    pi / 2 * alpha."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    inside = offs < N
    ahead = inside & (offs * 0 + PREFETCH > 1)  # the second prefetched step is loaded
    if F64:
        acc_ty = tl.float64
    else:
        acc_ty = tl.float32
    b = tl.load(beta_ptr).to(acc_ty)
    thr = tl.load(thr_ptr).to(acc_ty)
    g = tl.load(gsf_ptr).to(acc_ty)
    if ROUND:  # float32 parameters of a bfloat16 neuron: rounded to bfloat16, as the spec's arithmetic rounds them
        # (names of their own: a scalar `bits` here would clash with the loop's block-shaped one in the compiler)
        b_bits = b.to(tl.uint32, bitcast=True)
        b = (((b_bits + 0x7FFF + ((b_bits >> 16) & 1)) >> 16) << 16).to(tl.float32, bitcast=True)
        thr_bits = thr.to(tl.uint32, bitcast=True)
        thr = (((thr_bits + 0x7FFF + ((thr_bits >> 16) & 1)) >> 16) << 16).to(tl.float32, bitcast=True)
        g_bits = g.to(tl.uint32, bitcast=True)
        g = (((g_bits + 0x7FFF + ((g_bits >> 16) & 1)) >> 16) << 16).to(tl.float32, bitcast=True)
    b = tl.minimum(tl.maximum(b, 0.0), 1.0)
    alpha = tl.load(c_ptr).to(acc_ty)
    half_alpha = tl.load(c_ptr + 1).to(acc_ty)
    pi2_alpha = tl.load(c_ptr + 2).to(acc_ty)
    zero = tl.full((BLOCK,), 0.0, dtype=acc_ty)
    gu = zero
    db = zero
    dthr = zero
    dg = zero
    last = T - 1
    # u[t - 1] (the state entering step t), ds[t] and, for an immediate reset, v[t]: t = T-1 now, T-2 prefetched
    up_a = tl.load(u_ptr + (last - 1) * N + offs, mask=inside & (offs * 0 + last > 0), other=0.0)
    ds_a = tl.load(gspk_ptr + last * N + offs, mask=inside, other=0.0)
    up_b = tl.load(u_ptr + (last - 2) * N + offs, mask=ahead & (offs * 0 + last > 1), other=0.0)
    ds_b = tl.load(gspk_ptr + (last - 1) * N + offs, mask=ahead & (offs * 0 + last > 0),
                   other=0.0)
    if DELAY:
        u_cur = tl.load(u_ptr + last * N + offs, mask=inside, other=0.0).to(acc_ty)
        v_a = ds_a
        v_b = ds_b
    else:
        u_cur = zero
        v_a = tl.load(v_ptr + last * N + offs, mask=inside, other=0.0)
        v_b = tl.load(v_ptr + (last - 1) * N + offs, mask=ahead & (offs * 0 + last > 0),
                      other=0.0)
    for i in range(T):
        t = last - i
        u_prev = up_a.to(acc_ty)
        ds = ds_a.to(acc_ty)
        if DELAY:
            v = u_cur
        else:
            v = v_a.to(acc_ty)
        if PREFETCH > 1:
            up_a = up_b
            ds_a = ds_b
            up_b = tl.load(u_ptr + (t - 3) * N + offs, mask=inside & (offs * 0 + t > 2), other=0.0)
            ds_b = tl.load(gspk_ptr + (t - 2) * N + offs, mask=inside & (offs * 0 + t > 1), other=0.0)
            if not DELAY:
                v_a = v_b
                v_b = tl.load(v_ptr + (t - 2) * N + offs, mask=inside & (offs * 0 + t > 1), other=0.0)
        else:
            up_a = tl.load(u_ptr + (t - 2) * N + offs, mask=inside & (offs * 0 + t > 1), other=0.0)
            ds_a = tl.load(gspk_ptr + (t - 1) * N + offs, mask=inside & (offs * 0 + t > 0), other=0.0)
            if not DELAY:
                v_a = tl.load(v_ptr + (t - 1) * N + offs, mask=inside & (offs * 0 + t > 0), other=0.0)
        r = tl.where(u_prev - thr > 0, 1.0, 0.0).to(acc_ty)
        m = v - thr
        h = tl.where(m > 0, 1.0, 0.0).to(acc_ty)
        if SURROGATE == 0:
            sg = zero + 1.0
        elif SURROGATE == 1:
            q = alpha * tl.abs(m) + 1.0
            sg = 1.0 / (q * q)
        elif SURROGATE == 2:
            z = pi2_alpha * m
            sg = half_alpha / (1.0 + z * z)
        else:
            e = tl.exp(-alpha * tl.abs(m))
            sg = alpha * e / ((1.0 + e) * (1.0 + e))
        dh = zero
        if DELAY:
            dv = gu
        else:
            d = h - r
            if RESET == 0:
                dv = gu
                dh = -thr * gu
                dthr += -d * gu
            elif RESET == 1:
                dv = gu * (1.0 - d)
                dh = -v * gu
            else:
                dv = gu
        dm = (ds * g + dh) * sg
        dg += ds * h
        dv += dm
        dthr += -dm
        if RESET == 0:
            gu = b * dv
            db += u_prev * dv
            dthr += -r * dv
        elif RESET == 1:
            gu = b * (1.0 - r) * dv
            db += (1.0 - r) * u_prev * dv
        else:
            gu = b * dv
            db += u_prev * dv
        tl.store(dx_ptr + t * N + offs, dv.to(dx_ptr.dtype.element_ty), mask=inside)
        u_cur = u_prev
    if PARAM_GRAD:
        tl.store(part_ptr + offs, db.to(part_ptr.dtype.element_ty), mask=inside)
        tl.store(part_ptr + N + offs, dthr.to(part_ptr.dtype.element_ty), mask=inside)
        tl.store(part_ptr + 2 * N + offs, dg.to(part_ptr.dtype.element_ty), mask=inside)


def sj_lif_fwd_kernel(x_ptr, spk_ptr, h_ptr, c_ptr, T, N,
                      DECAY_INPUT: tl.constexpr, SOFT: tl.constexpr, SAVE: tl.constexpr, F64: tl.constexpr,
                      ROUND: tl.constexpr, BLOCK: tl.constexpr, PREFETCH: tl.constexpr):
    """spikingjelly ``LIFNode`` over time (``reference.neurons.sj_lif``): charge, fire (``H >= v_th``), reset.
    ``c``: 1 / tau, v_threshold, v_reset (0 for a soft reset), the rest potential."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < N
    ahead = inside & (offs * 0 + PREFETCH > 1)  # the second prefetched step is loaded
    if F64:
        acc_ty = tl.float64
    else:
        acc_ty = tl.float32
    inv_tau = tl.load(c_ptr).to(acc_ty)
    v_th = tl.load(c_ptr + 1).to(acc_ty)
    v_reset = tl.load(c_ptr + 2).to(acc_ty)
    rest = tl.load(c_ptr + 3).to(acc_ty)
    v = tl.full((BLOCK,), 0.0, dtype=acc_ty) + v_reset
    x_a = tl.load(x_ptr + offs, mask=inside, other=0.0)
    x_b = tl.load(x_ptr + N + offs, mask=ahead & (offs * 0 + 1 < T), other=0.0)
    for t in range(T):
        x = x_a.to(acc_ty)
        if PREFETCH > 1:
            x_a = x_b
            x_b = tl.load(x_ptr + (t + 2) * N + offs, mask=inside & (offs * 0 + t + 2 < T), other=0.0)
        else:
            x_a = tl.load(x_ptr + (t + 1) * N + offs, mask=inside & (offs * 0 + t + 1 < T), other=0.0)
        if DECAY_INPUT:
            h = v + (x - (v - rest)) * inv_tau
        else:
            h = v - (v - rest) * inv_tau + x
        if ROUND:
            bits = h.to(tl.uint32, bitcast=True)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
            h = bits.to(tl.float32, bitcast=True)
        s = tl.where(h - v_th >= 0, 1.0, 0.0).to(acc_ty)
        tl.store(spk_ptr + t * N + offs, s.to(spk_ptr.dtype.element_ty), mask=inside)
        if SAVE:
            tl.store(h_ptr + t * N + offs, h.to(h_ptr.dtype.element_ty), mask=inside)
        if SOFT:
            v = h - s * v_th
        else:
            v = s * v_reset + (1.0 - s) * h
        if ROUND:  # round to bfloat16, nearest-even, by bits (the interpreter has no bfloat16)
            bits = v.to(tl.uint32, bitcast=True)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
            v = bits.to(tl.float32, bitcast=True)


def sj_lif_bwd_kernel(gspk_ptr, h_ptr, dx_ptr, c_ptr, T, N,
                      DECAY_INPUT: tl.constexpr, SOFT: tl.constexpr, DETACH: tl.constexpr,
                      SURROGATE: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, PREFETCH: tl.constexpr):
    """Reverse sweep of :func:`sj_lif_fwd_kernel`: ``dx`` from ``dL/dspk`` and the saved charges ``H``.
    ``c``: 1 / tau, v_threshold, v_reset, alpha, alpha / 2, pi / 2 * alpha."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < N
    ahead = inside & (offs * 0 + PREFETCH > 1)  # the second prefetched step is loaded
    if F64:
        acc_ty = tl.float64
    else:
        acc_ty = tl.float32
    inv_tau = tl.load(c_ptr).to(acc_ty)
    v_th = tl.load(c_ptr + 1).to(acc_ty)
    v_reset = tl.load(c_ptr + 2).to(acc_ty)
    alpha = tl.load(c_ptr + 3).to(acc_ty)
    half_alpha = tl.load(c_ptr + 4).to(acc_ty)
    pi2_alpha = tl.load(c_ptr + 5).to(acc_ty)
    zero = tl.full((BLOCK,), 0.0, dtype=acc_ty)
    gv = zero
    last = T - 1
    h_a = tl.load(h_ptr + last * N + offs, mask=inside, other=0.0)
    ds_a = tl.load(gspk_ptr + last * N + offs, mask=inside, other=0.0)
    h_b = tl.load(h_ptr + (last - 1) * N + offs, mask=ahead & (offs * 0 + last > 0), other=0.0)
    ds_b = tl.load(gspk_ptr + (last - 1) * N + offs, mask=ahead & (offs * 0 + last > 0),
                   other=0.0)
    for i in range(T):
        t = last - i
        h = h_a.to(acc_ty)
        ds = ds_a.to(acc_ty)
        if PREFETCH > 1:
            h_a = h_b
            ds_a = ds_b
            h_b = tl.load(h_ptr + (t - 2) * N + offs, mask=inside & (offs * 0 + t > 1), other=0.0)
            ds_b = tl.load(gspk_ptr + (t - 2) * N + offs, mask=inside & (offs * 0 + t > 1), other=0.0)
        else:
            h_a = tl.load(h_ptr + (t - 1) * N + offs, mask=inside & (offs * 0 + t > 0), other=0.0)
            ds_a = tl.load(gspk_ptr + (t - 1) * N + offs, mask=inside & (offs * 0 + t > 0), other=0.0)
        m = h - v_th
        s = tl.where(m >= 0, 1.0, 0.0).to(acc_ty)
        if SURROGATE == 0:
            sg = zero + 1.0
        elif SURROGATE == 1:
            q = alpha * tl.abs(m) + 1.0
            sg = 1.0 / (q * q)
        elif SURROGATE == 2:
            z = pi2_alpha * m
            sg = half_alpha / (1.0 + z * z)
        else:
            e = tl.exp(-alpha * tl.abs(m))
            sg = alpha * e / ((1.0 + e) * (1.0 + e))
        if SOFT:
            dh = gv
            ds_reset = -v_th * gv
        else:
            dh = gv * (1.0 - s)
            ds_reset = gv * (v_reset - h)
        if DETACH:
            ds_reset = zero
        dh += (ds + ds_reset) * sg
        if DECAY_INPUT:
            dx = dh * inv_tau
        else:
            dx = dh
        gv = dh * (1.0 - inv_tau)
        tl.store(dx_ptr + t * N + offs, dx.to(dx_ptr.dtype.element_ty), mask=inside)
