"""GPU benchmark of the project's kernels against cuBLAS/cuDNN fp16, torch.compile of the spec and spikingjelly.

    python -m qsnn_kernels.bench_gpu --out bench.json [--explore] [--no-compile] [--sections a,b,...]

Measures on the machine, in one process, side by side: the ceilings (device-to-device copy bandwidth, counting
bytes read plus written; int8 ``torch._int_mm``; fp8 ``torch._scaled_mm``; cuBLAS fp16), the kernels against the
specs on drawn shapes (odd K, tails), then:

- binary GEMM 8192^3 and 4096^3 end to end (sign of x, the weight in its stored form, GEMM, tensor scale and bias
  epilogue, float16 out) against cuBLAS fp16 ``addmm`` of the sign values with the scale folded into the weight;
- binary conv2d of two ResNet-18 stages against cuDNN fp16 (NCHW and channels_last, the faster counts);
- binary GEMV, batch 1-16 against an 8192x8192 weight (CUDA-graph replays on both sides);
- fused LIF, 64 steps x 2^20 neurons, forward and forward+backward (``torch.autograd.grad`` with a given
  cotangent) against the memory floor, torch.compile of the spec and spikingjelly;
- the host path: eager calls on tiny tensors (their time is Python and launch time) and a profile of the LIF's;
  ``lifhost`` (not in the defaults): the LIF call's host time part by part.

``--explore`` adds the alternatives and tile/config sweeps behind the defaults. Prints a table, writes JSON after
every section. Times are medians of CUDA-event timings.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback

import torch

NO_COMPILE = False
EXPLORE = False
#: dtypes whose LIF rows get the torch.compile baseline (33-100 s of compilation each on an H200)
COMPILE_DTYPES = (torch.float32, torch.bfloat16)
RESULTS: dict = {"correctness": {}, "ceilings": {}, "matmul": [], "conv": [], "gemv": [], "lif": []}


def _time(fn, *, reps: int = 7, inner: int = 10, graph: bool = False) -> float:
    """Median milliseconds per call."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    call = fn
    if graph:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(inner):
                fn()
        call = g.replay
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        if graph:
            call()
        else:
            for _ in range(inner):
                call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / inner)
    return statistics.median(times)


def _try(row: dict, key: str, fn, **kw):
    try:
        row[key] = _time(fn, **kw)
    except Exception as e:  # noqa: BLE001 - a variant that fails is a result too
        row[key + "_error"] = repr(e)[:300]


def _save(path):
    if path:
        with open(path, "w") as f:
            json.dump(RESULTS, f, indent=1)


def _signs(shape, dtype=torch.float16):
    return torch.randn(shape, device="cuda").sign().to(dtype)


