"""The implicit-GEMM conv's alternatives on the GPU, side by side in one process: its launches one by one, the
kernel before 2026-12-06 (nested K loop), tile configs, the fused-sign and persistent variants.

    OUT=dir python -m experiments.conv_explore.explore      # writes dir/explore.json
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
from qsnn_kernels import binary as B  # noqa: E402
from qsnn_kernels._runtime import kernel  # noqa: E402
from qsnn_kernels.bench_gpu import _time  # noqa: E402
from experiments.conv_explore import alternatives as ALT  # noqa: E402

OUT = os.environ.get("OUT", "/tmp")
res: dict = {"env": {}, "rows": []}
old_sign = kernel(ALT.sign_nhwc_old_kernel)
old_conv = kernel(ALT.conv_nested_kernel)
fused_conv = kernel(ALT.conv_fused_kernel)
pers_conv = kernel(ALT.conv_persistent_kernel)


def save():
    json.dump(res, open(os.path.join(OUT, "explore.json"), "w"), indent=1)


def t(fn, graph=True):
    try:
        return round(_time(fn, inner=5, graph=graph), 5)
    except Exception as e:  # noqa: BLE001
        return repr(e)[:200]


CONFIGS = [(128, 128, 8, 3, 128), (128, 128, 8, 4, 128), (256, 128, 8, 3, 128), (128, 256, 8, 3, 128),
           (128, 128, 4, 3, 128), (256, 64, 8, 4, 128), (128, 128, 8, 5, 64)]


def main():
    res["env"]["device"] = torch.cuda.get_device_name()
    started = time.time()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name, (batch, ch, side) in (("layer2", (256, 128, 28)), ("layer3", (256, 256, 14))):
        x = torch.randn(batch, ch, side, side, dtype=torch.float16, device="cuda")
        w = torch.randn(ch, ch, 3, 3, dtype=torch.float16, device="cuda")
        bias = torch.randn(ch, dtype=torch.float16, device="cuda")
        xs, wsc = x.sign(), w.sign() * w.abs().mean()
        xcl, wcl = xs.to(memory_format=torch.channels_last), wsc.to(memory_format=torch.channels_last)
        xin_cl = x.contiguous(memory_format=torch.channels_last)
        row = {"layer": name}
        F = torch.nn.functional
        row["cudnn_cl_graph"] = t(lambda: F.conv2d(xcl, wcl, bias, padding=1))
        row["cudnn_nchw_graph"] = t(lambda: F.conv2d(xs, wsc, bias, padding=1))
        row["cudnn_cl_eager"] = t(lambda: F.conv2d(xcl, wcl, bias, padding=1), graph=False)
        opts = (1, 1, 1, 1, 0.0, "ste", None, 1.0, "tensor")
        row["ours_nchw_graph"] = t(lambda: B.binary_conv2d_op(x, w, bias, *opts))
        row["ours_cl_graph"] = t(lambda: B.binary_conv2d_op(xin_cl, w, bias, *opts))
        row["ours_nchw_eager"] = t(lambda: B.binary_conv2d_op(x, w, bias, *opts), graph=False)
        row["ours_cl_eager"] = t(lambda: B.binary_conv2d_op(xin_cl, w, bias, *opts), graph=False)
        # exactness against float64
        xs64 = torch.where(x == 0, 1.0, x.sign()).double()
        ws64 = torch.where(w == 0, 1.0, w.sign()).double()
        ref = F.conv2d(xs64, ws64 * w.abs().mean().double(), bias.double(), padding=1)
        for key, xi in (("nchw", x), ("cl", xin_cl)):
            got = B.binary_conv2d_op(xi, w, bias, *opts)
            row[f"err_{key}"] = ((got.double() - ref).abs().max() / ref.abs().max()).item()
            row[f"is_cl_{key}"] = got.is_contiguous(memory_format=torch.channels_last)
        y_default = B.binary_conv2d_op(x, w, bias, *opts)
        # components
        row["wscale"] = t(lambda: w.abs().mean())
        wsign = torch.empty((ch, 9 * ch), dtype=torch.int8, device="cuda")
        sb = B._sign_bytes(1.0, True)
        row["wsign_new"] = t(lambda: B.K_.sign_conv_weight(x.device, (-(-ch // 16), -(-(9 * ch) // 256)), w, wsign, ch,
                                                            ch, 9, BLOCK_R=16, BLOCK_L=256, **sb))
        row["wsign_old"] = t(lambda: B.sign_rows(w.permute(0, 2, 3, 1).reshape(ch, -1), 1.0, k_pad=1))
        hp = wp = side + 2
        xsgn = torch.empty((batch, hp, wp, ch), dtype=torch.int8, device="cuda")
        for bw, bc, key in ((32, 64, ""), (8, 128, "_8x128")):
            bw = min(bw, 1 << (wp - 1).bit_length())
            for xi, kx in ((x, "nchw"), (xin_cl, "cl")):
                row[f"xsign_new_{kx}{key}"] = t(lambda xi=xi, bw=bw, bc=bc: B.K_.sign_nhwc(
                    x.device, (batch * hp, -(-ch // bc), -(-wp // bw)), xi, xsgn, ch, side, side, hp, wp, 1, *xi.stride(),
                    FILL=0, BLOCK_W=bw, BLOCK_C=bc, **sb))
        pixels = batch * hp * wp
        row["xsign_old_nchw"] = t(lambda: old_sign(x.device, (-(-pixels // 64), -(-ch // 64)), x, xsgn, ch, side, side, hp,
                                                   wp, 1, pixels, x.stride(0), x.stride(1), FILL=0, BLOCK_P=64,
                                                   BLOCK_C=64, **sb))
        row["copy_x_ms"] = t(lambda: xin_cl.clone())
        # conv kernel alone, old (nested loop) and new configs
        a8 = xsgn.view(torch.float8_e4m3fn)
        B.K_.sign_nhwc(x.device, (batch * hp, -(-ch // 64), -(-wp // 32)), x, xsgn, ch, side, side, hp, wp, 1,
                       *x.stride(), FILL=0, BLOCK_W=32, BLOCK_C=64, **sb)
        B.K_.sign_conv_weight(x.device, (-(-ch // 16), -(-(9 * ch) // 256)), w, wsign, ch, ch, 9, BLOCK_R=16,
                              BLOCK_L=256, **sb)
        w8 = wsign.view(torch.float8_e4m3fn)
        scale = w.abs().mean()
        m = batch * side * side
        out = torch.empty((batch, ch, side, side), dtype=torch.float16, device="cuda")
        outcl = torch.empty((batch, ch, side, side), dtype=torch.float16, device="cuda",
                            memory_format=torch.channels_last)
        row["conv_old_128x128_8w3s"] = t(lambda: old_conv(
            x.device, (-(-m // 128), -(-ch // 128)), a8, w8, out, scale, bias, m, ch, ch, side, side, hp, wp, 1, 1,
            SCALE_MODE=1, HAS_BIAS=True, FLOAT=True, KH=3, KW=3, BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, num_warps=8,
            num_stages=3))
        ref16 = y_default
        for bm, bn, warps, stages, bk in CONFIGS:
            if bn > ch:
                continue
            for cl, o in (((False, out), (True, outcl)) if (bm, bn, warps, stages, bk) == CONFIGS[0] else ((True, outcl),)):
                key = f"conv_{bm}x{bn}x{bk}_{warps}w{stages}s_{'cl' if cl else 'nchw'}"

                def call(bm=bm, bn=bn, warps=warps, stages=stages, bk=bk, cl=cl, o=o):
                    B.K_.conv_implicit(x.device, (-(-m // bm), -(-ch // bn)), a8, w8, o, scale, bias, m, ch, ch, side,
                                       side, hp, wp, 1, 1, SCALE_MODE=1, HAS_BIAS=True, FLOAT=True, KH=3, KW=3,
                                       CL_OUT=cl, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps,
                                       num_stages=stages)
                o.fill_(float("nan"))
                try:
                    call()
                    row[key + "_exact"] = bool(torch.equal(o, ref16))
                except Exception as e:  # noqa: BLE001
                    row[key] = repr(e)[:200]
                    continue
                row[key] = t(call)
            save()
        for bm, bn, warps, stages in ((128, 128, 8, 3), (128, 128, 8, 4), (128, 256, 8, 2)):
            if bn > ch:
                continue
            key = f"fused_{bm}x{bn}_{warps}w{stages}s"

            def callf(bm=bm, bn=bn, warps=warps, stages=stages):
                fused_conv(x.device, (-(-m // bm), -(-ch // bn)), xin_cl, w8, outcl, scale, bias, m, ch, ch, side, side,
                           side, side, 1, 1, POS=1.0, NEG=-1.0, ZERO=1.0, FILL=0.0, KH=3, KW=3, BLOCK_M=bm, BLOCK_N=bn,
                           BLOCK_K=128, num_warps=warps, num_stages=stages)
            outcl.fill_(float("nan"))
            try:
                callf()
                row[key + "_exact"] = bool(torch.equal(outcl, ref16))
            except Exception as e:  # noqa: BLE001
                row[key] = repr(e)[:200]
                continue
            row[key] = t(callf)
        save()
        for bm, bn, warps, stages, flat, per_sm in ((128, 128, 8, 3, True, 1), (128, 128, 8, 3, True, 2),
                                                    (128, 256, 8, 3, True, 1)):
            if bn > ch:
                continue
            key = f"persistent_{bm}x{bn}_{warps}w{stages}s_flat{int(flat)}_x{per_sm}"
            progs = min(-(-m // bm) * -(-ch // bn), per_sm * sms)

            def callp(bm=bm, bn=bn, warps=warps, stages=stages, flat=flat, progs=progs):
                pers_conv(x.device, (progs,), a8, w8, outcl, scale, bias, m, ch, ch, side, side, hp, wp, 1, progs,
                          KH=3, KW=3, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=128, FLATTEN=flat, num_warps=warps,
                          num_stages=stages)
            outcl.fill_(float("nan"))
            try:
                callp()
                row[key + "_exact"] = bool(torch.equal(outcl, ref16))
            except Exception as e:  # noqa: BLE001
                row[key] = repr(e)[:200]
                continue
            row[key] = t(callp)
        save()
        row["tuned"] = {str(k): v for k, v in B._CONV_TUNED.items()}
        row["flops"] = 2 * m * ch * 9 * ch
        res["rows"].append(row)
        save()
        print(name, {k: v for k, v in row.items()}, flush=True)
        del x, w, xs, wsc, xcl, wcl, xin_cl, xsgn, out, outcl
        torch.cuda.empty_cache()
    res["wall_s"] = time.time() - started
    save()


if __name__ == "__main__":
    main()
