"""Issue 19's GEMM at 4096^3, the sign pass overlapped with the GEMM instead of fused into its main loop.

Fused signing (``explore.py``) repeats the sign of each row block once per column tile (16 times at 4096^3) and sits
on the MMA's critical path; the chain (``sign_rows`` then cuBLASLt) signs once but serially (0.018 ms of 0.113).
Two ways to sign once *and* overlap, measured side by side with cuBLAS fp16 and the chain:

- ``side``: one persistent TMA fp8 GEMM (row-major tile order) that signs ``x`` itself. A prologue signs the row
  blocks the first wave of tiles needs; every K step of every tile then signs ``SUB`` more elements of later row
  blocks (loaded one step ahead, stored as e4m3 bytes) while the tensor cores run the step's MMA. Each signed piece
  bumps its row block's counter (every thread fences its stores, one lane per warp adds with release semantics); a
  tile's TMA loads wait (acquire polls, then a generic-to-async proxy fence) until its row block's counter is full.
  The last program to finish zeroes the counters for the next call. ``SYNC=0`` drops the counters (timing only:
  its result is wrong).
- ``streams``: ``sign_rows`` of row chunk ``i + 1`` on a second stream while cuBLASLt multiplies chunk ``i``.

    OUT=dir python -m experiments.gemm_explore.side_sign     # writes dir/side-sign.json (GEMM_SIDE_S caps it;
                                                         # GEMM_SIDE_STREAMS=0 skips the two-stream chain)
"""
import functools
import json
import os
import sys
import time

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.getcwd())
from qsnn_kernels import binary as B  # noqa: E402
from experiments.gemm_explore.explore import _alloc, rel_err, t  # noqa: E402

OUT = os.environ.get("OUT", "/tmp")
BUDGET_S = float(os.environ.get("GEMM_SIDE_S", "240"))
STREAMS = os.environ.get("GEMM_SIDE_STREAMS", "1") != "0"  # 0: skip the two-stream chain
ONLY = [v for v in os.environ.get("GEMM_SIDE_ONLY", "").split(",") if v]  # these variants only (names below)
E4M3_PLUS, E4M3_MINUS = 56, -72  # 0x38, 0xB8 as int8: +1 and -1 (sign(0) = +1, the layer's zero_value)
res: dict = {"env": {}, "rows": []}


E4M3_PLUS_C, E4M3_MINUS_C = tl.constexpr(E4M3_PLUS), tl.constexpr(E4M3_MINUS)


_SIGNAL_ASM = tl.constexpr("""{
    .reg .pred p;
    .reg .b32 lane;
    setp.eq.s32 p, $2, 0;
    @p bra SIGNAL_DONE;
    fence.acq_rel.gpu;
    bar.warp.sync -1;
    mov.u32 lane, %laneid;
    setp.ne.u32 p, lane, 0;
    @p bra SIGNAL_DONE;
    red.release.gpu.global.add.s32 [$1], 1;
    SIGNAL_DONE:
    mov.b32 $0, 0;
    }""")
_WAIT_PTX = """{
    .reg .pred p;
    .reg .b32 spins;
    mov.b32 $0, 0;
    setp.eq.s32 p, $3, 0;
    @p bra WAIT_DONE;
    mov.b32 spins, 0;
    WAIT_SPIN:
    ld.acquire.gpu.global.b32 $0, [$1];
    setp.ge.s32 p, $0, $2;
    @p bra WAIT_FENCE;%s
    add.s32 spins, spins, 1;
    setp.lt.s32 p, spins, %d;
    @p bra WAIT_SPIN;
    WAIT_FENCE:
    fence.proxy.async.global;
    WAIT_DONE:
    add.s32 $0, $0, 0;
    }"""
_WAIT_ASM = tl.constexpr(_WAIT_PTX % ("", 1 << 20))  # at most 2^20 polls (~0.5 s), then on: wrong, never a hang
_WAIT_SLEEP_ASM = tl.constexpr(_WAIT_PTX % ("\n    nanosleep.u32 200;", 1 << 18))  # 2^18 polls of >= 0.2 us


@triton.jit
def _signal(counter_ptr, on):
    """Every thread: if ``on``, order its earlier stores GPU-wide (``fence.acq_rel.gpu``), then one lane of each
    warp adds 1 to ``*counter_ptr`` with release semantics after the warp's barrier: the counter counts warps."""
    return tl.inline_asm_elementwise(_SIGNAL_ASM, "=r,l,r", [counter_ptr, on], dtype=tl.int32, is_pure=False,
                                     pack=1)