def ceilings():
    n = 1 << 29  # 2 GiB of float32
    a = torch.empty(n // 4, dtype=torch.float32, device="cuda").normal_()
    b = torch.empty_like(a)
    ms = _time(lambda: b.copy_(a), inner=5)
    bw = 2 * a.numel() * 4 / ms / 1e9  # TB/s
    del a, b
    m = 8192
    x8 = torch.randint(-1, 2, (m, m), dtype=torch.int8, device="cuda")
    w8 = torch.randint(-1, 2, (m, m), dtype=torch.int8, device="cuda")
    ms8 = _time(lambda: torch._int_mm(x8, w8.t()), inner=3)
    xh, wh = _signs((m, m)), _signs((m, m))
    msh = _time(lambda: xh @ wh.t(), inner=3)
    xf, wf = xh.to(torch.float8_e4m3fn), wh.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    msf = _time(lambda: torch._scaled_mm(xf, wf.t(), one, one, out_dtype=torch.float16), inner=3)
    exact = torch.equal(torch._scaled_mm(xf, wf.t(), one, one, out_dtype=torch.float32), (xh @ wh.t()).float())
    RESULTS["ceilings"] = {"copy_TBps": bw, "int8_mm_TOPS": 2 * m ** 3 / ms8 / 1e9, "int8_mm_ms": ms8,
                           "fp16_mm_TFLOPS": 2 * m ** 3 / msh / 1e9, "fp16_mm_ms": msh,
                           "fp8_mm_TFLOPS": 2 * m ** 3 / msf / 1e9, "fp8_mm_ms": msf,
                           "fp8_equals_fp16_product": exact}
    print(f"ceilings: copy {bw:.2f} TB/s, int8 _int_mm {2 * m ** 3 / ms8 / 1e9:.0f} TOPS, cuBLAS fp16 "
          f"{2 * m ** 3 / msh / 1e9:.0f} TFLOP/s, fp8 _scaled_mm {2 * m ** 3 / msf / 1e9:.0f} TFLOP/s "
          f"(exact: {exact})", flush=True)


def correctness():
    from qsnn_kernels import binary as B
    from qsnn_kernels import lif as L
    from qsnn_reference import binary as RB
    from qsnn_reference import neurons as N
    from qsnn_reference import packing as P

    gen = torch.Generator(device="cpu").manual_seed(0)
    bad = []
    shapes = [(1, 1, 1), (3, 5, 31), (7, 33, 33), (16, 100, 97), (65, 129, 257), (300, 77, 1000), (1024, 96, 4101),
              (80, 64, 70)]
    for m, n, k in shapes:
        x = torch.randn(m, k, generator=gen).cuda()
        w = torch.randn(n, k, generator=gen).cuda()
        ref = (x.double().sign() @ w.double().sign().t())
        a = B.sign_int8(x, 1.0)
        wp = B.pack_weight(w)
        paths = ["gemv", "onchip", "expand"] + (["fp8"] if n % 16 == 0 else [])
        for path in paths:
            y = B.packed_matmul(a, wp, k, path=path, out_dtype=torch.float64)
            if not torch.equal(y, ref):
                bad.append(f"matmul {path} {m}x{n}x{k}")
        if m <= 16:
            for cfg in (("plain", 8, 256, 4, True), ("plain", 8, 64, 4, False), ("hs", 16, 8, 4, False),
                        ("bmma", 1, 2, 2, False), ("bmma", 2, 1, 1, False), ("tc", 64, 8, 4, 3)):
                y = B.xnor_gemv(x, wp, k, out_dtype=torch.float64, config=cfg)
                if not torch.equal(y, ref):
                    bad.append(f"gemv {cfg} {m}x{n}x{k}")
        if not torch.equal(B.pack_signs(x, pad=1.0).cpu(), P.pack_signs(x.cpu(), word_bits=32, pad=1.0)):
            bad.append(f"pack {m}x{k}")
    for pv in (0.0, -1.0, 1.0):
        for dtype, cin, cout in ((torch.float64, 5, 6), (torch.float32, 16, 32)):  # the second takes fp8
            x = torch.randn(70, cin, 9, 9, generator=gen, dtype=torch.float64).to(dtype)
            w = torch.randn(cout, cin, 3, 3, generator=gen, dtype=torch.float64).to(dtype)
            for stride, pad, dil in ((1, 1, 1), (2, 2, 1), (1, 2, 2)):
                kw = dict(stride=stride, padding=pad, dilation=dil, pad_value=pv, weight_scaling="channel")
                y = B.binary_conv2d(x.cuda(), w.cuda(), **kw).cpu()
                if not torch.allclose(y.double(), RB.binary_conv2d(x.double(), w.double(), **kw), rtol=1e-6,
                                      atol=1e-6):
                    bad.append(f"conv {dtype} pv={pv} s={stride} p={pad} d={dil}")
    lif_err = {}
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        x = (torch.rand(16, 4, 300, generator=gen, dtype=torch.float64) * 3 - 1)
        xd = x.to(dtype)
        for name, ours, spec, kw in (
                ("leaky", L.leaky, N.leaky, dict(beta=0.85, threshold=1.0, surrogate_alpha=2.7)),
                ("sj_lif", L.sj_lif, N.sj_lif, dict(tau=2.7, v_threshold=1.1, v_reset=-0.3, surrogate="atan",
                                                    surrogate_alpha=2.3))):
            xk = xd.cuda().requires_grad_()
            y = ours(xk, **kw)
            g = torch.randn(y.shape, generator=gen).to(dtype)
            (gx,) = torch.autograd.grad(y, xk, g.cuda())
            xr = xd.double().requires_grad_()
            yr = spec(xr, **kw)
            (gr,) = torch.autograd.grad(yr, xr, g.double())
            flips = (y.detach().cpu().double() != yr.detach()).sum().item()
            err = ((gx.cpu().double() - gr).abs().max() / gr.abs().max()).item()
            lif_err[f"{name}/{dtype}"] = {"spike_flips": flips, "of": y.numel(), "max_rel_grad_err": err}
    RESULTS["correctness"] = {"binary_failures": bad, "lif": lif_err}
    print("correctness: binary", "OK" if not bad else bad, "| lif", lif_err, flush=True)


def matmul():
    from qsnn_kernels import binary as B

    for size in (8192, 4096):
        m = n = k = size
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        w = torch.randn(n, k, dtype=torch.float16, device="cuda")
        bias = torch.randn(n, dtype=torch.float16, device="cuda")
        scale = w.abs().mean()
        xs, wsc = x.sign(), (w.sign() * scale)
        row = {"shape": [m, n, k]}
        row["cublas_fp16_ms"] = _time(lambda: torch.addmm(bias, xs, wsc.t()), inner=3)
        row["cublas_fp16_plain_ms"] = _time(lambda: xs @ wsc.t(), inner=3)
        wp = B.pack_weight(w)
        w8 = B.unpack_bits(wp, k, k_pad=16, fp8=True)
        opts = dict(scale=scale, bias=bias, out_dtype=torch.float16)
        # end to end, the weight stored as packed bits (1 bit a weight) or as e4m3 signs (1 byte a weight)
        row["fp8_from_packed_ms"] = _time(lambda: B.fp8_matmul(B.sign_rows(x, 1.0), B.unpack_bits(
            wp, k, k_pad=16, fp8=True), **opts), inner=3)
        row["fp8_stored_ms"] = _time(lambda: B.fp8_matmul(B.sign_rows(x, 1.0), w8, **opts), inner=3)
        row["layer_op_ms"] = _time(lambda: B.binary_linear_op(x, w, bias, "ste", None, 1.0, "tensor"), inner=3)
        # the same chains replayed from CUDA graphs: the GPU's time without the CPU's launch overhead
        _try(row, "cublas_fp16_graph_ms", lambda: torch.addmm(bias, xs, wsc.t()), inner=3, graph=True)
        _try(row, "fp8_from_packed_graph_ms", lambda: B.fp8_matmul(B.sign_rows(x, 1.0), B.unpack_bits(
            wp, k, k_pad=16, fp8=True), **opts), inner=3, graph=True)
        _try(row, "fp8_stored_graph_ms", lambda: B.fp8_matmul(B.sign_rows(x, 1.0), w8, **opts), inner=3, graph=True)
        a8 = B.sign_rows(x, 1.0)
        row["sign_x_ms"] = _time(lambda: B.sign_rows(x, 1.0), inner=3)
        row["unpack_w_fp8_ms"] = _time(lambda: B.unpack_bits(wp, k, k_pad=16, fp8=True), inner=3)
        row["scaled_mm_epilogue_ms"] = _time(lambda: B.fp8_matmul(a8, w8, **opts), inner=3)
        _try(row, "scaled_mm_fast_accum_ms", lambda: B.fp8_matmul(a8, w8, fast_accum=True, **opts), inner=3)
        _try(row, "scaled_mm_channel_scale_ms", lambda: B.fp8_matmul(a8, w8, scale=w.abs().mean(1), bias=bias,
                                                                     out_dtype=torch.float16), inner=3)
        row["rowwise_supported_fp16"] = B._ROWWISE.get(torch.float16, True)
        if EXPLORE or size == 8192:
            ai = B.sign_int8(x, 1.0)
            bi = B.unpack_bits(wp, k)
            _try(row, "int8_triton_gemm_ms", lambda: B.gemm_a8(ai, bi, k, out_dtype=torch.float16,
                                                                config=(128, 256, 128, 8, 3)), inner=3)
            for name, cfg in (("128x256x128", (128, 256, 128, 8, 3)), ("128x128x128", (128, 128, 128, 8, 4)),
                              ("128x256x64", (128, 256, 64, 8, 4))):
                _try(row, f"fp8_triton_{name}_ms", lambda cfg=cfg: B.gemm_a8(a8, w8, k, out_dtype=torch.float16,
                                                                              config=cfg), inner=3)
        best = min(row["fp8_from_packed_ms"], row["fp8_stored_ms"])
        row["speedup_from_packed"] = row["cublas_fp16_ms"] / row["fp8_from_packed_ms"]
        row["speedup_stored_fp8"] = row["cublas_fp16_ms"] / row["fp8_stored_ms"]
        row["speedup_layer_op"] = row["cublas_fp16_ms"] / row["layer_op_ms"]
        row["speedup_gemm_only"] = row["cublas_fp16_ms"] / row["scaled_mm_epilogue_ms"]
        if "fp8_from_packed_graph_ms" in row and "cublas_fp16_graph_ms" in row:
            row["speedup_from_packed_graph"] = row["cublas_fp16_graph_ms"] / row["fp8_from_packed_graph_ms"]
            row["speedup_stored_fp8_graph"] = row["cublas_fp16_graph_ms"] / row["fp8_stored_graph_ms"]
        row["gemm_TFLOPS"] = 2 * m * n * k / row["scaled_mm_epilogue_ms"] / 1e9
        RESULTS["matmul"].append(row)
        print(f"matmul {size}^3: cuBLAS fp16 addmm {row['cublas_fp16_ms']:.3f} ms; ours from packed bits "
              f"{row['fp8_from_packed_ms']:.3f} (x{row['speedup_from_packed']:.2f}), fp8 stored "
              f"{row['fp8_stored_ms']:.3f} (x{row['speedup_stored_fp8']:.2f}), layer op {row['layer_op_ms']:.3f} "
              f"(x{row['speedup_layer_op']:.2f}); GEMM x{row['speedup_gemm_only']:.2f} "
              f"| {({kk: round(v, 3) for kk, v in row.items() if kk.endswith('_ms')})} best {best:.3f}", flush=True)
        del x, w, xs, wsc, w8, a8


def conv():
    from qsnn_kernels import binary as B

    for name, (batch, ch, side) in (("resnet18.layer2", (256, 128, 28)), ("resnet18.layer3", (256, 256, 14))):
        x = torch.randn(batch, ch, side, side, dtype=torch.float16, device="cuda")
        w = torch.randn(ch, ch, 3, 3, dtype=torch.float16, device="cuda")
        bias = torch.randn(ch, dtype=torch.float16, device="cuda")
        xs, wsc = x.sign(), w.sign() * w.abs().mean()
        row = {"layer": name, "x": list(x.shape), "w": list(w.shape)}
        row["cudnn_fp16_nchw_ms"] = _time(lambda: torch.nn.functional.conv2d(xs, wsc, bias, padding=1), inner=3)
        xcl, wcl = xs.to(memory_format=torch.channels_last), wsc.to(memory_format=torch.channels_last)
        row["cudnn_fp16_channels_last_ms"] = _time(lambda: torch.nn.functional.conv2d(xcl, wcl, bias, padding=1),
                                                   inner=3)
        opts = (1, 1, 1, 1, 0.0, "ste", None, 1.0, "tensor")
        row["ours_ms"] = _time(lambda: B.binary_conv2d_op(x, w, bias, *opts), inner=3)
        _try(row, "ours_graph_ms", lambda: B.binary_conv2d_op(x, w, bias, *opts), inner=3, graph=True)
        _try(row, "cudnn_fp16_channels_last_graph_ms",
             lambda: torch.nn.functional.conv2d(xcl, wcl, bias, padding=1), inner=3, graph=True)
        # like for like with cuDNN's channels_last: our op given x channels-last (it then writes its output so)
        x_cl = x.contiguous(memory_format=torch.channels_last)
        _try(row, "ours_cl_input_ms", lambda: B.binary_conv2d_op(x_cl, w, bias, *opts), inner=3)
        _try(row, "ours_cl_input_graph_ms", lambda: B.binary_conv2d_op(x_cl, w, bias, *opts), inner=3, graph=True)
        B.CONV_IMPLICIT = False  # the alternative: the patch matrix in memory (im2col), torch._scaled_mm
        try:
            _try(row, "im2col_scaled_mm_ms", lambda: B.binary_conv2d_op(x, w, bias, *opts), inner=3)
        finally:
            B.CONV_IMPLICIT = True
        xs64 = torch.where(x == 0, 1.0, x.sign()).double()  # sign(0) = +1 (zero_value); fp16 randn has zeros
        ws64 = torch.where(w == 0, 1.0, w.sign()).double()  # the spec signs a zero weight as zero_value (+1) too
        ref = torch.nn.functional.conv2d(xs64, ws64 * w.abs().mean().double(), bias.double(), padding=1)
        got = B.binary_conv2d_op(x, w, bias, *opts).double()
        row["max_rel_err"] = ((got - ref).abs().max() / ref.abs().max()).item()
        got = B.binary_conv2d_op(x_cl, w, bias, *opts)
        row["cl_output_channels_last"] = got.is_contiguous(memory_format=torch.channels_last)
        row["cl_input_max_rel_err"] = ((got.double() - ref).abs().max() / ref.abs().max()).item()
        cudnn = min(row["cudnn_fp16_nchw_ms"], row["cudnn_fp16_channels_last_ms"])
        row["speedup_vs_cudnn"] = cudnn / row["ours_ms"]
        if "ours_graph_ms" in row and "cudnn_fp16_channels_last_graph_ms" in row:
            row["speedup_vs_cudnn_graph"] = row["cudnn_fp16_channels_last_graph_ms"] / row["ours_graph_ms"]
        if "ours_cl_input_graph_ms" in row and "cudnn_fp16_channels_last_graph_ms" in row:
            row["speedup_cl_input_vs_cudnn_graph"] = (row["cudnn_fp16_channels_last_graph_ms"]
                                                      / row["ours_cl_input_graph_ms"])
        if "ours_cl_input_ms" in row:
            row["speedup_cl_input_vs_cudnn"] = cudnn / row["ours_cl_input_ms"]
        m = batch * side * side
        row["gemm_shape"] = [m, ch, ch * 9]
        # the implicit-GEMM configs the op timed and kept (qsnn_kernels.binary.CONV_CUDA), NCHW / channels-last input
        row["conv_configs"] = [list(v) for k, v in B._CONV_TUNED.items() if k[1] == tuple(x.shape)]
        RESULTS["conv"].append(row)
        print(f"conv {name} {list(x.shape)}: cuDNN fp16 {cudnn:.3f} ms (nchw {row['cudnn_fp16_nchw_ms']:.3f}, cl "
              f"{row['cudnn_fp16_channels_last_ms']:.3f}); ours {row['ours_ms']:.3f} ms x{row['speedup_vs_cudnn']:.2f}"
              f" (rel err {row['max_rel_err']:.1e}); graph x{row.get('speedup_vs_cudnn_graph', 0):.2f}, channels-last"
              f" input x{row.get('speedup_cl_input_vs_cudnn', 0):.2f} eager, "
              f"x{row.get('speedup_cl_input_vs_cudnn_graph', 0):.2f} graph", flush=True)
        try:
            _conv_parts(row, x, x_cl, w, bias)
        except Exception as e:  # noqa: BLE001 - keep the row
            row["parts_error"] = repr(e)[:300]
        print(f"conv {name} parts:", {k: round(v, 4) for k, v in row.items() if k.startswith("part_")}, flush=True)


def _conv_parts(row: dict, x, x_cl, w, bias):
    """The implicit-GEMM conv's launches one by one (graph replay): the input's sign pass from NCHW and from
    channels-last ``x``, the weight's scale and signs, and the GEMM kernel alone (channels-last output, the config
    the op chose)."""
    from qsnn_kernels import binary as B

    batch, ch, side = x.shape[0], x.shape[1], x.shape[2]
    hp = side + 2
    m = batch * side * side
    sb = B._sign_bytes(1.0, True)
    xs = torch.empty((batch, hp, hp, ch), dtype=torch.int8, device="cuda")
    ws = torch.empty((ch, 9 * ch), dtype=torch.int8, device="cuda")
    bw, bc = B.sign_nhwc_blocks(hp, ch, True)
    br, bl = B.SIGN_WEIGHT_BLOCKS[True]
    for key, xi in (("nchw", x), ("cl", x_cl)):
        _try(row, f"part_sign_{key}_graph_ms", lambda xi=xi: B.K_.sign_nhwc(
            xi.device, (batch * hp, -(-ch // bc), -(-hp // bw)), xi, xs, ch, side, side, hp, hp, 1, *xi.stride(),
            FILL=0, BLOCK_W=bw, BLOCK_C=bc, **sb), inner=5, graph=True)
    _try(row, "part_weight_graph_ms", lambda: (w.abs().mean(), B.K_.sign_conv_weight(
        w.device, (-(-ch // br), -(-(9 * ch) // bl)), w, ws, ch, ch, 9, BLOCK_R=br, BLOCK_L=bl, **sb)),
        inner=5, graph=True)
    scale = w.abs().mean()
    out = torch.empty_like(x_cl)
    bm, bn, warps, stages = (row.get("conv_configs") or [B.CONV_CUDA[0]])[-1]
    _try(row, "part_gemm_graph_ms", lambda: B.K_.conv_implicit(
        x.device, (-(-m // bm), -(-ch // bn)), xs.view(torch.float8_e4m3fn), ws.view(torch.float8_e4m3fn), out,
        scale, bias, m, ch, ch, side, side, hp, hp, 1, 1, SCALE_MODE=1, HAS_BIAS=True, FLOAT=True, KH=3, KW=3,
        CL_OUT=True, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=B._conv_block_k(ch), num_warps=warps, num_stages=stages),
        inner=5, graph=True)
    if "part_gemm_graph_ms" in row:
        row["part_gemm_TFLOPS"] = 2 * m * ch * 9 * ch / row["part_gemm_graph_ms"] / 1e9


GEMV_SWEEP = [("plain", 8, 256, 4, False), ("plain", 8, 64, 4, False), ("plain", 16, 64, 4, False),
              ("plain", 4, 256, 4, False), ("plain", 32, 256, 8, True), ("plain", 16, 256, 8, True),
              ("hs", 16, 8, 4, False), ("hs", 32, 8, 4, False), ("hs", 8, 8, 4, False),
              ("bmma", 1, 2, 2, False), ("bmma", 1, 2, 1, False), ("bmma", 2, 2, 2, False), ("bmma", 1, 4, 1, False),
              ("tc", 64, 8, 4, 3), ("tc", 64, 4, 4, 3)]


def gemv():
    from qsnn_kernels import binary as B

    n = k = 8192
    w = torch.randn(n, k, dtype=torch.float16, device="cuda")
    bias = torch.randn(n, dtype=torch.float16, device="cuda")
    wsc = w.sign() * w.abs().mean()
    wp = B.pack_weight(w)
    scale = w.abs().mean()
    bw = RESULTS["ceilings"]["copy_TBps"]
    floor_us = n * k / 8 / (bw * 1e12) * 1e6
    for m in (1, 2, 4, 8, 16):
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        xs = x.sign()
        row = {"m": m, "floor_us": floor_us}
        row["cublas_fp16_us"] = _time(lambda: torch.addmm(bias, xs, wsc.t()), graph=True, inner=20) * 1e3
        opts = dict(scale=scale, bias=bias, out_dtype=torch.float16)
        row["ours_us"] = _time(lambda: B.xnor_gemv(x, wp, k, **opts), graph=True, inner=20) * 1e3
        row["ours_config"] = list(B._gemv_config(m))
        a_packed = B.pack_rows(x, zero_bit=1)
        row["pack_x_us"] = _time(lambda: B.pack_rows(x, zero_bit=1), graph=True, inner=20) * 1e3
        row["gemv_prepacked_us"] = _time(lambda: B.xnor_gemv(a_packed, wp, k, **opts), graph=True, inner=20) * 1e3
        if EXPLORE or m in (1, 16):
            for cfg in GEMV_SWEEP:
                key = "cfg_" + "_".join(map(str, cfg))
                row[key + "_us"] = None
                try:
                    row[key + "_us"] = _time(lambda cfg=cfg: B.xnor_gemv(x, wp, k, config=cfg, **opts), graph=True,
                                             inner=20) * 1e3
                except Exception as e:  # noqa: BLE001
                    row[key + "_error"] = repr(e)[:200]
        row["speedup_vs_cublas"] = row["cublas_fp16_us"] / row["ours_us"]
        row["frac_floor"] = floor_us / row["ours_us"]
        RESULTS["gemv"].append(row)
        sweep = {kk[4:-3]: round(v, 2) for kk, v in row.items() if kk.startswith("cfg_") and v}
        print(f"gemv batch {m:2d} x 8192x8192: cuBLAS fp16 {row['cublas_fp16_us']:.1f} us; ours {row['ours_us']:.1f} "
              f"us x{row['speedup_vs_cublas']:.2f} ({row['frac_floor']:.0%} of the packed-weight floor "
              f"{floor_us:.2f} us; pack {row['pack_x_us']:.1f}, prepacked {row['gemv_prepacked_us']:.1f}) {sweep}",
              flush=True)


LIF_SWEEP = {4: [(512, 4, 1), (512, 4, 2), (1024, 4, 2), (1024, 8, 2), (256, 2, 2)],
             2: [(1024, 4, 1), (1024, 4, 2), (512, 2, 2), (2048, 8, 2), (512, 4, 2)]}


def _leaky_params() -> dict:
    """The leaky neuron's parameters in the LIF rows: tensors on the GPU, as a module holds them."""
    return dict(beta=torch.tensor(0.9, device="cuda"), threshold=torch.tensor(1.0, device="cuda"),
                graded_spikes_factor=torch.tensor(1.0, device="cuda"))


def _lif_times(L, ours, kw, x, xg, gy):
    def fwd():
        with torch.no_grad():
            return ours(x, **kw)

    def fwdbwd():  # autograd.grad with a given cotangent: no accumulation into x.grad inside the timing
        return torch.autograd.grad(ours(xg, **kw), xg, gy)

    return _time(fwd, inner=5), _time(fwdbwd, inner=5)


def _lif_graph_times(ours, kw, x, xg, gy):
    """The same calls replayed from a CUDA graph: the GPU's time without the CPU's launch overhead."""
    def fwd():
        with torch.no_grad():
            return ours(x, **kw)

    def fwdbwd():
        return torch.autograd.grad(ours(xg, **kw), xg, gy)

    return _time(fwd, inner=5, graph=True), _time(fwdbwd, inner=5, graph=True)


def lif(deadline: float):
    from qsnn_kernels import lif as L
    from qsnn_reference import neurons as N

    steps, n = 64, 1 << 20
    bw = RESULTS["ceilings"]["copy_TBps"] * 1e12
    try:
        from spikingjelly.activation_based import neuron as sj_neuron, surrogate as sj_surrogate
    except Exception as e:  # noqa: BLE001
        sj_neuron = None
        RESULTS["spikingjelly_import_error"] = repr(e)[:300]
    default = (dict(L.CUDA_BLOCK), L.PREFETCH)
    for dtype in (torch.float32, torch.bfloat16):
        es = torch.finfo(dtype).bits // 8
        x = (torch.rand(steps, n, device="cuda", dtype=torch.float32) * 1.5).to(dtype)
        gy = torch.randn(steps, n, device="cuda", dtype=dtype)
        xg = x.clone().requires_grad_()
        one_pass = steps * n * es / bw * 1e3
        params = _leaky_params()
        for name, ours, spec, kw in (("leaky", L.leaky, N.leaky, params),
                                     ("sj_lif", L.sj_lif, N.sj_lif, dict(tau=2.0, v_threshold=1.0, v_reset=0.0))):
            row = {"neuron": name, "dtype": str(dtype), "T": steps, "N": n, "one_pass_ms": one_pass,
                   "floor_fwd_ms": 2 * one_pass, "floor_fwdbwd_ms": 5 * one_pass, "design_fwdbwd_ms": 6 * one_pass,
                   "config": [list(L.CUDA_BLOCK[es]), L.PREFETCH]}
            row["ours_fwd_ms"], row["ours_fwdbwd_ms"] = _lif_times(L, ours, kw, x, xg, gy)
            try:
                row["ours_fwd_graph_ms"], row["ours_fwdbwd_graph_ms"] = _lif_graph_times(ours, kw, x, xg, gy)
                row["fwdbwd_graph_over_floor"] = row["ours_fwdbwd_graph_ms"] / row["floor_fwdbwd_ms"]
            except Exception as e:  # noqa: BLE001
                row["graph_error"] = repr(e)[:300]
            if EXPLORE:
                for size, warps, pre in LIF_SWEEP[es]:
                    L.CUDA_BLOCK[es], L.PREFETCH = (size, warps), pre
                    try:
                        f, fb = _lif_times(L, ours, kw, x, xg, gy)
                        row[f"cfg_{size}_{warps}_{pre}"] = [round(f, 4), round(fb, 4)]
                    except Exception as e:  # noqa: BLE001
                        row[f"cfg_{size}_{warps}_{pre}_error"] = repr(e)[:200]
                    finally:
                        L.CUDA_BLOCK.update(default[0])
                        L.PREFETCH = default[1]
                # the second run of the default config: the noise between two measurements of the same code
                row["ours_fwd_again_ms"], row["ours_fwdbwd_again_ms"] = _lif_times(L, ours, kw, x, xg, gy)
            row["fwd_over_floor"] = row["ours_fwd_ms"] / row["floor_fwd_ms"]
            row["fwdbwd_over_floor"] = row["ours_fwdbwd_ms"] / row["floor_fwdbwd_ms"]
            if time.time() < deadline and not NO_COMPILE and dtype in COMPILE_DTYPES:
                try:
                    t0 = time.time()
                    cfb = torch.compile(lambda t: spec(t, **kw))

                    def cfwdbwd():
                        return torch.autograd.grad(cfb(xg), xg, gy)

                    cfwdbwd()
                    row["compile_fwdbwd_ms"] = _time(cfwdbwd, inner=3)
                    row["compile_fwdbwd_compile_s"] = time.time() - t0
                except Exception as e:  # noqa: BLE001
                    row["compile_error"] = repr(e)[:300]
            if name == "sj_lif" and sj_neuron is not None:
                try:
                    node = sj_neuron.LIFNode(tau=2.0, v_threshold=1.0, v_reset=0.0, step_mode="m",
                                             surrogate_function=sj_surrogate.Sigmoid(alpha=4.0)).cuda()

                    def sj_fwd():
                        node.reset()
                        with torch.no_grad():
                            return node(x)

                    def sj_fwdbwd():
                        node.reset()
                        return torch.autograd.grad(node(xg), xg, gy)

                    row["spikingjelly_fwd_ms"] = _time(sj_fwd, inner=3)
                    row["spikingjelly_fwdbwd_ms"] = _time(sj_fwdbwd, inner=3)
                    node.reset()
                    with torch.no_grad():
                        row["spikingjelly_spike_mismatch"] = (node(x) != ours(x, **kw)).sum().item()
                except Exception as e:  # noqa: BLE001
                    row["spikingjelly_error"] = repr(e)[:300]
            RESULTS["lif"].append(row)
            print("lif", {kk: (round(v, 4) if isinstance(v, float) else v) for kk, v in row.items()}, flush=True)
        del x, gy, xg


def _popc_floor_kernel():
    """The XOR-popcount arithmetic of ``xnor_gemv_kernel``'s CUDA tiles with both operands in registers: per word
    pair the same xor, ``popc`` and add, over the same ``[BLOCK_M, BLOCK_N, BLOCK_W]`` tiles and K loop, but no
    load inside the loop (``w0`` enters the xor so nothing is hoisted). Its time is the integer work alone."""
    import triton
    import triton.language as tl

    @triton.jit
    def popc_floor_kernel(a_ptr, b_ptr, out_ptr, KW, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_W: tl.constexpr):
        pid = tl.program_id(0)
        offs_m = tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_w = tl.arange(0, BLOCK_W)
        a = tl.load(a_ptr + offs_m[:, None, None] * BLOCK_W + offs_w[None, None, :])
        b = tl.load(b_ptr + offs_n[None, :, None] * BLOCK_W + offs_w[None, None, :]) ^ pid
        acc3 = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_W), dtype=tl.int32)
        for w0 in range(0, KW, BLOCK_W):
            acc3 += tl.inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", [a ^ b ^ w0], dtype=tl.int32,
                                              is_pure=True, pack=1)
        acc = tl.sum(acc3, axis=2)
        tl.store(out_ptr + pid * BLOCK_M * BLOCK_N + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)

    return popc_floor_kernel


#: (BLOCK_N, BLOCK_W, num_warps) of the popcount-floor probe at batch 16 (the first is xnor_gemv's batch-16 tile)
POPC_FLOOR_TILES = [(16, 64, 4), (8, 64, 4), (32, 64, 8), (16, 32, 4), (16, 128, 8), (64, 16, 4)]


def bounds():
    """Measured bounds for the targets that are not met: the fastest part of each chain, timed alone beside the
    baseline (CUDA-graph replay on both sides, so host time counts on neither).

    - GEMM: cuBLASLt's fp8 GEMM alone on signs already in e4m3 (float16 out, tensor scale and bias in its epilogue,
      the faster of exact and fast accumulation) against cuBLAS fp16 ``addmm``, and ``cublas / (gemm + sign floor)``
      (``ratio_with_sign_floor``: an end-to-end chain also reads ``x`` to sign it, at least ``3 M K`` bytes at the
      copy bandwidth). Not a strict bound: back-to-back GEMMs run at the power-limited clock, and a chain whose
      memory-bound sign pass lets the clock recover has measured up to 5% above it.
    - conv: the conv's own GEMM (``M = batch H W``, ``N = C_out``, ``K = 9 C_in``) by cuBLASLt fp8 alone, patches
      already in memory, against cuDNN fp16 channels_last: the best GEMM this machine has for that shape.
    - GEMV batch 16: :func:`_popc_floor_kernel` (the popcount formulation's integer work) plus the measured packing
      of ``x``, against cuBLAS fp16.
    """
    from qsnn_kernels import binary as B

    bw = RESULTS["ceilings"]["copy_TBps"] * 1e12
    out: dict = {"gemm": [], "conv": [], "gemv": {}}
    for size in (4096, 8192):
        m = n = k = size
        xs = _signs((m, k))
        wsc = _signs((n, k)) * 0.37
        bias = torch.randn(n, dtype=torch.float16, device="cuda")
        a8, w8 = xs.to(torch.float8_e4m3fn), wsc.sign().to(torch.float8_e4m3fn)
        scale = torch.tensor(0.37, device="cuda")
        row = {"shape": [m, n, k], "cublas_fp16_graph_ms": _time(lambda: torch.addmm(bias, xs, wsc.t()), graph=True,
                                                                 inner=5)}
        for fast in (False, True):
            row[f"fp8_gemm_fast{int(fast)}_graph_ms"] = _time(lambda fast=fast: B.fp8_matmul(
                a8, w8, scale=scale, bias=bias, out_dtype=torch.float16, fast_accum=fast), graph=True, inner=5)
        gemm = min(row["fp8_gemm_fast0_graph_ms"], row["fp8_gemm_fast1_graph_ms"])
        row["sign_floor_ms"] = 3 * m * k / bw * 1e3
        row["gemm_alone_ratio"] = row["cublas_fp16_graph_ms"] / gemm
        row["ratio_with_sign_floor"] = row["cublas_fp16_graph_ms"] / (gemm + row["sign_floor_ms"])
        out["gemm"].append(row)
        print("bounds gemm", {kk: round(v, 4) if isinstance(v, float) else v for kk, v in row.items()}, flush=True)
        del xs, wsc, a8, w8
    for name, (batch, ch, side) in (("resnet18.layer2", (256, 128, 28)), ("resnet18.layer3", (256, 256, 14))):
        xs = _signs((batch, ch, side, side)).to(memory_format=torch.channels_last)
        wsc = (_signs((ch, ch, 3, 3)) * 0.37).to(memory_format=torch.channels_last)
        bias = torch.randn(ch, dtype=torch.float16, device="cuda")
        gm, gk = batch * side * side, 9 * ch
        a8 = _signs((gm, gk)).to(torch.float8_e4m3fn)
        w8 = _signs((ch, gk)).to(torch.float8_e4m3fn)
        scale = torch.tensor(0.37, device="cuda")
        row = {"layer": name, "gemm_shape": [gm, ch, gk],
               "cudnn_fp16_channels_last_graph_ms": _time(lambda: torch.nn.functional.conv2d(xs, wsc, bias, padding=1),
                                                          graph=True, inner=5)}
        for fast in (False, True):
            row[f"fp8_gemm_fast{int(fast)}_graph_ms"] = _time(lambda fast=fast: B.fp8_matmul(
                a8, w8, scale=scale, bias=bias, out_dtype=torch.float16, fast_accum=fast), graph=True, inner=5)
        gemm = min(row["fp8_gemm_fast0_graph_ms"], row["fp8_gemm_fast1_graph_ms"])
        row["gemm_alone_ratio"] = row["cudnn_fp16_channels_last_graph_ms"] / gemm
        out["conv"].append(row)
        print("bounds conv", {kk: round(v, 4) if isinstance(v, float) else v for kk, v in row.items()}, flush=True)
        del xs, wsc, a8, w8
    n, kw, rows = 8192, 8192 // 32, 16
    x = torch.randn(rows, n, dtype=torch.float16, device="cuda")
    w = torch.randn(n, n, dtype=torch.float16, device="cuda")
    wsc = w.sign() * w.abs().mean()
    xs = x.sign()
    probe = _popc_floor_kernel()
    g = out["gemv"]
    g["cublas_fp16_us"] = _time(lambda: torch.addmm(wsc[:, 0], xs, wsc.t()), graph=True, inner=20) * 1e3
    g["pack_x_us"] = _time(lambda: B.pack_rows(x, zero_bit=1), graph=True, inner=20) * 1e3
    for bn, bw_, warps in POPC_FLOOR_TILES:
        a = torch.randint(-2 ** 31, 2 ** 31 - 1, (rows, bw_), dtype=torch.int32, device="cuda")
        b = torch.randint(-2 ** 31, 2 ** 31 - 1, (bn, bw_), dtype=torch.int32, device="cuda")
        res = torch.empty((n // bn, rows, bn), dtype=torch.int32, device="cuda")
        key = f"popc_floor_{bn}_{bw_}_{warps}_us"
        try:
            g[key] = _time(lambda: probe[(n // bn,)](a, b, res, kw, BLOCK_M=rows, BLOCK_N=bn, BLOCK_W=bw_,
                                                     num_warps=warps), graph=True, inner=20) * 1e3
        except Exception as e:  # noqa: BLE001
            g[key + "_error"] = repr(e)[:300]
    floors = [v for kk, v in g.items() if kk.startswith("popc_floor_") and kk.endswith("_us")]
    if floors:
        g["popc_floor_us"] = min(floors)
        g["bound_ratio"] = g["cublas_fp16_us"] / (g["popc_floor_us"] + g["pack_x_us"])
    print("bounds gemv batch 16", {kk: round(v, 3) if isinstance(v, float) else v for kk, v in g.items()}, flush=True)
    RESULTS["bounds"] = out


def host():
    """The host path's time per eager call: calls on tensors so small that the GPU's work is negligible, so the
    eager time is the Python and launch time a large call also pays (where it exceeds the GPU's time, eager calls
    are host-bound). Also a cProfile of the LIF forward+backward, its costliest functions in the log."""
    import cProfile
    import io
    import pstats

    from qsnn_kernels import _runtime
    from qsnn_kernels import binary as B
    from qsnn_kernels import lif as L

    x = torch.rand(4, 1024, device="cuda")
    xg = x.clone().requires_grad_()
    gy = torch.randn_like(x)
    params = _leaky_params()
    row = {}
    xb, xbg, gyb = x.bfloat16(), xg.detach().bfloat16().requires_grad_(), gy.bfloat16()
    for tag, (xi, xgi, gyi) in (("", (x, xg, gy)), ("_bf16", (xb, xbg, gyb))):
        for name, fn, kw in (("leaky", L.leaky, params), ("sj_lif", L.sj_lif, {})):
            def fwd(fn=fn, kw=kw, xi=xi):
                with torch.no_grad():
                    return fn(xi, **kw)
            row[f"{name}{tag}_fwd_us"] = _time(fwd, inner=50) * 1e3
            row[f"{name}{tag}_fwdbwd_us"] = _time(
                lambda fn=fn, kw=kw, xgi=xgi, gyi=gyi: torch.autograd.grad(fn(xgi, **kw), xgi, gyi), inner=50) * 1e3
    xs = torch.randn(128, 256, dtype=torch.float16, device="cuda")
    ws = torch.randn(256, 256, dtype=torch.float16, device="cuda")
    row["binary_linear_op_fp8_us"] = _time(lambda: B.binary_linear_op(xs, ws, None, "ste", None, 1.0, "tensor"),
                                           inner=50) * 1e3
    row["sign_rows_us"] = _time(lambda: B.sign_rows(xs, 1.0), inner=50) * 1e3
    row["empty_like_us"] = _time(lambda: torch.empty_like(xs), inner=50) * 1e3
    row["autograd_grad_of_mul_us"] = _time(lambda: torch.autograd.grad(xg * 2.0, xg, gy), inner=50) * 1e3
    setting = _runtime.DIRECT_LAUNCH
    for direct in (False, True):  # Triton's own launch path against the direct launch, side by side
        _runtime.DIRECT_LAUNCH = direct
        tag = "direct" if direct else "triton_run"
        for name, fn, kw in (("leaky", L.leaky, params), ("sj_lif", L.sj_lif, {})):
            row[f"{name}_fwdbwd_{tag}_us"] = _time(lambda fn=fn, kw=kw: torch.autograd.grad(fn(xg, **kw), xg, gy),
                                                   inner=50) * 1e3
        row[f"sign_rows_{tag}_us"] = _time(lambda: B.sign_rows(xs, 1.0), inner=50) * 1e3
    _runtime.DIRECT_LAUNCH = setting
    RESULTS["host"] = row
    print("host", {k: round(v, 1) for k, v in row.items()}, flush=True)
    _host_large(row, params)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(200):
        torch.autograd.grad(L.leaky(xg, **params), xg, gy)
    profile.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(14)
    print("\n".join(text.getvalue().splitlines()[-20:]), flush=True)


def lifhost():
    """Where an eager LIF call's host time goes (``--sections lifhost``): each part alone on tensors too small for
    the GPU to matter (4 x 1024), microseconds per call; then a cProfile of the bfloat16 leaky forward+backward.
    Uses only the public functions and the kernels' launch objects, so it runs on older trees too."""
    import cProfile
    import gc
    import io
    import pstats

    from qsnn_kernels import _runtime
    from qsnn_kernels import lif as L

    row = {}

    def us(fn):
        return _time(fn, inner=50) * 1e3

    params = _leaky_params()
    for dtype in (torch.float32, torch.bfloat16):
        tag = "_bf16" if dtype == torch.bfloat16 else ""
        x = torch.rand(4, 1024, device="cuda").to(dtype)
        xg = x.clone().requires_grad_()
        gy = torch.randn_like(x)
        for name, fn, kw in (("leaky", L.leaky, params), ("sj_lif", L.sj_lif, {})):
            row[f"{name}{tag}_fwdbwd_us"] = us(lambda fn=fn, kw=kw: torch.autograd.grad(fn(xg, **kw), xg, gy))
            row[f"{name}{tag}_fwd_graph_us"] = us(lambda fn=fn, kw=kw: fn(xg, **kw))  # forward that records a node
            out = fn(xg, **kw)
            row[f"{name}{tag}_bwd_us"] = us(lambda out=out: torch.autograd.grad(out, xg, gy, retain_graph=True))
            with torch.no_grad():
                row[f"{name}{tag}_fwd_nograd_us"] = us(lambda fn=fn, kw=kw: fn(x, **kw))
        row[f"leaky{tag}_floats_fwdbwd_us"] = us(lambda: torch.autograd.grad(L.leaky(xg, beta=0.9), xg, gy))
        gc.disable()
        row[f"leaky{tag}_fwdbwd_nogc_us"] = us(lambda: torch.autograd.grad(L.leaky(xg, **params), xg, gy))
        gc.enable()
        setting = _runtime.DIRECT_LAUNCH
        _runtime.DIRECT_LAUNCH = True
        for name, fn, kw in (("leaky", L.leaky, params), ("sj_lif", L.sj_lif, {})):
            row[f"{name}{tag}_fwdbwd_direct_us"] = us(lambda fn=fn, kw=kw: torch.autograd.grad(fn(xg, **kw), xg,
                                                                                                    gy))
        _runtime.DIRECT_LAUNCH = setting
        # one launch of the forward kernel alone, its arguments prepared
        spk = torch.empty_like(x)
        size, warps = L.CUDA_BLOCK[x.element_size()]
        n = x.shape[1]
        b, t, g = params["beta"], params["threshold"], params["graded_spikes_factor"]
        row[f"launch_leaky_fwd{tag}_us"] = us(lambda: L.K_.leaky_fwd(
            x.device, (-(-n // size),), x, spk, spk, spk, b, t, g, x.shape[0], n, RESET=0, DELAY=True, SAVE=False,
            BLOCK=size, F64=False, ROUND=dtype == torch.bfloat16, num_warps=warps, PREFETCH=L.PREFETCH))

    class Nop(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return torch.empty_like(a)

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = torch.rand(4, 1024, device="cuda", requires_grad=True)
    gy = torch.randn_like(x)
    row["autograd_function_nop_us"] = us(lambda: torch.autograd.grad(Nop.apply(x), x, gy))
    row["autograd_grad_of_mul_us"] = us(lambda: torch.autograd.grad(x * 2.0, x, gy))
    row["empty_like_us"] = us(lambda: torch.empty_like(x))
    RESULTS["lifhost"] = row
    print("lifhost", {k: round(v, 1) for k, v in row.items()}, flush=True)
    xb = torch.rand(4, 1024, device="cuda").bfloat16().requires_grad_()
    gb = torch.randn_like(xb)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(300):
        torch.autograd.grad(L.leaky(xb, **params), xb, gb)
    profile.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(22)
    print("\n".join(text.getvalue().splitlines()[-28:]), flush=True)


def _host_large(row: dict, params: dict) -> None:
    """Eager forward+backward on the benchmark's large input (64 x 2^20): the host's time per call while it
    queues work without waiting (``*_large_host_us``) against the wall time once the GPU has finished
    (``*_large_wall_us``); equal values mean the host, not the GPU, sets the pace (or something waits for the
    GPU: the profile's table below shows any synchronizing call)."""
    from torch.profiler import ProfilerActivity, profile

    from qsnn_kernels import lif as L

    for dtype in (torch.float32, torch.bfloat16):
        xl = (torch.rand(64, 1 << 20, device="cuda") * 1.5).to(dtype).requires_grad_()
        gl = torch.randn_like(xl)
        tag = "bf16" if dtype == torch.bfloat16 else "f32"
        for name, fn, kw in (("leaky", L.leaky, params), ("sj_lif", L.sj_lif, {})):
            def call(fn=fn, kw=kw):
                return torch.autograd.grad(fn(xl, **kw), xl, gl)

            for _ in range(3):
                call()
            torch.cuda.synchronize()
            calls = 20
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
            queued = time.perf_counter() - t0
            torch.cuda.synchronize()
            row[f"{name}_{tag}_large_host_us"] = queued / calls * 1e6
            row[f"{name}_{tag}_large_wall_us"] = (time.perf_counter() - t0) / calls * 1e6
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    call()
                torch.cuda.synchronize()
            print(f"profile {name} {tag} (5 calls)", flush=True)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18), flush=True)
        del xl, gl
    print("host large", {k: round(v, 1) for k, v in row.items() if "_large_" in k}, flush=True)


def probe():
    """One launch of each kernel that the docs discuss, for ``ncu`` (no timing)."""
    from qsnn_kernels import binary as B
    from qsnn_kernels import lif as L

    k = 8192
    w = torch.randn(k, k, dtype=torch.float16, device="cuda")
    wp = B.pack_weight(w)
    for m in (1, 16):
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        B.xnor_gemv(x, wp, k, out_dtype=torch.float16)
    x = torch.randn(k, k, dtype=torch.float16, device="cuda")
    B.fp8_matmul(B.sign_rows(x, 1.0), B.unpack_bits(wp, k, k_pad=16, fp8=True), out_dtype=torch.float16)
    xc = torch.randn(256, 256, 14, 14, dtype=torch.float16, device="cuda")
    wc = torch.randn(256, 256, 3, 3, dtype=torch.float16, device="cuda")
    B.binary_conv2d_op(xc, wc, None, 1, 1, 1, 1, 0.0, "ste", None, 1.0, "tensor")
    xl = torch.rand(64, 1 << 20, device="cuda").requires_grad_()
    gy = torch.randn_like(xl)
    for fn in (L.leaky, L.sj_lif):
        kw = dict(beta=0.9) if fn is L.leaky else {}
        torch.autograd.grad(fn(xl, **kw), xl, gy)
    torch.cuda.synchronize()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None)
    parser.add_argument("--budget-s", type=float, default=420.0, help="skip torch.compile baselines past this")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    parser.add_argument("--compile-float32-only", action="store_true", help="torch.compile baselines in float32 only")
    parser.add_argument("--explore", action="store_true", help="add the alternatives and config sweeps")
    parser.add_argument("--sections", default="ceilings,correctness,host,matmul,conv,gemv,bounds,lif")
    parser.add_argument("--probe", action="store_true", help="one launch of each kernel, for ncu")
    args = parser.parse_args(argv)
    if args.probe:
        probe()
        return 0
    global NO_COMPILE, EXPLORE
    NO_COMPILE, EXPLORE = args.no_compile, args.explore
    if args.compile_float32_only:
        global COMPILE_DTYPES
        COMPILE_DTYPES = (torch.float32,)
    started = time.time()
    import triton

    RESULTS["env"] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                      "sms": torch.cuda.get_device_properties(0).multi_processor_count, "explore": EXPLORE,
                      "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(RESULTS["env"], flush=True)
    steps = {"ceilings": ceilings, "correctness": correctness, "host": host, "lifhost": lifhost, "matmul": matmul,
             "conv": conv, "gemv": gemv, "bounds": bounds,
             "lif": lambda: lif(started + args.budget_s)}
    wanted = args.sections.split(",")
    if "ceilings" not in wanted:
        wanted.insert(0, "ceilings")  # the floors need the copy bandwidth
    for name in wanted:
        t0 = time.time()
        try:
            steps[name]()
        except Exception:  # noqa: BLE001 - keep what was measured
            RESULTS.setdefault("errors", []).append(f"{name}: " + traceback.format_exc()[-1500:])
            traceback.print_exc()
        RESULTS.setdefault("section_s", {})[name] = round(time.time() - t0, 1)
        _save(args.out)
    RESULTS["wall_s"] = time.time() - started
    RESULTS["complete"] = True
    _save(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
