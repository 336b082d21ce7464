"""GPU benchmark of the project's kernels against cuBLAS, torch.compile of the spec and spikingjelly.

    python -m kernels.bench_gpu --out bench.json [--quick]

Measures on the machine: the ceilings (device-to-device copy bandwidth, counting bytes read plus written; the int8
tensor-core rate through ``torch._int_mm``; cuBLAS fp16), checks the kernels against the specs on drawn shapes
(odd K, tails), then times binary matmul (8192^3 and batch 1-16 against an 8192x8192 weight) and the fused LIF
(64 steps x 2^20 neurons, forward and forward+backward) against the memory-traffic floor. Prints a table, writes
JSON. Times are medians of CUDA-event timings; small launches are timed as CUDA-graph replays (both sides).
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
RESULTS: dict = {"correctness": {}, "ceilings": {}, "matmul": [], "gemv": [], "lif": []}


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
        per = inner
    else:
        per = 1
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
        times.append(start.elapsed_time(end) / (per if graph else inner))
    return statistics.median(times)


def _save(path):
    if path:
        with open(path, "w") as f:
            json.dump(RESULTS, f, indent=1)


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
    xh = torch.randn(m, m, dtype=torch.float16, device="cuda").sign()
    wh = torch.randn(m, m, dtype=torch.float16, device="cuda").sign()
    msh = _time(lambda: xh @ wh.t(), inner=3)
    RESULTS["ceilings"] = {"copy_TBps": bw, "int8_mm_TOPS": 2 * m ** 3 / ms8 / 1e9, "int8_mm_ms": ms8,
                           "fp16_mm_TFLOPS": 2 * m ** 3 / msh / 1e9, "fp16_mm_ms": msh}
    print(f"ceilings: copy {bw:.2f} TB/s, int8 _int_mm {2 * m ** 3 / ms8 / 1e9:.0f} TOPS, "
          f"cuBLAS fp16 {2 * m ** 3 / msh / 1e9:.0f} TFLOP/s", flush=True)


def correctness():
    from kernels import binary as B
    from kernels import lif as L
    from reference import binary as RB
    from reference import neurons as N
    from reference import packing as P

    gen = torch.Generator(device="cpu").manual_seed(0)
    bad = []
    shapes = [(1, 1, 1), (3, 5, 31), (7, 33, 33), (16, 100, 97), (65, 129, 257), (300, 77, 1000), (1024, 96, 4101)]
    for m, n, k in shapes:
        x = torch.randn(m, k, generator=gen).cuda()
        w = torch.randn(n, k, generator=gen).cuda()
        ref = (x.double().sign() @ w.double().sign().t())
        a = B.sign_int8(x, 1.0)
        wp = B.pack_weight(w)
        for path in ("gemv", "onchip", "expand"):
            y = B.packed_matmul(a, wp, k, path=path, out_dtype=torch.float64)
            if not torch.equal(y, ref):
                bad.append(f"matmul {path} {m}x{n}x{k}")
        if not torch.equal(B.pack_signs(x, pad=1.0).cpu(), P.pack_signs(x.cpu(), word_bits=32, pad=1.0)):
            bad.append(f"pack {m}x{k}")
    for pv in (0.0, -1.0, 1.0):
        x = torch.randn(2, 5, 9, 9, generator=gen, dtype=torch.float64)
        w = torch.randn(6, 5, 3, 3, generator=gen, dtype=torch.float64)
        for stride, pad, dil in ((1, 1, 1), (2, 2, 1), (1, 2, 2)):
            kw = dict(stride=stride, padding=pad, dilation=dil, pad_value=pv, weight_scaling="channel")
            y = B.binary_conv2d(x.cuda(), w.cuda(), **kw).cpu()
            if not torch.allclose(y, RB.binary_conv2d(x, w, **kw), atol=1e-9):
                bad.append(f"conv pv={pv} s={stride} p={pad} d={dil}")
    lif_err = {}
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.rand(16, 4, 300, generator=gen, dtype=torch.float64) * 3 - 1)
        xd = x.to(dtype)
        for name, ours, spec, kw in (
                ("leaky", L.leaky, N.leaky, dict(beta=0.85, threshold=1.0)),
                ("sj_lif", L.sj_lif, N.sj_lif, dict(tau=2.0, v_threshold=1.0, v_reset=0.0))):
            xk = xd.cuda().requires_grad_()
            y = ours(xk, **kw)
            g = torch.randn(y.shape, generator=gen).to(dtype)
            (y * g.cuda()).sum().backward()
            xr = xd.double().requires_grad_()
            yr = spec(xr, **kw)
            (yr * g.double()).sum().backward()
            flips = (y.detach().cpu().double() != yr.detach()).sum().item()
            err = (xk.grad.cpu().double() - xr.grad).abs().max().item()
            lif_err[f"{name}/{dtype}"] = {"spike_flips": flips, "of": y.numel(), "max_abs_grad_err": err}
    RESULTS["correctness"] = {"binary_failures": bad, "lif": lif_err}
    print("correctness: binary", "OK" if not bad else bad, "| lif", lif_err, flush=True)


def matmul_large():
    from kernels import binary as B

    m = n = k = 8192
    x = torch.randn(m, k, dtype=torch.float16, device="cuda")
    w = torch.randn(n, k, dtype=torch.float16, device="cuda")
    xs, ws = x.sign(), w.sign()
    cublas = _time(lambda: xs @ ws.t(), inner=3)
    wp = B.pack_weight(w)
    a = B.sign_int8(x, 1.0)
    row = {"shape": [m, n, k], "cublas_fp16_ms": cublas}
    for path in ("expand", "onchip"):
        for name, cfg in (("128x256x128", (128, 256, 128, 8, 3)), ("128x128x128", (128, 128, 128, 8, 4)),
                          ("256x128x64", (256, 128, 64, 8, 3))):
            try:
                if path == "expand":
                    b = B.unpack_bits(wp, k)
                    fn = lambda: B.gemm_a8(a, b, k, out_dtype=torch.float16, config=cfg)  # noqa: E731
                else:
                    fn = lambda: B.gemm_a8(a, wp, k, out_dtype=torch.float16, config=cfg)  # noqa: E731
                ms = _time(fn, inner=3)
                row[f"{path}_{name}_gemm_ms"] = ms
            except Exception as e:  # noqa: BLE001 - a config that does not compile is a result too
                row[f"{path}_{name}_error"] = repr(e)[:200]
    row["sign_x_ms"] = _time(lambda: B.sign_int8(x, 1.0), inner=3)
    row["unpack_w_ms"] = _time(lambda: B.unpack_bits(wp, k), inner=3)
    RESULTS["matmul"].append(row)
    best = min((v, kk) for kk, v in row.items() if kk.endswith("_gemm_ms"))
    row["best_gemm"] = best[1]
    end_to_end = best[0] + row["sign_x_ms"] + (row["unpack_w_ms"] if best[1].startswith("expand") else 0)
    row["ours_end_to_end_ms"] = end_to_end
    row["speedup_vs_cublas"] = cublas / end_to_end
    row["speedup_gemm_only"] = cublas / best[0]
    row["frac_int8_ceiling"] = RESULTS["ceilings"]["int8_mm_ms"] / best[0]
    print(f"matmul 8192^3: cuBLAS fp16 {cublas:.3f} ms; ours {end_to_end:.3f} ms end-to-end ({best[1]}), "
          f"x{row['speedup_vs_cublas']:.2f}; gemm x{row['speedup_gemm_only']:.2f}, "
          f"{row['frac_int8_ceiling']:.0%} of _int_mm", flush=True)


def gemv():
    from kernels import binary as B

    n = k = 8192
    w = torch.randn(n, k, dtype=torch.float16, device="cuda")
    ws = w.sign()
    wp = B.pack_weight(w)
    bw = RESULTS["ceilings"]["copy_TBps"]
    for m in (1, 2, 4, 8, 16):
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        xs = x.sign()
        cublas = _time(lambda: xs @ ws.t(), graph=True, inner=20)
        row = {"m": m, "cublas_fp16_us": cublas * 1e3}
        a = B.sign_int8(x, 1.0)
        for path in ("gemv", "onchip"):
            try:
                if path == "gemv":  # what binary_linear runs for small batches: pack x from float, popcount
                    fn = lambda: B.xnor_gemv(B.pack_rows(x, zero_bit=1), wp, k, out_dtype=torch.float16)  # noqa
                else:
                    fn = lambda: B.gemm_a8(B.sign_int8(x, 1.0), wp, k, out_dtype=torch.float16)  # noqa
                row[f"{path}_us"] = _time(fn, graph=True, inner=20) * 1e3
                core = lambda: (B.xnor_gemv(B.pack_rows(a, zero_bit=0), wp, k, out_dtype=torch.float16)  # noqa
                                if path == "gemv" else B.gemm_a8(a, wp, k, out_dtype=torch.float16))
                row[f"{path}_kernel_us"] = _time(core, graph=True, inner=20) * 1e3
            except Exception as e:  # noqa: BLE001
                row[f"{path}_error"] = repr(e)[:200]
        for bn, bw_ in ((64, 8), (16, 16), (32, 32)):
            try:
                B.GEMV_BLOCK_N, B.GEMV_BLOCK_W = bn, bw_
                row[f"gemv_{bn}x{bw_}_us"] = _time(
                    lambda: B.xnor_gemv(B.pack_rows(x, zero_bit=1), wp, k, out_dtype=torch.float16),
                    graph=True, inner=20) * 1e3
            except Exception as e:  # noqa: BLE001
                row[f"gemv_{bn}x{bw_}_error"] = repr(e)[:200]
            finally:
                B.GEMV_BLOCK_N, B.GEMV_BLOCK_W = 32, 32
        times = {p[:-3]: v for p, v in row.items() if p.endswith("_us") and p not in ("cublas_fp16_us",)
                 and "kernel" not in p}
        best = min(times, key=times.get)
        row["best"] = best
        row["speedup_vs_cublas"] = cublas * 1e3 / times[best]
        row["frac_hbm_floor"] = (n * k / 8 + m * k * 2 + m * n * 2) / (bw * 1e12) * 1e6 / times[best]
        RESULTS["gemv"].append(row)
        print(f"batch {m:2d} x 8192x8192: cuBLAS fp16 {cublas * 1e3:.1f} us; ours {times[best]:.1f} us ({best}) "
              f"x{row['speedup_vs_cublas']:.1f}; {row['frac_hbm_floor']:.0%} of the HBM floor "
              f"| {({p: round(t, 1) for p, t in times.items()})}", flush=True)


def lif(deadline: float):
    from kernels import lif as L
    from reference import neurons as N

    steps, n = 64, 1 << 20
    bw = RESULTS["ceilings"]["copy_TBps"] * 1e12
    try:
        from spikingjelly.activation_based import neuron as sj_neuron, surrogate as sj_surrogate
    except Exception as e:  # noqa: BLE001
        sj_neuron = None
        RESULTS["spikingjelly_import_error"] = repr(e)[:300]
    for dtype in (torch.float32, torch.bfloat16):
        es = torch.finfo(dtype).bits // 8
        x = (torch.rand(steps, n, device="cuda", dtype=torch.float32) * 1.5).to(dtype)
        gy = torch.randn(steps, n, device="cuda", dtype=dtype)
        floor_f = 2 * steps * n * es / bw * 1e3
        floor_fb = 4 * steps * n * es / bw * 1e3
        params = dict(beta=torch.tensor(0.9, device="cuda"), threshold=torch.tensor(1.0, device="cuda"),
                      graded_spikes_factor=torch.tensor(1.0, device="cuda"))
        for name, ours, spec, kw in (("leaky", L.leaky, N.leaky, params),
                                     ("sj_lif", L.sj_lif, N.sj_lif, dict(tau=2.0, v_threshold=1.0, v_reset=0.0))):
            row = {"neuron": name, "dtype": str(dtype), "T": steps, "N": n, "floor_fwd_ms": floor_f,
                   "floor_fwdbwd_ms": floor_fb}

            def fwd():
                with torch.no_grad():
                    return ours(x, **kw)

            xg = x.clone().requires_grad_()

            def fwdbwd():  # autograd.grad, not .backward: no accumulation into x.grad inside the timing
                y = ours(xg, **kw)
                return torch.autograd.grad(y, xg, gy)

            row["ours_fwd_ms"] = _time(fwd, inner=5)
            row["ours_fwdbwd_ms"] = _time(fwdbwd, inner=5)
            row["fwd_over_floor"] = row["ours_fwd_ms"] / floor_f
            row["fwdbwd_over_floor"] = row["ours_fwdbwd_ms"] / floor_fb
            if time.time() < deadline and not NO_COMPILE:
                try:
                    t0 = time.time()
                    cf = torch.compile(lambda t: spec(t, **kw))
                    with torch.no_grad():
                        cf(x)
                    row["compile_fwd_ms"] = _time(lambda: cf(x), inner=3)
                    row["compile_fwd_compile_s"] = time.time() - t0
                    if time.time() < deadline:
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
                        row["spikingjelly_spike_mismatch"] = (node(x) != fwd()).sum().item()
                except Exception as e:  # noqa: BLE001
                    row["spikingjelly_error"] = repr(e)[:300]
            RESULTS["lif"].append(row)
            print("lif", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None)
    parser.add_argument("--budget-s", type=float, default=420.0, help="skip torch.compile baselines past this")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    args = parser.parse_args(argv)
    global NO_COMPILE
    NO_COMPILE = args.no_compile
    started = time.time()
    import triton

    RESULTS["env"] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                      "sms": torch.cuda.get_device_properties(0).multi_processor_count}
    print(RESULTS["env"], flush=True)
    for step in (ceilings, correctness, matmul_large, gemv, lambda: lif(started + args.budget_s)):
        try:
            step()
        except Exception:  # noqa: BLE001 - keep what was measured
            RESULTS.setdefault("errors", []).append(traceback.format_exc()[-1500:])
            traceback.print_exc()
        _save(args.out)
    RESULTS["wall_s"] = time.time() - started
    _save(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
