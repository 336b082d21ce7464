"""Issue 19's GEMM at 4096^3: the sign pass as a second kernel that runs *beside* the GEMM on the same SMs.

``side_sign.py`` signed ``x`` inside the GEMM's own warps (every stall of theirs delays the next MMA) or on a second
stream ahead of cuBLASLt chunks (which barely overlapped). Here our persistent TMA fp8 GEMM (``side_sign_gemm_kernel``
with ``SIDE=0, SYNC=1``) leaves registers free on each SM, and ``sign_pieces_kernel``, launched first on a side
stream, signs ``x`` in the order the grouped tiles need it with warps of its own, which the SM's warp schedulers
interleave with the GEMM's, as a hand-written producer warp group would. Each signed piece bumps the counter of its
part (a row block's ``K / KQ`` columns; each thread fences its stores, one lane per warp adds with release
semantics); the GEMM's TMA loads of a part wait until its counter is full. The two kernels share an SM only under
one L1 / shared-memory split: ``carve`` asks the driver to give the signer the GEMM's (the largest shared carveout);
without it they ran one after the other. The signer never waits for the GEMM, so the GEMM waits only for work that
runs or can start; a poll limit turns anything else into a wrong result, never a hang, and each variant's first
calls are timed and checked before it is measured. docs/kernels.md, "A signing kernel beside the GEMM".

    OUT=dir python -m experiments.gemm_explore.coresident     # writes dir/coresident.json
"""
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
from experiments.gemm_explore.side_sign import (E4M3_MINUS_C, E4M3_PLUS_C, _signal, counters, problem,  # noqa: E402
                                           ratios, side_sign, side_sign_gemm_kernel)

OUT = os.environ.get("OUT", "/tmp")
BUDGET_S = float(os.environ.get("GEMM_CORES_S", "300"))
SIZES = [int(v) for v in os.environ.get("GEMM_CORES_SIZES", "4096,8192").split(",")]
AHEAD = int(os.environ.get("GEMM_CORES_AHEAD", "4"))  # K steps between a wait and the first step that reads its part
ONLY = [v for v in os.environ.get("GEMM_CORES_ONLY", "").split(",") if v]  # these variants only
GEMM_CFG = (128, 256, 128, 8, 3)  # BM, BN, BK, warps, stages: the grouped persistent GEMM of side_sign.py
res: dict = {"env": {}, "rows": []}


