"""The kernels against the specs on drawn shapes, every path, bit-exact for the binary ops (odd K, tails past a
32-bit word and past a block), within the tolerance table for the LIF neurons. CPU: Triton's interpreter."""

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

from conformance.core.tolerance import tolerance  # noqa: E402
from qsnn_kernels import binary as B  # noqa: E402
from qsnn_kernels import lif as L  # noqa: E402
from qsnn_reference import binary as RB  # noqa: E402
from qsnn_reference import neurons as N  # noqa: E402
from qsnn_reference import packing as P  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# KERNEL_TEST_EXAMPLES: fewer drawn examples (each new shape class compiles kernels on CUDA)
SETTINGS = settings(max_examples=int(os.environ.get("KERNEL_TEST_EXAMPLES", "12")), deadline=None, derandomize=True,
                    database=None)


def _signs_with_zeros(draw, shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 2 ** 31))))
    zeros = torch.rand(shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 2 ** 31)))) < 0.1
    return torch.where(zeros, torch.zeros_like(x), x)


@SETTINGS
@given(data=st.data())
def test_pack_signs_matches_spec(data):
    rows, length = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 100))
    x = _signs_with_zeros(data.draw, (rows, length))
    order, pad = data.draw(st.sampled_from(["lsb", "msb"])), data.draw(st.sampled_from([-1.0, 1.0]))
    got = B.pack_signs(x.to(DEVICE), bit_order=order, pad=pad).cpu()
    assert torch.equal(got, P.pack_signs(x, word_bits=32, bit_order=order, pad=pad))


@SETTINGS
@given(data=st.data(), path=st.sampled_from(["gemv", "onchip", "expand"]))
def test_packed_matmul_is_exact_on_every_path(data, path):
    # sizes around the CPU blocks (16 x 16 x 64) and the 32-bit word: tails in M, N and K
    m = data.draw(st.integers(1, 40) if path != "gemv" else st.integers(1, 16))
    n, k = data.draw(st.integers(1, 40)), data.draw(st.sampled_from([1, 31, 32, 33, 63, 64, 65, 97, 130]))
    x, w = _signs_with_zeros(data.draw, (m, k)), _signs_with_zeros(data.draw, (n, k))
    zero_value = data.draw(st.sampled_from([1.0, -1.0]))
    a = B.sign_int8(x.to(DEVICE), zero_value)
    y = B.packed_matmul(a, B.pack_weight(w.to(DEVICE), zero_value), k, path=path, out_dtype=torch.float64).cpu()
    expected = P.binary_matmul(x.double(), w.double(), zero_value=zero_value)
    assert torch.equal(y, expected)


@SETTINGS
@given(data=st.data())
def test_binary_linear_matches_spec_with_scaling_epilogue(data):
    m, n, k = data.draw(st.integers(1, 24)), data.draw(st.integers(1, 9)), data.draw(st.integers(1, 70))
    x = torch.randn(m, k, dtype=torch.float64).requires_grad_()
    w = torch.randn(n, k, dtype=torch.float64).requires_grad_()
    b = torch.randn(n, dtype=torch.float64).requires_grad_()
    kw = dict(input_quant=data.draw(st.sampled_from(B.INPUT_QUANTS)), threshold=data.draw(st.sampled_from([0.5, 1.0])),
              zero_value=data.draw(st.sampled_from([1.0, -1.0])),
              weight_scaling=data.draw(st.sampled_from(B.WEIGHT_SCALINGS)))
    y = B.binary_linear(x.to(DEVICE), w.to(DEVICE), b.to(DEVICE), **kw)
    ref = RB.binary_linear(x, w, b, **kw)
    g = torch.randn(ref.shape, dtype=torch.float64)
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-12, atol=1e-12)
    got = torch.autograd.grad(y, (x, w, b), g.to(DEVICE))
    for a, e in zip(got, torch.autograd.grad(ref, (x, w, b), g)):
        torch.testing.assert_close(a.cpu(), e, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(data=st.data())
def test_binary_conv2d_matches_spec(data):
    groups = data.draw(st.sampled_from([1, 2]))
    cin, cout = groups * data.draw(st.integers(1, 3)), groups * data.draw(st.integers(1, 3))
    k, stride, padding, dilation = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 2)),
                                    data.draw(st.integers(0, 2)), data.draw(st.integers(1, 2)))
    side = max(data.draw(st.integers(1, 7)), dilation * (k - 1) + 1 - 2 * padding, 1)
    x = torch.randn(data.draw(st.integers(1, 2)), cin, side, side, dtype=torch.float64)
    w = torch.randn(cout, cin // groups, k, k, dtype=torch.float64)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups,
              pad_value=data.draw(st.sampled_from([0.0, -1.0, 1.0])),
              weight_scaling=data.draw(st.sampled_from(B.WEIGHT_SCALINGS)))
    y = B.binary_conv2d(x.to(DEVICE), w.to(DEVICE), **kw).cpu()
    torch.testing.assert_close(y, RB.binary_conv2d(x, w, **kw), rtol=1e-12, atol=1e-12)