@triton.jit
def _wait(counter_ptr, target, on, SLEEP: tl.constexpr):
    """Every thread: if ``on``, poll ``*counter_ptr`` (acquire) until it reaches ``target``, then fence the generic
    proxy's writes it saw before the async proxy's (TMA) reads that follow. ``SLEEP``: about 0.2 us between polls
    (fewer loads of one line while another kernel signs)."""
    if SLEEP:
        return tl.inline_asm_elementwise(_WAIT_SLEEP_ASM, "=r,l,r,r", [counter_ptr, target, on], dtype=tl.int32,
                                         is_pure=False, pack=1)
    return tl.inline_asm_elementwise(_WAIT_ASM, "=r,l,r,r", [counter_ptr, target, on], dtype=tl.int32,
                                     is_pure=False, pack=1)


@triton.jit
def _tile_coords(tile, grid_m, grid_n, GROUPED: tl.constexpr):
    if GROUPED:  # groups of 8 row blocks, column-major inside a group (as explore.py's kernels)
        group = tile // (8 * grid_n)
        first_m = group * 8
        size_m = tl.minimum(grid_m - first_m, 8)
        return first_m + (tile % (8 * grid_n)) % size_m, (tile % (8 * grid_n)) // size_m
    return tile // grid_n, tile % grid_n


