"""Every kernel launch the public ops make passes Triton's compiler front end (source to Triton IR for an sm_90
target), on the CPU. The CPU tests run the kernels in Triton's interpreter, which executes the source as Python and
so accepts what the compiler refuses (a variable whose type changes across a loop, say): a kernel change tested only
there can still fail to compile on every GPU (it did: the bfloat16 leaky forward, 2026-12-06). The launches are
recorded from the ops on small CPU tensors, each distinct (kernel, argument types, constexprs) compiled once: 163
launches of 15 kernel sources (the CPU's block sizes; the CUDA-only configurations are compiled on the GPU runs),
plus 9 variants with the CUDA-only branches of the tensor-core GEMVs (``CUDA_BRANCHES``: inline PTX, ``tl.sum``),
which the CPU never runs."""

from __future__ import annotations

import itertools

import pytest
import torch

triton = pytest.importorskip("triton")

from qsnn_kernels import _runtime  # noqa: E402
from qsnn_kernels import binary as B  # noqa: E402
from qsnn_kernels import lif as L  # noqa: E402

#: torch dtype -> Triton's name of the pointer's element type
_ELEMENT = {torch.float32: "fp32", torch.float64: "fp64", torch.float16: "fp16", torch.bfloat16: "bf16",
            torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
            torch.bool: "i1", torch.float8_e4m3fn: "fp8e4nv"}


#: kernel -> constexpr overrides compiled besides each recorded (CPU) launch: their CUDA-only branches
CUDA_BRANCHES = {"xnor_gemv_bmma_kernel": ({"USE_ASM": True, "VEC": False}, {"USE_ASM": True, "VEC": True}),
                 "xnor_gemv_tc_kernel": ({"USE_ASM": True},), "sign_perm_kernel": ({"USE_SUM": True},)}


def _record_launches(monkeypatch) -> dict:
    """Wrap Kernel.__call__: each launch's (source function, signature, constexprs), run as before."""
    seen: dict = {}
    jitted: dict = {}  # source function -> (JITFunction, argument names, constexpr names)
    original = _runtime.Kernel.__call__

    def spy(self, device, grid, *args, **kwargs):
        if self.fn not in jitted:
            jit = triton.jit(self.fn)
            jitted[self.fn] = (jit, list(jit.arg_names), {p.name for p in jit.params if p.is_constexpr})
        jit, names, constexpr = jitted[self.fn]
        bound = dict(zip(names, args), **kwargs)
        signature, constexprs = {}, {}
        for name in names:
            value = bound.get(name)
            if name in constexpr:
                signature[name], constexprs[name] = "constexpr", value
            elif isinstance(value, torch.Tensor):
                signature[name] = "*" + _ELEMENT[value.dtype]
            elif isinstance(value, bool):
                signature[name] = "i1"
            elif isinstance(value, int):
                signature[name] = "i32" if -2 ** 31 <= value < 2 ** 31 else "i64"
            else:
                signature[name] = "fp32"
        key = (self.fn.__name__, tuple(signature.items()), tuple(sorted(constexprs.items())))
        seen.setdefault(key, (jit, signature, constexprs))
        return original(self, device, grid, *args, **kwargs)

    monkeypatch.setattr(_runtime.Kernel, "__call__", spy)
    return seen


def _drive_lif() -> None:
    for dtype, reset, delay, surrogate in itertools.product(
            (torch.float32, torch.float64, torch.bfloat16), ("subtract", "zero", "none"), (True, False),
            ("atan", "sigmoid", "fast_sigmoid")):
        x = torch.rand(3, 2, 5, dtype=dtype).requires_grad_()
        beta = torch.tensor(0.8, dtype=dtype if dtype != torch.bfloat16 else torch.float32, requires_grad=True)
        y = L.leaky(x, beta=beta, reset_mechanism=reset, reset_delay=delay, surrogate=surrogate)
        torch.autograd.grad(y.sum(), (x, beta))
        with torch.no_grad():
            L.leaky(x, beta=0.8, reset_mechanism=reset, reset_delay=delay, surrogate=surrogate)
    for dtype, decay, v_reset, detach, surrogate in itertools.product(
            (torch.float32, torch.float64, torch.bfloat16), (True, False), (None, 0.0), (True, False),
            ("atan", "sigmoid")):
        x = torch.rand(3, 2, 5, dtype=dtype).requires_grad_()
        y = L.sj_lif(x, decay_input=decay, v_reset=v_reset, detach_reset=detach, surrogate=surrogate)
        torch.autograd.grad(y.sum(), x)