def _lif_case(data, dtype):
    steps, batch, feat = data.draw(st.integers(1, 8)), data.draw(st.integers(1, 3)), data.draw(st.integers(1, 40))
    return (torch.rand(steps, batch, feat, dtype=torch.float64) * 3 - 1).to(dtype).to(torch.float64)


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([torch.float64, torch.float32]))
def test_leaky_matches_spec(data, dtype):
    x = _lif_case(data, dtype)
    kw = dict(reset_mechanism=data.draw(st.sampled_from(list(L.RESETS))), reset_delay=data.draw(st.booleans()),
              surrogate=data.draw(st.sampled_from(list(L.SURROGATES))), surrogate_alpha=None)
    params = [torch.tensor(v, dtype=torch.float64) for v in (data.draw(st.floats(0.1, 1.0)),
                                                             data.draw(st.floats(0.5, 1.5)), 1.0)]
    xs, ps = x.to(dtype).to(DEVICE).requires_grad_(), [p.to(dtype).to(DEVICE).requires_grad_() for p in params]
    y = L.leaky(xs, beta=ps[0], threshold=ps[1], graded_spikes_factor=ps[2], **kw)
    xr, pr = x.clone().requires_grad_(), [p.to(dtype).double().requires_grad_() for p in params]
    ref = N.leaky(xr, beta=pr[0], threshold=pr[1], graded_spikes_factor=pr[2], **kw)
    name = str(dtype).split(".")[-1]
    if not torch.equal(y.detach().cpu().double(), ref.detach()):
        _, margin = N.leaky_trace(xr.detach(), beta=pr[0], threshold=pr[1], graded_spikes_factor=pr[2], **kw)
        assert margin.abs().min() < 1e-4, "spike mismatch away from the threshold"
        return  # a tie: the trajectories legitimately part
    g = torch.randn(ref.shape, dtype=torch.float64)
    tol = tolerance(name, "eager", "grad_matches_spec")
    got = torch.autograd.grad(y, [xs] + ps, g.to(dtype).to(DEVICE))
    for a, e in zip(got, torch.autograd.grad(ref, [xr] + pr, g)):
        torch.testing.assert_close(a.cpu().double(), e, rtol=tol.rtol, atol=tol.atol * max(1.0, e.abs().max()))


@SETTINGS
@given(data=st.data())
def test_sj_lif_matches_spec(data):
    x = _lif_case(data, torch.float64)
    kw = dict(tau=data.draw(st.floats(1.1, 4.0)), decay_input=data.draw(st.booleans()),
              v_threshold=data.draw(st.floats(0.5, 1.5)), v_reset=data.draw(st.sampled_from([None, 0.0, -0.3])),
              detach_reset=data.draw(st.booleans()), surrogate=data.draw(st.sampled_from(["sigmoid", "atan"])),
              surrogate_alpha=None)
    xs, xr = x.to(DEVICE).requires_grad_(), x.clone().requires_grad_()
    y, ref = L.sj_lif(xs, **kw), N.sj_lif(xr, **kw)
    assert torch.equal(y.detach().cpu(), ref.detach())
    g = torch.randn(ref.shape, dtype=torch.float64)
    torch.testing.assert_close(torch.autograd.grad(y, xs, g.to(DEVICE))[0].cpu(), torch.autograd.grad(ref, xr, g)[0])


