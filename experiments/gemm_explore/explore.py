"""Issue 19's GEMM at 4096^3: can one launch that signs ``x`` on chip beat the two-launch chain (``sign_rows`` +
cuBLASLt's fp8 GEMM) enough to reach 1.6x cuBLAS fp16? Measured side by side in one process on the GPU:

- cuBLAS fp16 ``addmm`` (the baseline) and cuBLASLt's fp8 GEMM alone on signs already in e4m3;
- the layer's chain (``sign_rows`` + ``fp8_matmul``, weight stored as e4m3 signs);
- ``fused``: float16 ``x`` tiles loaded, signed and converted to e4m3 in registers, ``tl.dot`` with the stored e4m3
  weight (QGMMA), scale and bias in the epilogue: no sign pass, one launch; tile configs;
- ``fused_tma``: the same reading both operands through tensor descriptors (TMA), persistent over the tiles;
- ``presigned``: the fused kernels' GEMM on ``x`` already in e4m3 (what the on-chip sign costs them).

Each in CUDA-graph replay (GPU time) and eagerly (with the host's launch time), exactness against float64.

    OUT=dir python -m experiments.gemm_explore.explore      # writes dir/gemm-explore.json
    GEMM_EXPLORE_MODE=tma ...                           # the TMA kernel only: presigned x, two ways of signing
    GEMM_EXPLORE_MODE=ws python -m experiments.gemm_explore.explore   # no GPU needed: compile the TMA kernel for sm_90
                                                        # with Triton's warp specialization, say where signing goes
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
from qsnn_kernels.bench_gpu import _time  # noqa: E402

OUT = os.environ.get("OUT", "/tmp")
BUDGET_S = float(os.environ.get("GEMM_EXPLORE_S", "240"))
MODE = os.environ.get("GEMM_EXPLORE_MODE", "all")  # "tma": the TMA kernel's configs and sign variants; "ws"
res: dict = {"env": {}, "rows": []}


@triton.jit
def fused_sign_gemm_kernel(x_ptr, w_ptr, out_ptr, scale_ptr, bias_ptr, M, N, K, stride_xm, stride_wn, stride_om,
                           SIGN_X: tl.constexpr, ZERO: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """``out = scale * sign(x) @ w.T + bias``: ``x [M, K]`` float16 signed in registers (``SIGN_X``; else already
    e4m3), ``w [N, K]`` e4m3 signs, fp32 sums (exact: integers below 2^24), float16 out."""
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * grid_n)
    first_m = group * GROUP_M
    size_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * grid_n)) % size_m
    pid_n = (pid % (GROUP_M * grid_n)) // size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + ks[None, :],
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        if SIGN_X:
            a = tl.where(a > 0, 1.0, tl.where(a < 0, -1.0, ZERO))
            a = tl.where(ks[None, :] < K, a, 0.0).to(tl.float8e4nv)
        b = tl.load(w_ptr + offs_n[:, None] * stride_wn + ks[None, :],
                    mask=(offs_n[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc = tl.dot(a, tl.trans(b), acc)
    y = acc * tl.load(scale_ptr)
    y = y + tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :], y.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def fused_sign_gemm_tma_kernel(x_ptr, w_ptr, out_ptr, scale_ptr, bias_ptr, M, N, K, SIGN_X: tl.constexpr,
                               ZERO: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                               GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, WS: tl.constexpr = False,
                               FLATTEN: tl.constexpr = True):
    """:func:`fused_sign_gemm_kernel` through tensor descriptors (TMA loads, K-major both), persistent: each
    program walks the output tiles ``pid, pid + NUM_SMS, ...`` in grouped order. ``SIGN_X`` 0: ``x`` already e4m3;
    1: signed by comparisons; 2: by bit operations on the float16 pattern."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    o_desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    tiles = grid_m * grid_n
    scale = tl.load(scale_ptr)
    for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=WS):
        group = tile // (GROUP_M * grid_n)
        first_m = group * GROUP_M
        size_m = tl.minimum(grid_m - first_m, GROUP_M)
        pid_m = first_m + (tile % (GROUP_M * grid_n)) % size_m
        pid_n = (tile % (GROUP_M * grid_n)) // size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            a = x_desc.load([pid_m * BLOCK_M, k0])
            if SIGN_X == 1:
                a = tl.where(a > 0, 1.0, tl.where(a < 0, -1.0, ZERO)).to(tl.float8e4nv)
            if SIGN_X == 2:  # the e4m3 byte from the float16 bits: 0x38 (+1) or 0xB8 (-1); +-0 -> ZERO's byte
                bits = a.to(tl.int16, bitcast=True)
                neg = (bits < 0) & ((bits & 0x7FFF) != 0)
                if ZERO < 0:
                    neg = neg | ((bits & 0x7FFF) == 0)
                byte = tl.where(neg, -72, 56)
                a = byte.to(tl.int8).to(tl.float8e4nv, bitcast=True)
            b = w_desc.load([pid_n * BLOCK_N, k0])
            acc = tl.dot(a, b.T, acc)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        y = acc * scale + tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
        o_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], y.to(tl.float16))


