"""bitsandbytes 0.50.2 on its CPU backend: ``bnb.nn.Linear4bit`` (NF4 and FP4 codes, blocks of 64, with and without
double quantization of the absmax) and ``bnb.nn.Linear8bitLt`` (LLM.int8 codes, threshold 0), built as its docs show
them: the layer constructed, an ``nn.Linear``'s weights loaded with ``load_state_dict`` and the layer moved with
``.to("cpu")``, which is when bitsandbytes quantizes (``Params4bit`` / ``Int8Params``). A ``Linear4bit`` called
before the move fails an ``assert`` inside bitsandbytes (``fix_4bit_weight_quant_state_from_module``); that is no
cell here, since every transform moves its module to the cell's device first (docs/quantization.md).

``Linear8bitLt(has_fp16_weights=False)`` computes two ways on the CPU: in training mode (as constructed)
``MatMul8bitFp``, ``x @ dequant(W).T``; in eval mode ``MatMul8bitLt``, LLM.int8's int8 product of the quantized
input and weight rescaled (``blockwise.linear_int8`` with ``quantize_input``). Both are rows. Its default threshold is
0.0: no outlier columns. The layers' gradient reaches the input and the bias (the weights are frozen codes).

The subjects run in float32 on the CPU (the 4-bit CPU kernels run in float32, bfloat16 and float16; float32 is the
dtype judged here). bitsandbytes declares torch, numpy and packaging; it is installed without them so that the
set-up never resolves torch again.
"""

from __future__ import annotations

from typing import Iterator

from torch import nn

from ..core.types import Example, Known, Library, Subject
from . import float_linear

LIBRARY = Library("bitsandbytes", "bitsandbytes", "0.50.2", no_deps=True, dependencies=("numpy", "packaging"),
                  gpu=False)
REQUIRES = ("bitsandbytes",)
FLOAT32 = frozenset({"float32"})
CPU = frozenset({"cpu"})

_SOURCE = "https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1"
_MODULES = f"{_SOURCE}/bitsandbytes/nn/modules.py"
_FUNCTIONS = f"{_SOURCE}/bitsandbytes/autograd/_functions.py"
_REPRODUCERS = "reproducers/bitsandbytes"

#: Both layers' findings: their autograd.Functions under torch.func, their quantized parameter types under Opacus.
_NO_SETUP_CONTEXT = dict(
    cause="autograd-function-without-setup_context", link="https://pytorch.org/docs/main/notes/extending.func.html",
    reason="MatMul4Bit, MatMul8bitFp and MatMul8bitLt define forward(ctx, ...) without setup_context: torch.func "
           "transforms refuse them",
    reproducer=f"{_REPRODUCERS}/autograd_functions_without_setup_context.py")
_DETACH = dict(
    cause="opacus-failed", link=_MODULES,
    reason="Opacus makes Parameters of the module's parameters; Params4bit's and Int8Params' detach() return a plain "
           "Tensor, so torch refuses (`Creating a Parameter from an instance of type Params4bit requires that "
           "detach() returns an instance of the same type`)",
    reproducer=f"{_REPRODUCERS}/quantized_params_as_parameter.py")
_BOTH_LAYERS = (Known("vmap", **_NO_SETUP_CONTEXT), Known("grad", **_NO_SETUP_CONTEXT),
                Known("per_sample_grad", **_NO_SETUP_CONTEXT), Known("opacus_*", **_DETACH))


_KNOWN_4BIT = _BOTH_LAYERS + (
    Known("eager", "*_matches_spec", cause="forward-mismatch", link=f"{_SOURCE}/csrc/cpu_ops.cpp#L356-L395",
          reason="on an AVX-512 CPU the 4-bit dequantization kernel's vector branch (taken where in_features is a "
                 "multiple of 16) reads the absmax per row, absmax[row * (in_features // 64) + k // 64], where the "
                 "blocks of 64 run over the flattened weight: for in_features 48 (not a multiple of the blocksize) "
                 "rows use another block's absmax and the output is wrong (the edge example's row 1: 1.5 off); the "
                 "gradient, through the same dequantization, too. Machines without AVX-512 take the scalar branch, "
                 "which is right",
          reproducer=f"{_REPRODUCERS}/linear4bit_avx512_rows_not_multiple_of_blocksize.py", cpu="torch:avx512"),
    Known("jvp", "preserves_grad", cause="transform-changed-grad", link=f"{_FUNCTIONS}#L453-L480",
          reason="under forward-mode AD the input does not require grad, so matmul_4bit takes its inference path "
                 "(torch.ops.bitsandbytes.gemm_4bit), which has no forward derivative: the output's tangent is "
                 "silently zero",
          reproducer=f"{_REPRODUCERS}/linear4bit_jvp_zero_tangent.py"),
    Known("jit_script", cause="jit-unsupported", link=f"{_MODULES}#L487",
          reason="forward calls fix_4bit_weight_quant_state_from_module, annotated Union[\"Embedding4bit\", "
                 "\"Linear4bit\"], a forward reference TorchScript cannot resolve",
          reproducer=f"{_REPRODUCERS}/linear4bit_jit_script.py"),
    Known("export", cause="export-failed", link=_MODULES,
          reason="tracing with fake tensors, bitsandbytes re-wraps the weight as a Params4bit whose raw tensor is "
                 "already a FakeTensor: RuntimeError",
          reproducer=f"{_REPRODUCERS}/linear4bit_export.py"),
    *(Known(column, cause="state-dict-mismatch",
            link="https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1946",
            reason="a Linear4bit's state_dict holds its quantization state (weight.absmax, weight.quant_map, "
                   "weight.nested_*, weight.quant_state.bitsandbytes__<type>) and a Linear4bit built the same way "
                   "does not take it back: load_state_dict (strict, with or without assign) raises 'Unexpected "
                   "key(s)'",
            reproducer=f"{_REPRODUCERS}/linear4bit_state_dict_not_loadable.py")
      for column in ("state_dict", "save_load", "safetensors", "load_assign")),
)