def test_bfloat16_lif_rounds_the_membrane_like_the_spec():
    x = (torch.rand(6, 2, 50, generator=torch.Generator().manual_seed(1)) * 3 - 1).to(torch.bfloat16)
    ours = L.leaky(x.to(DEVICE), beta=0.8, threshold=0.9).cpu()
    spec = N.leaky(x, beta=0.8, threshold=0.9)
    assert ours.dtype == torch.bfloat16
    assert (ours != spec).float().mean() < 0.02  # the spec rounds every op, the kernel every step: rare ties


def test_float32_parameters_of_a_bfloat16_neuron_are_rounded_in_the_kernel():
    # the kernels take float32 parameters as they are (no conversion launch) and round them to bfloat16 themselves:
    # the same spikes and gradients as with the parameters converted first; values that bfloat16 cannot hold
    x = (torch.rand(8, 2, 64, generator=torch.Generator().manual_seed(2)) * 3 - 1).to(torch.bfloat16).to(DEVICE)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16).to(DEVICE)
    values = (0.8, 1.0035, 1.3)  # beta, threshold, graded_spikes_factor; bfloat16: 0.80078125, 1.0, 1.296875
    runs = []
    for dtype in (torch.float32, torch.bfloat16):
        xs = x.clone().requires_grad_()
        params = [torch.tensor(v, dtype=torch.float32).to(dtype).to(DEVICE).requires_grad_() for v in values]
        y = L.leaky(xs, beta=params[0], threshold=params[1], graded_spikes_factor=params[2],
                    reset_mechanism="subtract", reset_delay=False)
        runs.append((y.detach(), *torch.autograd.grad(y, [xs, *params], g)))
    for ours, converted in zip(*runs):  # a float32 parameter's gradient is float32: compared once rounded
        assert torch.equal(ours.to(converted.dtype), converted)


def test_inference_writes_no_trace():
    x = torch.rand(3, 4, device=DEVICE)
    with torch.no_grad():
        spk, u, v = L.leaky_op(x, *(torch.tensor(1.0, device=DEVICE),) * 3, "subtract", True, "atan", None, False)
    assert u.numel() == 0 and v.numel() == 0 and spk.shape == x.shape


FP8 = DEVICE == "cuda" and B.fp8_available(torch.device("cuda"))


@SETTINGS
@given(data=st.data(), config=st.sampled_from([("plain", 8, 256, 4, True), ("plain", 8, 64, 4, False),
                                               ("hs", 16, 8, 4, False), ("hs", 32, 8, 4, False),
                                               ("bmma", 1, 2, 2, False), ("bmma", 2, 1, 1, False),
                                               ("tc", 64, 8, 4, 3)]))
def test_xnor_gemv_configs_are_exact(data, config):
    # float activations (packed outside or, CUDA "fused", inside the GEMV) against packed weights; K tails
    m, n = data.draw(st.integers(1, 16)), data.draw(st.integers(1, 40))
    k = data.draw(st.sampled_from([1, 31, 32, 33, 200, 257, 300]))
    x, w = _signs_with_zeros(data.draw, (m, k)), _signs_with_zeros(data.draw, (n, k))
    zero_value = data.draw(st.sampled_from([1.0, -1.0]))
    y = B.xnor_gemv(x.to(DEVICE), B.pack_weight(w.to(DEVICE), zero_value), k, zero_bit=int(zero_value > 0),
                    out_dtype=torch.float64, config=config).cpu()
    assert torch.equal(y, P.binary_matmul(x.double(), w.double(), zero_value=zero_value))


@pytest.mark.parametrize("config", [("bmma", 1, 2, 2, False), ("bmma", 2, 1, 1, False), ("bmma", 1, 4, 1, False),
                                    ("tc", 64, 8, 4, 3)])