def _alloc(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def fused(x, w8, scale, bias, cfg, sign=True):
    m, k = x.shape
    n = w8.shape[0]
    bm, bn, bk, warps, stages = cfg
    out = torch.empty((m, n), dtype=torch.float16, device=x.device)
    fused_sign_gemm_kernel[(triton.cdiv(m, bm) * triton.cdiv(n, bn),)](
        x, w8, out, scale, bias, m, n, k, x.stride(0), w8.stride(0), out.stride(0), SIGN_X=sign, ZERO=1.0,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
    return out


def fused_tma(x, w8, scale, bias, cfg, sms, sign=1):
    m, k = x.shape
    n = w8.shape[0]
    bm, bn, bk, warps, stages = cfg
    out = torch.empty((m, n), dtype=torch.float16, device=x.device)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    fused_sign_gemm_tma_kernel[(min(sms, tiles),)](x, w8, out, scale, bias, m, n, k, SIGN_X=sign, ZERO=1.0,
                                                   BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=sms,
                                                   num_warps=warps, num_stages=stages)
    return out


TMA_CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 256, 128, 8, 3), (128, 128, 128, 8, 4),
               (256, 128, 64, 8, 3), (128, 128, 64, 8, 5)]
CONFIGS = [(128, 128, 128, 8, 3), (128, 128, 128, 8, 4), (128, 256, 128, 8, 3), (256, 128, 128, 8, 3),
           (128, 256, 64, 8, 4), (128, 128, 64, 4, 4), (128, 128, 64, 8, 5)]


def t(fn, graph=True):
    try:
        return round(_time(fn, inner=5, graph=graph), 5)
    except Exception as e:  # noqa: BLE001
        return repr(e)[:300]


def rel_err(got, ref):
    """The largest difference from the float64 reference, relative to its largest value."""
    return ((got.double() - ref).abs().max() / ref.abs().max()).item()


def save():
    with open(os.path.join(OUT, "gemm-explore.json"), "w") as handle:
        json.dump(res, handle, indent=1)