@triton.jit
def side_sign_gemm_kernel(x_ptr, xb_ptr, xs_ptr, w_ptr, out_ptr, scale_ptr, bias_ptr, flags_ptr, done_ptr,
                          M, N, K, FIRST_BLOCKS, TARGET, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr, SUB: tl.constexpr, SIDE: tl.constexpr, SYNC: tl.constexpr,
                          GROUPED: tl.constexpr, AHEAD: tl.constexpr, NUM_WARPS: tl.constexpr,
                          KQ: tl.constexpr = 1):
    """``out = scale * sign(x) @ w.T + bias``; ``x [M, K]`` float16 contiguous, signed into ``xs`` (e4m3, the same
    bytes as ``xb``) by this launch when ``SIDE`` (else ``xs`` holds the signs, or with ``SYNC`` another kernel
    writes them meanwhile: ``coresident.py``); ``M % BLOCK_M == 0``, ``BLOCK_M * K % SUB == 0``,
    ``K % BLOCK_K == 0``. Row block ``r``'s counter reaches ``TARGET`` (pieces * warps) once it is signed; a tile's
    wait for the row block of its program's next tile sits ``AHEAD`` K steps before that tile's first step (more
    than the pipeline's depth, so no TMA load of it is in flight earlier). ``KQ > 1`` (only without ``SIDE``): a
    counter for each of a row block's ``KQ`` parts of ``K / KQ`` columns (``r * KQ + q``), each waited for
    ``AHEAD`` K steps before the first step that reads it."""
    pid = tl.program_id(0)
    progs = tl.num_programs(0)
    xs_desc = tl.make_tensor_descriptor(xs_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    o_desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    tiles = grid_m * grid_n
    ksteps = K // BLOCK_K
    scale = tl.load(scale_ptr)
    per_block = BLOCK_M * K // SUB  # pieces of SUB elements in one row block
    total = grid_m * per_block
    first = FIRST_BLOCKS * per_block
    offs = tl.arange(0, SUB)
    if SIDE:
        for j in range(pid, first, progs):
            v = tl.load(x_ptr + j * SUB + offs)
            tl.store(xb_ptr + j * SUB + offs, tl.where(v < 0, E4M3_MINUS_C, E4M3_PLUS_C).to(tl.int8))
            if SYNC:
                _signal(flags_ptr + j // per_block, 1)
    if SYNC:
        pm0, _ = _tile_coords(pid, grid_m, grid_n, GROUPED)
        for q in range(0, (AHEAD - 1) // (ksteps // KQ) + 1):  # the parts the first AHEAD steps read
            _wait(flags_ptr + pm0 * KQ + q, TARGET, 1, SIDE == 0)  # sleep while another kernel signs
    step = 0
    nxt = tl.zeros((SUB,), dtype=tl.float16)
    if SIDE:
        j0 = first + pid
        nxt = tl.load(x_ptr + j0 * SUB + offs, mask=j0 * SUB + offs < total * SUB, other=0.0)
    for tile in tl.range(pid, tiles, progs, flatten=True):
        pid_m, pid_n = _tile_coords(tile, grid_m, grid_n, GROUPED)
        next_m, _ = _tile_coords(tile + progs, grid_m, grid_n, GROUPED)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(0, ksteps):
            a = xs_desc.load([pid_m * BLOCK_M, kk * BLOCK_K])
            b = w_desc.load([pid_n * BLOCK_N, kk * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
            if SIDE:
                j = first + pid + step * progs
                tl.store(xb_ptr + j * SUB + offs, tl.where(nxt < 0, E4M3_MINUS_C, E4M3_PLUS_C).to(tl.int8),
                         mask=j * SUB + offs < total * SUB)
                if SYNC:
                    _signal(flags_ptr + tl.minimum(j // per_block, grid_m - 1), (j < total).to(tl.int32))
                step += 1
                jn = j + progs
                nxt = tl.load(x_ptr + jn * SUB + offs, mask=jn * SUB + offs < total * SUB, other=0.0)
            if SYNC:
                k_at = kk + AHEAD  # the step AHEAD on: of this tile or, past its last, of the next one
                later = k_at >= ksteps
                k_at = tl.where(later, k_at - ksteps, k_at)
                m_at = tl.minimum(tl.where(later, next_m, pid_m), grid_m - 1)
                wait_now = (k_at % (ksteps // KQ) == 0) & ((tile + progs < tiles) | (later == 0))
                _wait(flags_ptr + m_at * KQ + k_at // (ksteps // KQ), TARGET, wait_now.to(tl.int32), SIDE == 0)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        y = acc * scale + tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
        o_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], y.to(tl.float16))
    if SYNC:  # the last program out zeroes the counters for the next launch (every row block was waited for)
        tl.debug_barrier()
        old = tl.atomic_add(done_ptr, 1, sem="acq_rel", scope="gpu")
        if old == progs - 1:
            for r0 in range(0, grid_m * KQ, 256):
                rows = r0 + tl.arange(0, 256)
                tl.store(flags_ptr + rows, tl.zeros((256,), dtype=tl.int32), mask=rows < grid_m * KQ)
            tl.store(done_ptr, 0)


_COUNTERS: dict = {}


def counters(device, n, name):
    """``n`` int32 counters and one more (the programs-done count), zeroed once and kept per ``(device, n, name)``:
    the kernels leave them zeroed for the next launch."""
    key = (device, n, name)
    if key not in _COUNTERS:
        _COUNTERS[key] = torch.zeros(n + 1, dtype=torch.int32, device=device)
    return _COUNTERS[key]


def tile_coords(tile, grid_m, grid_n, grouped):
    """:func:`_tile_coords` on the host."""
    if grouped:
        first_m = tile // (8 * grid_n) * 8
        size_m = min(grid_m - first_m, 8)
        return first_m + (tile % (8 * grid_n)) % size_m, (tile % (8 * grid_n)) // size_m
    return tile // grid_n, tile % grid_n


@functools.lru_cache(maxsize=None)
def schedule(m, n, k, cfg, progs, grouped, ahead):
    """The prologue's row blocks, and whether every wait is met by signing done before it (no deadlock); a Python
    loop over the tiles, so once per shape, not on every launch."""
    bm, bn, bk, sub = cfg[:4]
    grid_m, grid_n = m // bm, -(-n // bn)
    tiles, ksteps = grid_m * grid_n, k // bk
    first_blocks = max(tile_coords(t, grid_m, grid_n, grouped)[0] for t in range(min(progs, tiles))) + 1
    per_block = bm * k // sub
    first = first_blocks * per_block
    for p in range(progs):
        for i, tile in enumerate(range(p + progs, tiles, progs), start=1):
            r = tile_coords(tile, grid_m, grid_n, grouped)[0]
            if r < first_blocks:
                continue
            done_step = ((r + 1) * per_block - 1 - first) // progs  # every program signs through this step
            if done_step >= i * ksteps - ahead:
                return first_blocks, False
    return first_blocks, True


def side_sign(x, w8, scale, bias, cfg, sms, *, side=1, sync=1, grouped=0, ahead=4, xs=None):
    m, k = x.shape
    n = w8.shape[0]
    bm, bn, bk, sub, warps, stages = cfg
    assert m % bm == 0 and (bm * k) % sub == 0 and k % bk == 0 and x.is_contiguous()
    grid_m, grid_n = m // bm, triton.cdiv(n, bn)
    progs = min(sms, grid_m * grid_n)
    first_blocks, ok = schedule(m, n, k, cfg, progs, grouped, ahead)
    assert ok or not side, "the side signing cannot keep ahead of the tiles with these shapes: raise SUB"
    flags = counters(x.device, grid_m, "side")
    if xs is None:
        xs = torch.empty((m, k), dtype=torch.float8_e4m3fn, device=x.device)
    out = torch.empty((m, n), dtype=torch.float16, device=x.device)
    side_sign_gemm_kernel[(progs,)](x, xs.view(torch.int8), xs, w8, out, scale, bias, flags, flags[grid_m:],
                                    m, n, k, first_blocks, (bm * k // sub) * warps, BLOCK_M=bm, BLOCK_N=bn,
                                    BLOCK_K=bk, SUB=sub, SIDE=side, SYNC=sync, GROUPED=grouped, AHEAD=ahead,
                                    NUM_WARPS=warps, num_warps=warps, num_stages=stages)
    return out


def streams(x, w8, scale, bias, chunks, side_stream):
    """``sign_rows`` of chunk ``i + 1`` on ``side_stream`` while cuBLASLt multiplies chunk ``i``."""
    m, k = x.shape
    out = torch.empty((m, w8.shape[0]), dtype=torch.float16, device=x.device)
    cur = torch.cuda.current_stream()
    side_stream.wait_stream(cur)
    rows = m // chunks
    one = torch.ones((), dtype=torch.float32, device=x.device)
    fast = B.FP8_FAST_ACCUM and k <= B.FP8_FAST_MAX_K
    signed = []
    for i in range(chunks):
        with torch.cuda.stream(side_stream):
            a8 = B.sign_rows(x[i * rows:(i + 1) * rows], 1.0)
            done = torch.cuda.Event()
            done.record(side_stream)
        signed.append((a8, done))
    for i, (a8, done) in enumerate(signed):
        cur.wait_event(done)
        a8.record_stream(cur)
        torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=scale.reshape(()).float(), bias=bias,
                         out_dtype=torch.float16, use_fast_accum=fast, out=out[i * rows:(i + 1) * rows])
    cur.wait_stream(side_stream)
    return out


def problem(size):
    """The ``size``^3 problem both scripts measure: two float16 inputs ``x``, ``x2`` and a weight ``w``, the bias, the
    weight's scale, the sign values of ``x`` and the scaled weight signs for cuBLAS fp16, the e4m3 signs of ``w``
    and ``x``, and the float64 products of ``x`` and ``x2`` (sign(0) = +1)."""
    m = n = k = size
    gen = torch.Generator(device="cuda").manual_seed(size)
    x = torch.randn(m, k, dtype=torch.float16, device="cuda", generator=gen)
    x2 = torch.randn(m, k, dtype=torch.float16, device="cuda", generator=gen)
    w = torch.randn(n, k, dtype=torch.float16, device="cuda", generator=gen)
    bias = torch.randn(n, dtype=torch.float16, device="cuda", generator=gen)
    scale = w.abs().mean()
    xs, wsc = torch.where(x < 0, -1.0, 1.0).half(), torch.where(w < 0, -1.0, 1.0).half() * scale
    w8 = B.sign_rows(w, 1.0)
    a8 = B.sign_rows(x, 1.0)
    wd = torch.where(w < 0, -1.0, 1.0).double().t()
    refs = [torch.where(v < 0, -1.0, 1.0).double() @ wd * scale.double() + bias.double() for v in (x, x2)]
    return x, x2, w, bias, scale, xs, wsc, w8, a8, refs


def ratios(row):
    """Each timing's speed-up over cuBLAS fp16 timed the same way (``_graph`` / ``_eager`` keys), into ``row``."""
    out = []
    for mode in ("graph", "eager"):
        base = row.get(f"cublas_fp16_{mode}")
        if isinstance(base, float):
            row[f"ratios_{mode}"] = {kk: round(base / v, 3) for kk, v in row.items()
                                     if kk.endswith(f"_{mode}") and isinstance(v, float)}
            out.append(row[f"ratios_{mode}"])
    return out


def save():
    with open(os.path.join(OUT, "side-sign.json"), "w") as handle:
        json.dump(res, handle, indent=1)


SIDE_VARIANTS = [  # (name, cfg (BM, BN, BK, SUB, warps, stages), side, sync, grouped)
    ("presigned_row", (128, 256, 128, 2048, 8, 3), 0, 0, 0),
    ("side_row_sub2048", (128, 256, 128, 2048, 8, 3), 1, 1, 0),
    ("presigned_grouped", (128, 256, 128, 2048, 8, 3), 0, 0, 1),
    ("side_grouped_sub2048", (128, 256, 128, 2048, 8, 3), 1, 1, 1),
    ("side_row_nosync", (128, 256, 128, 2048, 8, 3), 1, 0, 0),
    ("side_row_sub4096", (128, 256, 128, 4096, 8, 3), 1, 1, 0),
    ("side_grouped_sub4096", (128, 256, 128, 4096, 8, 3), 1, 1, 1),
]


def main():
    started = time.time()
    triton.set_allocator(_alloc)
    res["env"] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    side_stream = torch.cuda.Stream()
    for size in (4096, 8192):
        m = n = k = size
        x, x2, w, bias, scale, xs, wsc, w8, a8, refs = problem(size)
        row: dict = {"shape": [m, n, k]}
        res["rows"].append(row)
        row["cublas_fp16_graph"] = t(lambda: torch.addmm(bias, xs, wsc.t()))
        row["cublas_fp16_eager"] = t(lambda: torch.addmm(bias, xs, wsc.t()), graph=False)
        opts = dict(scale=scale, bias=bias, out_dtype=torch.float16)
        row["cublaslt_fp8_alone_graph"] = t(lambda: B.fp8_matmul(a8, w8, **opts))
        row["chain_graph"] = t(lambda: B.fp8_matmul(B.sign_rows(x, 1.0), w8, **opts))
        row["chain_eager"] = t(lambda: B.fp8_matmul(B.sign_rows(x, 1.0), w8, **opts), graph=False)
        row["sign_rows_graph"] = t(lambda: B.sign_rows(x, 1.0))
        grouped_cfg = (128, 256, 128, 2048, 8, 3)

        def chain_ours():  # sign_rows, then our grouped persistent GEMM instead of cuBLASLt
            return side_sign(x, w8, scale, bias, grouped_cfg, sms, side=0, sync=0, grouped=1, xs=B.sign_rows(x, 1.0))

        row["chain_ours_err"] = rel_err(chain_ours(), refs[0])
        row["chain_ours_graph"] = t(chain_ours)
        row["chain_ours_eager"] = t(chain_ours, graph=False)
        print(size, row, flush=True)
        save()
        for chunks in ((2, 4, 8) if size == 4096 else (4,)) if STREAMS else ():
            try:
                row[f"streams{chunks}_err"] = rel_err(streams(x, w8, scale, bias, chunks, side_stream), refs[0])
                row[f"streams{chunks}_graph"] = t(lambda c=chunks: streams(x, w8, scale, bias, c, side_stream))
                row[f"streams{chunks}_eager"] = t(lambda c=chunks: streams(x, w8, scale, bias, c, side_stream),
                                                  graph=False)
            except Exception as e:  # noqa: BLE001
                row[f"streams{chunks}_error"] = repr(e)[:300]
            print(size, chunks, {kk: v for kk, v in row.items() if kk.startswith(f"streams{chunks}")}, flush=True)
            save()
        for name, cfg, side, sync, grouped in SIDE_VARIANTS if size == 4096 else SIDE_VARIANTS[:4]:
            if ONLY and name not in ONLY:
                continue
            if time.time() - started > BUDGET_S:
                row["stopped"] = "budget"
                break
            try:
                kw = dict(side=side, sync=sync, grouped=grouped)
                errs = []
                for v, ref in zip((x, x2, x), refs + refs[:1]):  # zeroed signs each time: nothing stale to read
                    buf = (torch.zeros((m, k), dtype=torch.float8_e4m3fn, device="cuda") if side
                           else B.sign_rows(v, 1.0))
                    errs.append(rel_err(side_sign(v, w8, scale, bias, cfg, sms, xs=buf, **kw), ref))
                row[f"{name}_err"] = max(errs)
                xs_fixed = None if side else a8  # presigned: the kernel reads a8 and ignores x
                row[f"{name}_graph"] = t(lambda cfg=cfg, kw=kw, xb=xs_fixed: side_sign(
                    x, w8, scale, bias, cfg, sms, xs=xb, **kw))
                row[f"{name}_eager"] = t(lambda cfg=cfg, kw=kw, xb=xs_fixed: side_sign(
                    x, w8, scale, bias, cfg, sms, xs=xb, **kw), graph=False)
            except Exception as e:  # noqa: BLE001
                row[f"{name}_error"] = repr(e)[-1500:]
            print(size, name, {kk: v for kk, v in row.items() if kk.startswith(name)}, flush=True)
            save()
        print(size, "ratios", *ratios(row), flush=True)
        save()
        del x, x2, w, xs, wsc, w8, a8, refs
    res["seconds"] = round(time.time() - started, 1)
    save()


if __name__ == "__main__":
    main()