@pytest.mark.parametrize("m,n,k", [(16, 40, 1000), (5, 13, 257), (9, 8, 64), (16, 17, 33), (1, 1, 1), (12, 24, 2049)])
def test_tensor_core_gemvs_are_exact_across_tiles_and_tails(config, m, n, k):
    # the binary-MMA GEMV (batch 5-16 on CUDA) and the int8 one: M, N tails past the 16 x 8 MMA tile, K tails past
    # a word, a 16-word step and the warps' K split; even word counts take the two-word loads on CUDA, odd ones not;
    # per-channel scale and bias check the epilogue's column order (powers of two and integers: exact, so a fused
    # multiply-add rounds as the two-step reference does)
    gen = torch.Generator().manual_seed(m * 10007 + n * 101 + k)
    x, w = (torch.randn(s, generator=gen, dtype=torch.float64) for s in ((m, k), (n, k)))
    x[torch.rand(m, k, generator=gen) < 0.1] = 0
    scale = 2.0 ** -torch.randint(0, 5, (n,), generator=gen).double()
    bias = torch.randint(-50, 51, (n,), generator=gen).double()
    for zero_value in (1.0, -1.0):
        y = B.xnor_gemv(x.to(DEVICE), B.pack_weight(w.to(DEVICE), zero_value), k, zero_bit=int(zero_value > 0),
                        scale=scale.to(DEVICE), bias=bias.to(DEVICE), out_dtype=torch.float64, config=config).cpu()
        assert torch.equal(y, P.binary_matmul(x, w, zero_value=zero_value) * scale + bias)