def main():
    started = time.time()
    triton.set_allocator(_alloc)
    res["env"] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for size in (4096, 8192):
        m = n = k = size
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        w = torch.randn(n, k, dtype=torch.float16, device="cuda")
        bias = torch.randn(n, dtype=torch.float16, device="cuda")
        scale = w.abs().mean()
        xs, wsc = torch.where(x < 0, -1.0, 1.0).half(), torch.where(w < 0, -1.0, 1.0).half() * scale
        w8 = B.sign_rows(w, 1.0)
        a8 = B.sign_rows(x, 1.0)
        ref = (torch.where(x < 0, -1.0, 1.0).double() @ torch.where(w < 0, -1.0, 1.0).double().t()
               * scale.double() + bias.double())
        row = {"shape": [m, n, k]}
        res["rows"].append(row)
        row["cublas_fp16_graph"] = t(lambda: torch.addmm(bias, xs, wsc.t()))
        row["cublas_fp16_eager"] = t(lambda: torch.addmm(bias, xs, wsc.t()), graph=False)
        opts = dict(scale=scale, bias=bias, out_dtype=torch.float16)
        row["cublaslt_fp8_alone_graph"] = t(lambda: B.fp8_matmul(a8, w8, fast_accum=True, **opts))
        row["chain_graph"] = t(lambda: B.fp8_matmul(B.sign_rows(x, 1.0), w8, **opts))
        row["chain_eager"] = t(lambda: B.fp8_matmul(B.sign_rows(x, 1.0), w8, **opts), graph=False)
        row["sign_rows_graph"] = t(lambda: B.sign_rows(x, 1.0))
        print(size, {kk: v for kk, v in row.items()}, flush=True)
        save()
        if MODE == "tma":
            for cfg in TMA_CONFIGS if size == 4096 else TMA_CONFIGS[:2]:
                key = "x".join(map(str, cfg[:3])) + f"_{cfg[3]}w{cfg[4]}s"
                for sign, name in ((0, "tma_presigned"), (1, "tma_compare"), (2, "tma_bits")):
                    if time.time() - started > BUDGET_S:
                        row["stopped"] = "budget"
                        break
                    src = a8 if sign == 0 else x
                    try:
                        got = fused_tma(src, w8, scale, bias, cfg, sms, sign)
                        row[f"{name}_{key}_err"] = rel_err(got, ref)
                        row[f"{name}_{key}_graph"] = t(lambda cfg=cfg, src=src, sign=sign: fused_tma(
                            src, w8, scale, bias, cfg, sms, sign))
                        if sign:
                            row[f"{name}_{key}_eager"] = t(lambda cfg=cfg, sign=sign: fused_tma(
                                x, w8, scale, bias, cfg, sms, sign), graph=False)
                    except Exception as e:  # noqa: BLE001
                        row[f"{name}_{key}_error"] = repr(e)[:300]
                print(size, key, {kk: v for kk, v in row.items() if key in kk}, flush=True)
                save()
        for cfg in (CONFIGS if size == 4096 else CONFIGS[:3]) if MODE != "tma" else ():
            if time.time() - started > BUDGET_S:
                row["stopped"] = "budget"
                break
            key = "x".join(map(str, cfg[:3])) + f"_{cfg[3]}w{cfg[4]}s"
            try:
                got = fused(x, w8, scale, bias, cfg)
                row[f"fused_{key}_err"] = rel_err(got, ref)
            except Exception as e:  # noqa: BLE001
                row[f"fused_{key}_error"] = repr(e)[:300]
                continue
            row[f"fused_{key}_graph"] = t(lambda cfg=cfg: fused(x, w8, scale, bias, cfg))
            row[f"fused_{key}_eager"] = t(lambda cfg=cfg: fused(x, w8, scale, bias, cfg), graph=False)
            row[f"presigned_{key}_graph"] = t(lambda cfg=cfg: fused(a8, w8, scale, bias, cfg, sign=False))
            try:
                got = fused_tma(x, w8, scale, bias, cfg, sms)
                row[f"tma_{key}_err"] = rel_err(got, ref)
                row[f"tma_{key}_graph"] = t(lambda cfg=cfg: fused_tma(x, w8, scale, bias, cfg, sms))
            except Exception as e:  # noqa: BLE001
                row[f"tma_{key}_error"] = repr(e)[:300]
            print(size, key, {kk: v for kk, v in row.items() if key in kk}, flush=True)
            save()
        base = row["cublas_fp16_graph"]
        times = {kk: v for kk, v in row.items() if kk.endswith("_graph") and isinstance(v, float)}
        row["ratios_graph"] = {kk: round(base / v, 3) for kk, v in times.items()}
        row["ratios_eager"] = {kk: round(row["cublas_fp16_eager"] / v, 3) for kk, v in row.items()
                               if kk.endswith("_eager") and isinstance(v, float)}
        print(size, "ratios", row["ratios_graph"], row["ratios_eager"], flush=True)
        save()
        del x, w, xs, wsc, w8, a8, ref
    res["seconds"] = round(time.time() - started, 1)
    save()


def warp_specialization_on_sm90():
    """Compile :func:`fused_sign_gemm_tma_kernel` for sm_90 (on any machine: Triton's front end and ptxas) with
    ``warp_specialize=True`` and print, per variant, whether Triton split it into partitions and which partition
    signs ``x`` (the one with the comparisons) and which runs the MMA."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = fused_sign_gemm_tma_kernel
    for sign, flatten, warps in ((1, True, 8), (1, False, 8), (0, False, 4), (1, False, 4)):
        consts = dict(SIGN_X=sign, ZERO=1.0, BLOCK_M=128, BLOCK_N=256, BLOCK_K=128, GROUP_M=8, NUM_SMS=132, WS=True,
                      FLATTEN=flatten)
        sig = {"x_ptr": "*fp16" if sign else "*fp8e4nv", "w_ptr": "*fp8e4nv", "out_ptr": "*fp16",
               "scale_ptr": "*fp32", "bias_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
               **{name: "constexpr" for name in consts}}
        src = ASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()})
        compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 3})
        ttgir = compiled.asm["ttgir"]
        parts = ttgir.split("\n    partition")
        where = {"sign": [i for i, part in enumerate(parts) if "arith.cmpf" in part],
                 "mma": [i for i, part in enumerate(parts) if "ttng.warp_group_dot " in part],
                 "tma_loads": [i for i, part in enumerate(parts) if "async_tma_copy_global_to_local" in part]}
        print(f"SIGN_X={sign} flatten={flatten} num_warps={warps}: specialized={'ttg.warp_specialize(' in ttgir}, "
              f"{len(parts)} region(s) (0 = default), {where}, shared memory {compiled.metadata.shared} bytes",
              flush=True)


if __name__ == "__main__":
    warp_specialization_on_sm90() if MODE == "ws" else main()