@triton.jit
def sign_pieces_kernel(x_ptr, xb_ptr, flags_ptr, grid_m, K, COLS, ROWS: tl.constexpr, SEG: tl.constexpr,
                       BLOCK_M: tl.constexpr, KQ: tl.constexpr, EVICT: tl.constexpr, CARVE: tl.constexpr = 0):
    """``xb = sign(x)`` as e4m3 bytes (``x [grid_m * BLOCK_M, K]`` float16, contiguous; ``K = KQ * COLS``), part by
    part: part ``(r, q)`` is row block ``r``'s columns ``q * COLS`` to ``(q + 1) * COLS``, its counter
    ``r * KQ + q``, signed in pieces of ``ROWS x SEG`` (``COLS % SEG == 0``), after each of which every warp adds 1
    to the counter. Parts in the grouped tiles' order (groups of 8 row blocks; in a group, part 0 of each row
    block, then part 1, ...); program ``p`` signs pieces ``p, p + programs, ...``. ``CARVE`` changes nothing in
    the code: it makes a separate compiled kernel, whose shared-memory carveout :func:`_prefer_shared` sets."""
    pid = tl.program_id(0)
    progs = tl.num_programs(0)
    segs = COLS // SEG  # a row's, in a part
    pieces = BLOCK_M // ROWS * segs  # a part's
    idx = tl.arange(0, ROWS * SEG)
    offs = tl.max_contiguous(tl.multiple_of(idx // SEG * K + idx % SEG, SEG), SEG)  # ROWS runs of SEG
    for j in range(pid, grid_m * KQ * pieces, progs):
        part = j // pieces
        group = part // (8 * KQ)
        size = tl.minimum(grid_m - group * 8, 8)
        q = part % (8 * KQ) // size
        r = group * 8 + part % (8 * KQ) % size
        p = j % pieces
        base = (r * BLOCK_M + p // segs * ROWS) * K + q * COLS + p % segs * SEG
        if EVICT:  # x is read once: keep L2 for the GEMM's operands
            v = tl.load(x_ptr + base + offs, eviction_policy="evict_first")
        else:
            v = tl.load(x_ptr + base + offs)
        tl.store(xb_ptr + base + offs, tl.where(v < 0, E4M3_MINUS_C, E4M3_PLUS_C).to(tl.int8))
        _signal(flags_ptr + r * KQ + q, 1)


_CARVED: set = set()


def _prefer_shared(kernel):
    """Ask the driver to run ``kernel`` with the SM's largest shared-memory carveout (100 %): CTAs of two kernels
    share an SM only under one L1 / shared-memory split, and the GEMM's 213 KB need the largest, where a kernel
    with no shared memory gets a small one by default. Applies from the next launch."""
    import ctypes

    if kernel.function not in _CARVED:
        attribute_preferred_carveout = 9  # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        rc = ctypes.CDLL("libcuda.so.1").cuFuncSetAttribute(ctypes.c_void_p(kernel.function),
                                                            attribute_preferred_carveout, 100)
        assert rc == 0, f"cuFuncSetAttribute: CUresult {rc}"
        _CARVED.add(kernel.function)


def coresident(x, w8, scale, bias, sms, side_stream, *, progs, sub, warps, kq=1, evict=1, carve=0, wait=1,
               xs=None, launched=None, signer_only=False, signed=None):
    """``scale * sign(x) @ w8.T + bias`` (float16): ``sign_pieces_kernel`` (``progs`` programs of ``warps`` warps,
    pieces of ``sub`` elements, ``kq`` parts a row block) on ``side_stream`` beside the GEMM on the current stream.
    ``wait=0``: the GEMM reads ``xs`` (already signed) without waiting and the signer writes a scratch buffer: what
    running beside each other costs, without the dependence. ``launched``: a dict that receives both compiled
    kernels (registers, shared memory). ``signer_only``: the signer alone (into ``signed``), on the current
    stream."""
    m, k = x.shape
    n = w8.shape[0]
    bm, bn, bk, gemm_warps, stages = GEMM_CFG
    cols = k // kq
    seg = min(cols, 1024, sub)  # a piece: rows x seg
    rows = sub // seg
    assert m % bm == 0 and k % (kq * bk) == 0 and cols % seg == 0 and bm % rows == 0 and x.is_contiguous()
    grid_m, grid_n = m // bm, triton.cdiv(n, bn)
    flags = counters(x.device, grid_m * kq, "wait" if wait else "scratch")
    if xs is None:
        xs = torch.empty((m, k), dtype=torch.float8_e4m3fn, device=x.device)
    if signed is None:
        signed = xs if wait else torch.empty_like(xs)

    def launch_signer():
        return sign_pieces_kernel[(progs,)](x, signed.view(torch.int8), flags, grid_m, k, cols, ROWS=rows, SEG=seg,
                                            BLOCK_M=bm, KQ=kq, EVICT=evict, CARVE=carve, num_warps=warps)

    if signer_only:
        return launch_signer()
    out = torch.empty((m, n), dtype=torch.float16, device=x.device)
    cur = torch.cuda.current_stream()
    side_stream.wait_stream(cur)
    with torch.cuda.stream(side_stream):
        signer = launch_signer()
    if carve:
        _prefer_shared(signer)
    gemm = side_sign_gemm_kernel[(min(sms, grid_m * grid_n),)](
        x, xs.view(torch.int8), xs, w8, out, scale, bias, flags, flags[grid_m * kq:], m, n, k, 0,
        bm // rows * (cols // seg) * warps, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, SUB=2048, SIDE=0, SYNC=wait,
        GROUPED=1, AHEAD=AHEAD, NUM_WARPS=gemm_warps, KQ=kq, num_warps=gemm_warps, num_stages=stages)
    cur.wait_stream(side_stream)
    if launched is not None:
        launched.update(signer=signer, gemm=gemm)
    return out


def _resources(kernel, warps):
    return {"regs_per_thread": kernel.n_regs, "threads": 32 * warps, "shared_bytes": kernel.metadata.shared}


def save():
    with open(os.path.join(OUT, "coresident.json"), "w") as handle:
        json.dump(res, handle, indent=1)


VARIANTS = [  # (name, signer programs per SM, elements a piece, signer warps, parts a row block, evict_first,
    # side stream priority, largest shared-memory carveout for the signer). For sm_90 (Triton 3.9 and ptxas here,
    # arguments divisible by 16) the waiting GEMM takes 198 registers a thread (180 on the device), 51200 of an SM's
    # 65536; a signer program of 4 warps 31 /
    # 39 / 60 / 104 with pieces of 2048 / 4096 / 8192 / 16384 (4096 / 5120 / 8192 / 13312 registers): `_fits`
    # checks it on the device
    ("p1_s16k_w4_kq4", 1, 16384, 4, 4, 1, -1, 0),
    ("p1_s8k_w4_kq4", 1, 8192, 4, 4, 1, -1, 0),
    ("p1_s8k_w4_kq1_carve", 1, 8192, 4, 1, 1, -1, 1),
    ("p1_s8k_w4_kq4_carve", 1, 8192, 4, 4, 1, -1, 1),
    ("p2_s4k_w4_kq4_carve", 2, 4096, 4, 4, 1, -1, 1),
    ("p1_s8k_w8_kq4_carve", 1, 8192, 8, 4, 1, -1, 1),
    ("p3_s2k_w4_kq4_carve", 3, 2048, 4, 4, 1, -1, 1),
    ("p1_s16k_w4_kq4_carve", 1, 16384, 4, 4, 1, -1, 1),
    ("p2_s4k_w4_kq8_carve", 2, 4096, 4, 8, 1, -1, 1),
    ("p1_s16k_w4_kq4_lowprio_carve", 1, 16384, 4, 4, 1, 0, 1),
    ("p1_s8k_w4_kq4_noevict_carve", 1, 8192, 4, 4, 0, -1, 1),
]


def _fits(signer, gemm, per_sm, warps):
    """Whether ``per_sm`` signer programs fit in an SM's 65536 registers beside one GEMM program (registers are
    given a warp at a time, in units of 256)."""
    def per_warp(regs):
        return -(-regs * 32 // 256) * 256
    return per_warp(gemm.n_regs) * GEMM_CFG[3] + per_sm * per_warp(signer.n_regs) * warps <= 65536


def main():
    started = time.time()
    triton.set_allocator(_alloc)
    res["env"] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    streams = {prio: torch.cuda.Stream(priority=prio) for prio in (-1, 0)}
    for size in SIZES:
        m = n = k = size
        x, x2, w, bias, scale, xs, wsc, w8, a8, refs = problem(size)
        row: dict = {"shape": [m, n, k]}
        res["rows"].append(row)
        opts = dict(scale=scale, bias=bias, out_dtype=torch.float16)
        ours = (128, 256, 128, 2048, 8, 3)
        row["cublas_fp16_graph"] = t(lambda: torch.addmm(bias, xs, wsc.t()))
        row["chain_graph"] = t(lambda: B.fp8_matmul(B.sign_rows(x, 1.0), w8, **opts))
        row["ours_presigned_graph"] = t(lambda: side_sign(x, w8, scale, bias, ours, sms, side=0, sync=0, grouped=1,
                                                          xs=a8))
        row["chain_ours_graph"] = t(lambda: side_sign(x, w8, scale, bias, ours, sms, side=0, sync=0, grouped=1,
                                                      xs=B.sign_rows(x, 1.0)))
        row["sign_rows_graph"] = t(lambda: B.sign_rows(x, 1.0))
        print(size, row, flush=True)
        save()
        for name, per_sm, sub, warps, kq, evict, prio, carve in VARIANTS:
            if time.time() - started > BUDGET_S:
                row["stopped"] = "budget"
                break
            if ONLY and name not in ONLY:
                continue
            kw = dict(progs=per_sm * sms, sub=sub, warps=warps, kq=kq, evict=evict, carve=carve)
            side_stream = streams[prio]
            try:
                launched: dict = {}
                coresident(x, w8, scale, bias, sms, side_stream, wait=0, xs=a8, launched=launched, **kw)
                row[f"{name}_resources"] = {"signer": _resources(launched["signer"], warps),
                                            "gemm_nowait": _resources(launched["gemm"], GEMM_CFG[3])}
                if not _fits(launched["signer"], launched["gemm"], 1, warps):
                    row[f"{name}_skipped"] = "no signer program fits beside the GEMM"
                    print(size, name, row[f"{name}_skipped"], row[f"{name}_resources"], flush=True)
                    continue
                flags = counters(x.device, m // GEMM_CFG[0] * kq, "wait")
                flags.fill_(1 << 30)  # compiles the waiting GEMM with every wait already met
                coresident(x, w8, scale, bias, sms, side_stream, launched=launched, **kw)
                torch.cuda.synchronize()
                flags.zero_()
                row[f"{name}_resources"]["gemm"] = _resources(launched["gemm"], GEMM_CFG[3])
                row[f"{name}_fits_per_sm"] = _fits(launched["signer"], launched["gemm"], per_sm, warps)
                errs, calls_ms = [], []
                for v, ref in zip((x, x2, x), refs + refs[:1]):  # zeroed signs each time: nothing stale to read
                    buf = torch.zeros((m, k), dtype=torch.float8_e4m3fn, device="cuda")
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    got = coresident(v, w8, scale, bias, sms, side_stream, xs=buf, **kw)
                    torch.cuda.synchronize()
                    calls_ms.append(round((time.perf_counter() - t0) * 1e3, 3))
                    errs.append(rel_err(got, ref))
                    if calls_ms[-1] > 200:  # the polls gave up (each ~0.5 s): do not wait for more
                        break
                row[f"{name}_err"] = max(errs)
                row[f"{name}_calls_ms"] = calls_ms
                if max(errs) > 1e-2 or max(calls_ms) > 200:
                    row[f"{name}_skipped"] = "wrong, or the polls gave up: the signer did not run beside the GEMM"
                    flags.zero_()
                    print(size, name, {kk: v for kk, v in row.items() if kk.startswith(name)}, flush=True)
                    continue
                row[f"{name}_graph"] = t(lambda kw=kw, s=side_stream: coresident(x, w8, scale, bias, sms, s, **kw))
                row[f"{name}_eager"] = t(lambda kw=kw, s=side_stream: coresident(x, w8, scale, bias, sms, s, **kw),
                                         graph=False)
                row[f"{name}_nowait_graph"] = t(lambda kw=kw, s=side_stream: coresident(
                    x, w8, scale, bias, sms, s, wait=0, xs=a8, **kw))
                scratch = torch.empty_like(a8)
                row[f"{name}_signer_alone_graph"] = t(lambda kw=kw, sc=scratch: coresident(
                    x, w8, scale, bias, sms, side_stream, wait=0, xs=a8, signer_only=True, signed=sc, **kw))
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