@pytest.mark.skipif(not FP8, reason="needs a CUDA GPU with FP8 tensor cores")
@pytest.mark.parametrize("scaling", B.WEIGHT_SCALINGS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fp8_path_matches_spec(scaling, dtype):
    gen = torch.Generator().manual_seed(3)
    m, n, k = 80, 48, 70  # K padded to 80 inside
    x, w, b = (torch.randn(s, generator=gen, dtype=torch.float64) for s in ((m, k), (n, k), (n,)))
    y = B.binary_linear(x.to(dtype).cuda(), w.to(dtype).cuda(), b.to(dtype).cuda(), weight_scaling=scaling)
    ref = RB.binary_linear(x.to(dtype).double(), w.to(dtype).double(), b.to(dtype).double(), weight_scaling=scaling)
    tol = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
    torch.testing.assert_close(y.double().cpu(), ref, rtol=tol, atol=tol * ref.abs().max().item())


@pytest.mark.skipif(not FP8, reason="needs a CUDA GPU with FP8 tensor cores")
def test_fp8_sums_are_exact_at_the_largest_k():
    # every product +1: the sum is K itself, the largest a partial sum can get
    for k in (8192, 16384):
        a = torch.ones(64, k, device="cuda")
        y = B.fp8_matmul(B.sign_rows(a, 1.0), B.sign_rows(a[:16], 1.0), out_dtype=torch.float32)
        assert torch.equal(y, torch.full_like(y, float(k)))
    x = torch.randn(256, 4099, device="cuda")
    w = torch.randn(64, 4099, device="cuda")
    y = B.packed_matmul(B.sign_int8(x, 1.0), B.pack_weight(w), 4099, path="fp8", out_dtype=torch.float64)
    assert torch.equal(y.cpu(), P.binary_matmul(x.double().cpu(), w.double().cpu()))


def test_no_python_float_reaches_a_lif_kernel(monkeypatch):
    # a compiled Triton kernel takes a Python float as fp32: float64 runs would get rounded constants
    from qsnn_kernels import _runtime

    seen = []
    original = _runtime.Kernel.__call__

    def spy(self, device, grid, *args, **kwargs):
        seen.extend(type(a) for a in args)
        return original(self, device, grid, *args, **kwargs)

    monkeypatch.setattr(_runtime.Kernel, "__call__", spy)
    x = torch.rand(3, 2, 5, dtype=torch.float64, device=DEVICE).requires_grad_()
    for surrogate in ("atan", "sigmoid"):
        torch.autograd.grad(L.sj_lif(x, tau=3.0, v_reset=-0.3, surrogate=surrogate).sum(), x)
        torch.autograd.grad(L.leaky(x, beta=0.7, surrogate=surrogate, surrogate_alpha=2.7).sum(), x)
    assert seen and float not in seen


@SETTINGS
@given(data=st.data())
def test_sign_and_unpack_bytes_are_int8_or_e4m3_signs(data):
    rows, k, k_pad = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 80)), data.draw(st.sampled_from([1, 16]))
    x = _signs_with_zeros(data.draw, (rows, k))
    zero_value = data.draw(st.sampled_from([1.0, -1.0]))
    expected = torch.where(x == 0, zero_value, x.sign())
    kp = -(-k // k_pad) * k_pad
    padded = torch.zeros(rows, kp)
    padded[:, :k] = expected
    got = B.sign_rows(x.to(DEVICE), zero_value, k_pad=k_pad).cpu()
    assert got.dtype == torch.float8_e4m3fn and torch.equal(got.float(), padded)
    assert torch.equal(B.sign_rows(x.to(DEVICE), zero_value, k_pad=k_pad, fp8=False).cpu().float(), padded)
    assert torch.equal(B.sign_int8(x.to(DEVICE), zero_value, fp8=True).cpu().float(), expected)
    packed = B.pack_weight(x.to(DEVICE), zero_value)
    assert torch.equal(B.unpack_bits(packed, k, k_pad=k_pad, fp8=True).cpu().float(), padded)
    assert torch.equal(B.unpack_bits(packed, k, k_pad=k_pad).cpu().float(), padded)


@SETTINGS
@given(data=st.data())
def test_implicit_gemm_conv_matches_spec(data):
    # int8 on the CPU interpreter, the fp8 tensor cores on CUDA (the path binary_conv2d takes there for C % 32 == 0)
    fp8 = FP8 and data.draw(st.booleans())
    k, stride, padding, dilation = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 2)),
                                    data.draw(st.integers(0, 2)), data.draw(st.integers(1, 2)))
    side = max(data.draw(st.integers(1, 7)), dilation * (k - 1) + 1 - 2 * padding, 1)
    cin, cout = data.draw(st.sampled_from([32, 64])), data.draw(st.integers(1, 20))
    x = _signs_with_zeros(data.draw, (data.draw(st.integers(1, 2)), cin, side, side)).double()
    w = torch.randn(cout, cin, k, k, dtype=torch.float64)
    b = torch.randn(cout, dtype=torch.float64)
    kw = dict(stride=stride, padding=padding, dilation=dilation, pad_value=data.draw(st.sampled_from([0.0, -1.0, 1.0])))
    zero_value = data.draw(st.sampled_from([1.0, -1.0]))
    scaling = data.draw(st.sampled_from(B.WEIGHT_SCALINGS))
    dtype = torch.float32 if fp8 else torch.float64
    # a channels-last input (read along its channels) and output (the GEMM's rows stored as they are)
    channels_last = data.draw(st.booleans())
    xin = x.to(dtype).to(DEVICE)
    if channels_last:
        xin = xin.contiguous(memory_format=torch.channels_last)
    y = B.conv_implicit(xin, w.to(dtype).to(DEVICE), zero_value=zero_value,
                        scale=B._weight_scale(w.to(dtype).to(DEVICE), scaling), bias=b.to(dtype).to(DEVICE),
                        out_dtype=dtype, fp8=fp8, channels_last=channels_last,
                        config=data.draw(st.sampled_from(B.CONV_CUDA)) if DEVICE == "cuda" else None, **kw).cpu()
    assert y.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    ref = RB.binary_conv2d(x, w.to(dtype).double(), b.to(dtype).double(), zero_value=zero_value,
                           weight_scaling=scaling, **kw)
    tol = 1e-6 if fp8 else 1e-12
    torch.testing.assert_close(y.double(), ref, rtol=tol, atol=tol * max(1.0, ref.abs().max().item()))