def _drive_binary() -> None:
    gen = torch.Generator().manual_seed(0)
    for k in (5, 40):
        x, w = torch.randn(3, k, generator=gen), torch.randn(4, k, generator=gen)
        for order, pad in itertools.product(("lsb", "msb"), (1.0, -1.0)):
            B.pack_signs(x, bit_order=order, pad=pad)
        for fp8 in (False, True):
            B.sign_int8(x, 1.0, fp8=fp8)
            B.unpack_bits(B.pack_weight(w), k, fp8=fp8)
        for config in (("bmma", 1, 2, 2, False), ("bmma", 2, 1, 1, False), ("tc", 64, 8, 4, 3)):
            B.xnor_gemv(x, B.pack_weight(w), k, scale=torch.rand(4, generator=gen), config=config)
        a = B.sign_int8(x, -1.0)
        for path, out_dtype in itertools.product(("gemv", "onchip", "expand"), (torch.float32, torch.float64)):
            B.packed_matmul(a, B.pack_weight(w, -1.0), k, path=path, out_dtype=out_dtype,
                            scale=torch.rand(4, generator=gen), bias=torch.randn(4, generator=gen))
        for scaling in B.WEIGHT_SCALINGS:
            xi = x.clone().requires_grad_()
            B.binary_linear(xi, w, torch.randn(4, generator=gen), weight_scaling=scaling).sum().backward()
    image, kernel = torch.randn(1, 32, 5, 5, generator=gen), torch.randn(3, 32, 3, 3, generator=gen)
    for padding in (0, 1):
        B.binary_conv2d(image, kernel, torch.randn(3, generator=gen), padding=padding)
        B.conv_implicit(image, kernel, stride=1, padding=padding, dilation=1, pad_value=0.0, zero_value=1.0,
                        scale=None, bias=None, out_dtype=torch.float32, fp8=False)
        B.conv_implicit(image.contiguous(memory_format=torch.channels_last), kernel, stride=1, padding=padding,
                        dilation=1, pad_value=0.0, zero_value=1.0, scale=None, bias=None, out_dtype=torch.float32,
                        fp8=False, channels_last=True)


def test_every_recorded_launch_compiles_to_triton_ir(monkeypatch):
    if _runtime.interpreter_problem():  # the launches are recorded from CPU runs (Triton 3.9's interpreter)
        pytest.skip(_runtime.interpreter_problem())
    from triton.backends import backends
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton._C.libtriton import ir

    seen = _record_launches(monkeypatch)
    _drive_lif()
    _drive_binary()
    kernels = {key[0] for key in seen}
    # the tensor-core GEMVs' CUDA-only branches (inline PTX, tl.sum) with the CPU's shapes and block sizes
    for (name, signature, constexprs), (jit, sig, values) in list(seen.items()):
        if name in CUDA_BRANCHES:
            for extra in CUDA_BRANCHES[name]:
                variant = dict(values, **extra)
                seen.setdefault((name, signature, tuple(sorted(variant.items()))), (jit, sig, variant))
    assert {"leaky_fwd_kernel", "leaky_bwd_kernel", "sj_lif_fwd_kernel", "sj_lif_bwd_kernel"} <= kernels, kernels
    target = GPUTarget("cuda", 90, 32)
    backend = backends["nvidia"].compiler(target)
    options = backend.parse_options({})
    failed = []
    for (name, _, constexprs), (jit, signature, values) in seen.items():
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        try:
            ASTSource(jit, signature, constexprs=values).make_ir(
                target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
        except Exception as error:  # noqa: BLE001 - every failing launch is reported, not only the first
            failed.append(f"{name} {dict(constexprs)}: {str(error).strip().splitlines()[-1][:300]}")
    assert not failed, f"{len(failed)} of {len(seen)} launches do not compile:\n" + "\n".join(failed)