_KNOWN_8BIT = _BOTH_LAYERS + (
    Known("jvp", **_NO_SETUP_CONTEXT),
    Known("jit_script", cause="jit-unsupported", link=_MODULES,
          reason="the layer holds its quantization state in a MatmulLtState, a Python object TorchScript cannot "
                 "type",
          reproducer=f"{_REPRODUCERS}/linear8bitlt_jit_script.py"),
    Known("export", cause="export-failed", link=_MODULES,
          reason="forward reads the codes and scales from attributes of the weight (Int8Params.CB, .SCB), which the "
                 "fake tensors torch.export traces with do not carry: AttributeError",
          reproducer=f"{_REPRODUCERS}/linear8bitlt_export.py"),
    Known("load_assign", cause="state-dict-mismatch", link=_MODULES,
          reason="load_state_dict(assign=True) puts the loaded int8 tensor in place of the Int8Params, which the "
                 "layer's _load_from_state_dict then takes for a non-quantized weight and refuses ('Loading a "
                 "quantized checkpoint into non-quantized Linear8bitLt is not supported'); the strict load without "
                 "assign works",
          reproducer=f"{_REPRODUCERS}/linear8bitlt_load_assign.py"),
)

_KNOWN_8BIT_EVAL = _KNOWN_8BIT + (
    Known("eager", "*_matches_spec", cause="forward-mismatch",
          link=f"{_SOURCE}/bitsandbytes/backends/default/ops.py#L57",
          reason="the CPU's int8_mm_dequant rescales the int32 product by row_stats * col_stats * 6.200124e-05, not "
                 "1 / 127**2 = 6.2000124e-05 (the CUDA kernel's MM_DEQUANT_CONST is 6.200012e-05f): every output "
                 "is 1.8e-5 too large relative to LLM.int8's rule, past the float32 tolerance (1e-5 + 1e-5 |y|) "
                 "where |y| exceeds about 1.2",
          reproducer=f"{_REPRODUCERS}/int8_mm_dequant_constant.py"),
    Known("jit_trace", cause="jit-unsupported", link=f"{_SOURCE}/bitsandbytes/_ops.py",
          reason="the LLM.int8 path calls bitsandbytes::int8_vectorwise_quant, whose schema returns an optional "
                 "tensor (the outlier columns): an output type the tracer does not support (training mode, which "
                 "dequantizes the weight instead, traces)",
          reproducer=f"{_REPRODUCERS}/linear8bitlt_eval_jit_trace.py"),
)


def build_linear_4bit(example: Example) -> nn.Module:
    import bitsandbytes as bnb

    linear = float_linear(example)
    h = example.hyper
    layer = bnb.nn.Linear4bit(linear.in_features, linear.out_features, quant_type=h["quant_type"],
                              compress_statistics=h["compress_statistics"])
    layer.load_state_dict(linear.state_dict())
    return layer.to("cpu")


def build_linear_8bit(example: Example) -> nn.Module:
    import bitsandbytes as bnb

    linear = float_linear(example)
    layer = bnb.nn.Linear8bitLt(linear.in_features, linear.out_features, has_fp16_weights=False)
    layer.load_state_dict(linear.state_dict())
    layer = layer.to("cpu")
    return layer.eval() if example.hyper["quantize_input"] else layer


def subjects() -> Iterator[Subject]:
    common = dict(library=LIBRARY.name, requires=REQUIRES, dtypes=FLOAT32, devices=CPU,
                  param_map={"bias": "bias"})
    for quant_type, compress in (("nf4", True), ("fp4", True), ("nf4", False)):
        variant = quant_type if compress else f"{quant_type},compress_statistics=False"
        yield Subject(id=f"bitsandbytes.nn.Linear4bit[{variant}]", spec="blockwise.linear_4bit",
                      build=build_linear_4bit, fixed={"quant_type": quant_type, "compress_statistics": compress,
                                                      "blocksize": 64},
                      known=_KNOWN_4BIT, **common)
    yield Subject(id="bitsandbytes.nn.Linear8bitLt", spec="blockwise.linear_int8", build=build_linear_8bit,
                  fixed={"quantize_input": False}, eval_hyper={"quantize_input": True}, known=_KNOWN_8BIT, **common)
    yield Subject(id="bitsandbytes.nn.Linear8bitLt[eval]", spec="blockwise.linear_int8", build=build_linear_8bit,
                  fixed={"quantize_input": True}, known=_KNOWN_8BIT_EVAL, **common)
