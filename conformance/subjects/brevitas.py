"""brevitas 0.13 subjects: QuantIdentity (binary, ternary, int), QuantReLU, and binary-weight QuantLinear/QuantConv2d.

brevitas quantizers are dependency-injected configurations; each adapter overrides only documented injector
attributes (``scaling_impl_type``, ``max_val``, ``bit_width``, ``scaling_const``) so the scale is a known constant:
- activations: with ``scaling_impl_type="const"`` the scale is ``max_val / 2^(bits-1)`` (signed) or
  ``max_val / (2^bits - 1)`` (unsigned), zero point 0, ``torch.round`` (half to even), and the STE passes the
  gradient where the rounded integer lies inside the range: the ``quant.uniform`` spec. The adapters draw the
  spec's ``scale`` from powers of two, so ``max_val`` and back are exact;
- ``SignedBinaryActPerTensorConst``: clamp to [-1, 1] (autograd's clamp: gradient 1 on the closed interval),
  then ``binary_sign`` (``x >= 0`` -> +1): ``quant.sign_clipped_ste`` with threshold 1, inclusive, sign(0) = +1;
- ``SignedBinaryWeightPerTensorConst`` with ``weight_scaling_const=1.0`` (default 0.1): ``sign(W)`` with an
  identity STE (its clamp is ``InplaceTensorClampSte``): the binary layers with ``input_quant="none"`` (brevitas
  leaves the input float unless ``input_quant`` is set) and ``weight_scaling="none"``; QuantConv2d zero-pads.

Not declared, because no spec has brevitas' semantics and no hyperparameter makes one match:
- ternary/int *weight* quantizers inside QuantLinear/QuantConv2d: there is no ternary/int layer spec;
- ``quant.ternary`` (TWN, threshold ``0.7 * mean|x|`` from the tensor): brevitas' ternary quantizers are 2-bit
  narrow-range integers with a constant scale (threshold ``scale / 2``), declared here as ``quant.uniform``;
- stats-initialised/learned scales (``Int8ActPerTensorFloat``'s default, ``Int8WeightPerTensorFloat``).

Declared without a spec (``model.features_layer``, ``model.image_classifier``), every transform judged against the
eager layer: QuantIdentity, QuantReLU, QuantLinear and QuantConv2d as constructed by default (activation scales
from the first training batches' statistics, ``Int8WeightPerTensorFloat`` weights, float input).

brevitas is imported only inside ``build``.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

from hypothesis import strategies as st
from torch import nn

from ..core.types import Example, Known, Library, Subject
from ..transforms.bdpy import POSITIONAL_LINK, TUPLE_OUTPUT_LINK
from . import load_parameters as _load

LIBRARY = Library("brevitas", "brevitas", "0.13.4",
                  dependencies=("dependencies==2.0.1", "unfoldNd"), history=("0.13.1",))
REQUIRES = ("brevitas",)
SOURCE = "https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas"

#: Powers of two: exact as scale and as max_val in every dtype.
_SCALES = st.sampled_from([0.25, 0.5, 1.0])


def _max_val(hyper) -> float:
    levels = 2 ** (hyper["bits"] - 1) if hyper["signed"] else 2 ** hyper["bits"] - 1
    return float(hyper["scale"]) * levels


def build_identity_binary(example: Example) -> nn.Module:
    from brevitas.nn import QuantIdentity
    from brevitas.quant import SignedBinaryActPerTensorConst

    return QuantIdentity(act_quant=SignedBinaryActPerTensorConst)


def build_identity_ternary(example: Example) -> nn.Module:
    from brevitas.nn import QuantIdentity
    from brevitas.quant import SignedTernaryActPerTensorConst

    # 2-bit narrow signed: levels {-1, 0, 1} * scale; its range is +-max_val = scale.
    return QuantIdentity(act_quant=SignedTernaryActPerTensorConst, max_val=float(example.hyper["scale"]),
                         min_val=-float(example.hyper["scale"]))


def build_identity_int(example: Example) -> nn.Module:
    from brevitas.nn import QuantIdentity
    from brevitas.quant import Int8ActPerTensorFloat

    m = _max_val(example.hyper)
    return QuantIdentity(act_quant=Int8ActPerTensorFloat, bit_width=example.hyper["bits"], scaling_impl_type="const",
                         max_val=m, min_val=-m)


def build_relu(example: Example) -> nn.Module:
    from brevitas.nn import QuantReLU

    return QuantReLU(bit_width=example.hyper["bits"], scaling_impl_type="const", max_val=_max_val(example.hyper))


def build_linear_binary(example: Example) -> nn.Module:
    from brevitas.nn import QuantLinear
    from brevitas.quant import SignedBinaryWeightPerTensorConst

    out_features, in_features = example.params["weight"].shape
    layer = QuantLinear(in_features, out_features, bias=True, weight_quant=SignedBinaryWeightPerTensorConst,
                        weight_scaling_const=1.0)
    return _load(layer, {"weight": example.params["weight"], "bias": example.params["bias"]})


def build_conv2d_binary(example: Example) -> nn.Module:
    from brevitas.nn import QuantConv2d
    from brevitas.quant import SignedBinaryWeightPerTensorConst

    h, weight = example.hyper, example.params["weight"]
    layer = QuantConv2d(example.x.shape[-3], weight.shape[0], weight.shape[-1], stride=h["stride"],
                        padding=h["padding"], dilation=h["dilation"], groups=h["groups"], bias=True,
                        weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0)
    return _load(layer, {"weight": weight, "bias": example.params["bias"]})


_PICKLE = Known(transform="pickle*", cause="pickle-failed", link=f"{SOURCE}/inject/__init__.py",
                reproducer="reproducers/brevitas/pickle_quantizer_injector.py",
                reason="quant layers keep their quantizer injectors (classes such as NoneActQuant, or ones derived by "
                       "keyword overrides) which pickle cannot find by name ('attribute lookup ... failed')")


#: The STE Functions a subject meets first (the reproducers' docstrings show each).
_WEIGHT_STE = "InplaceTensorClampSteFn, then BinarySignSteFn"
_UINT_STE = "AbsBinarySignGradFn, then RoundSteFn"


def _no_setup_context(function: str, transforms: tuple[str, ...], reproducer: str) -> tuple[Known, ...]:
    reason = (f"brevitas' STE autograd.Functions (ops/autograd_ste_ops.py; here {function}) are written "
              "forward(ctx, ...) without setup_context, which torch.func requires")
    return tuple(Known(transform=t, cause="autograd-function-without-setup_context", reason=reason,
                       link=f"{SOURCE}/ops/autograd_ste_ops.py", reproducer=reproducer) for t in transforms)


_JIT_SCRIPT = Known(transform="jit_script", cause="jit-unsupported", link=f"{SOURCE}/common.py",
                    reproducer="reproducers/brevitas/jit_script_export_mode_setter_recursive.py",
                    reason="TorchScript cannot compile the quant proxies' export_mode property: its setter assigns "
                           "self.export_mode again ('method __export_mode_setter is called recursively')")
_JIT_TRACE = Known(transform="jit_trace", check="preserves_grad", cause="transform-changed-grad",
                   link=f"{SOURCE}/function/ops_ste.py",
                   reproducer="reproducers/brevitas/jit_trace_ste_gradient_lost.py",
                   reason="while torch.jit tracing, brevitas' *_ste functions return the plain op (torch.round, "
                          "binary_sign, ...) instead of the STE autograd.Function (a choice for ONNX export), so the "
                          "traced module's straight-through gradients become zero")
_COMMON = (_PICKLE, _JIT_SCRIPT, _JIT_TRACE)
_OPACUS = Known(transform="opacus_*", cause="opacus-failed", link=f"{SOURCE}/proxy/quant_proxy.py",
                reproducer="reproducers/brevitas/opacus_trainable_layer_with_buffers.py",
                reason="every quant proxy registers a StatelessBuffer '_zero_hw_sentinel', and Opacus' strict "
                       "GradSampleModule refuses trainable layers with buffers ('Model contains a trainable layer "
                       "with buffers')")
_WEIGHT_CLAMP = "weight's in-place clamp: tensor_clamp_ (torch.min(..., out=x)) on a Parameter that requires grad"
_BINARY_WEIGHT = (
    _PICKLE, _JIT_SCRIPT,
    Known(transform="jit_trace", cause="jit-unsupported", link=f"{SOURCE}/function/ops_ste.py",
          reproducer="reproducers/brevitas/jit_trace_binary_weight_inplace_clamp.py",
          reason="while tracing, tensor_clamp_ste_ returns the plain in-place tensor_clamp_ instead of "
                 "InplaceTensorClampSteFn: the binary weight quantizer then runs torch.min(..., out=weight) on a "
                 "Parameter that requires grad, which autograd refuses ('functions with out=... arguments don't "
                 "support automatic differentiation')"),
    Known(transform="export", cause="export-failed", link=f"{SOURCE}/function/ops_ste.py",
          reproducer="reproducers/brevitas/export_binary_weight_inplace_clamp.py",
          reason="torch.export fails in the same place as jit_trace: the binary " + _WEIGHT_CLAMP),
    Known(transform="eval", check="eval_keeps_state", cause="state-changed-in-eval",
          link="https://github.com/Xilinx/brevitas/issues/282",
          reproducer="reproducers/brevitas/eval_binary_weight_inplace_clamp.py",
          reason="the binary weight quantizer clamps the weight Parameter to [-scale, scale] in place on every forward "
                 "(InplaceTensorClampSte, added on purpose: BinaryConnect's clipping of the latent weights in "
                 "training), in eval mode too: inference rewrites weights loaded from elsewhere"),
)
_FUNC = ("vmap", "grad", "jvp")
_PER_SAMPLE = _FUNC + ("per_sample_grad",)
_BINARY_FUNC = "reproducers/brevitas/binary_sign_ste_torch_func_without_setup_context.py"
_ROUND_FUNC = "reproducers/brevitas/round_ste_torch_func_without_setup_context.py"


#: IntQuant's default argument, evaluated once: the integer activation quantizers without their own clamp share it
_SHARED_CLAMP = Known(
    transform="module_contract", check="independent_builds", cause="module-shared-between-builds",
    link=f"{SOURCE}/core/quant/int_base.py", reproducer="reproducers/brevitas/int_quant_default_tensor_clamp_shared.py",
    reason="IntQuant.__init__ declares tensor_clamp_impl: Module = TensorClamp(), a default argument evaluated once: "
           "every integer activation quantizer built without its own clamp holds that one instance, so a hook, "
           "mode or attribute set on one layer's clamp reaches all of them")


#: bdpy's FeatureExtractor on a brevitas layer, asked for the layer and every submodule that runs (checked on 0.13.4).
_BDPY = (
    Known(transform="bdpy_features", cause="hook-capture-mislabelled", link=POSITIONAL_LINK,
          reproducer="reproducers/brevitas/bdpy_features_positional_mislabel.py",
          reason="the scaling's restrict_value_impl (and its apply_abs) runs twice per forward, and bdpy's run() pairs "
                 "hook outputs with layer names by position (features[layer] = outputs[i]): every later feature, the "
                 "layer's own included, is another module's output (a proxy's tuple, a QuantTensor, a Parameter)"),
    Known(transform="bdpy_features_detach", cause="forward-raised", link=TUPLE_OUTPUT_LINK,
          reproducer="reproducers/brevitas/bdpy_features_detach_tuple_output.py",
          reason="the quant proxies return tuples and QuantTensors, on which FeatureExtractorHandleDetach's "
                 "module_out.detach() raises AttributeError inside forward"),
)


#: A finding of the H200 run (CUDA, torch 2.11), applied only there.
_VMAP_RENAME_211 = Known(
    transform="vmap", cause="vmap-unsupported", link=f"{SOURCE}/utils/torch_utils.py#L25", device="cuda",
    torch="2.11*", reproducer="reproducers/brevitas/vmap_rename_no_batching_rule_torch211.py",
    reason="with torch 2.11 vmap stops before the STE Function: the quant proxies rename tensor dimensions "
           "(brevitas.utils.torch_utils.rename_, named tensors), and aten::rename has no batching rule ('Batching "
           "rule not implemented for aten::rename'); torch 2.13 gets past it to the setup_context error")


def _subject(name: str, spec: str, build, *, known: tuple[Known, ...] = (), bdpy: tuple[Known, ...] = _BDPY,
             **fields) -> Subject:
    return Subject(id=f"brevitas.{name}", spec=spec, build=build, library=LIBRARY.name, requires=REQUIRES,
                   known=(_VMAP_RENAME_211,) + known + bdpy, **fields)


#: brevitas' QCDQ export handler asserts a bit width above 1 for every binary quantizer
_QCDQ_BINARY = Known(
    transform="brevitas_qcdq", cause="onnx-export-failed",
    link="https://github.com/Xilinx/brevitas/tree/master/src/brevitas/export/onnx/standard/qcdq",
    reason="export_onnx_qcdq raises 'Binary quant not supported' for a binary (1-bit) quantizer: binary layers export "
           "only through QONNX's BipolarQuant, a custom op onnxruntime does not run",
    reproducer="reproducers/brevitas/qcdq_binary_not_supported.py")


def build_identity_default(example: Example) -> nn.Module:
    from brevitas.nn import QuantIdentity

    return QuantIdentity()


def build_relu_default(example: Example) -> nn.Module:
    from brevitas.nn import QuantReLU

    return QuantReLU()


def build_linear_default(example: Example) -> nn.Module:
    """QuantLinear(4, 3) as constructed by default (Int8WeightPerTensorFloat weights, float input and bias), with
    weights drawn from the example's seed."""
    import torch
    from brevitas.nn import QuantLinear

    layer = QuantLinear(example.x.shape[-1], 3, bias=True)
    gen = torch.Generator().manual_seed(example.hyper.get("seed", 0) + 5)
    return _load(layer, {"weight": torch.randn(3, example.x.shape[-1], generator=gen, dtype=torch.float64),
                         "bias": torch.randn(3, generator=gen, dtype=torch.float64)})


def build_conv2d_default(example: Example) -> nn.Module:
    """QuantConv2d(C, 2, 3) as constructed by default (Int8WeightPerTensorFloat weights), weights drawn from a fixed
    seed."""
    import torch
    from brevitas.nn import QuantConv2d

    layer = QuantConv2d(example.x.shape[-3], 2, 3, bias=True)
    gen = torch.Generator().manual_seed(5)
    return _load(layer, {"weight": torch.randn(2, example.x.shape[-3], 3, 3, generator=gen, dtype=torch.float64),
                         "bias": torch.randn(2, generator=gen, dtype=torch.float64)})


def _for_default_layers(known: Known, reproducer: str) -> Known:
    return dataclasses.replace(known, reproducer=f"reproducers/brevitas/default_layers_{reproducer}.py")


#: The configured layers' findings, shown again by the layers as constructed by default (their own reproducers)
_DEFAULTS = (
    _for_default_layers(_PICKLE, "pickle"),
    _for_default_layers(_JIT_SCRIPT, "jit_script"),
    Known(transform="jit_trace", check="preserves_grad", cause="transform-changed-grad",
          link=f"{SOURCE}/function/ops_ste.py", reproducer="reproducers/brevitas/default_layers_jit_trace_gradient.py",
          reason="while torch.jit tracing, brevitas' round_ste returns torch.round instead of the STE "
                 "autograd.Function (a choice for ONNX export): the traced layer's gradients lose their "
                 "straight-through part, only the scale's path is left"),
)
_DEFAULT_FUNC = "reproducers/brevitas/default_layers_torch_func_without_setup_context.py"
_DEFAULT_WEIGHT_LAYERS = (*_DEFAULTS, _for_default_layers(_OPACUS, "opacus"),
                          *_no_setup_context(_UINT_STE, _PER_SAMPLE, _DEFAULT_FUNC))
_DEFAULT_ACTIVATIONS = (
    *_DEFAULTS, _SHARED_CLAMP, *_no_setup_context(_UINT_STE, _FUNC, _DEFAULT_FUNC),
    Known(transform="state_dict", check="preserves_grad", cause="transform-changed-grad",
          link=f"{SOURCE}/core/scaling/standalone.py",
          reproducer="reproducers/brevitas/default_act_state_dict_ends_calibration.py",
          reason="the default activation scale is collected from the first 300 training batches; a state_dict taken "
                 "before then saves the running statistic as the scale parameter (not the step count), and "
                 "load_state_dict ends the collection: the restored layer keeps a fixed scale where its source goes "
                 "on updating it from each batch, so their next training steps differ"),
    *(Known(transform=transform, cause="state-dict-mismatch", link="https://github.com/Xilinx/brevitas/issues/420",
            reproducer="reproducers/brevitas/default_act_fresh_state_dict_missing_scale.py",
            reason="the default activation scale is collected from runtime statistics: before the first training "
                   "batch its parameter 'value' is not in the state_dict, but a strict load_state_dict asks for it, so "
                   "a freshly built layer refuses the state_dict of another freshly built one ('Missing key(s)')")
      for transform in ("save_load", "load_assign", "safetensors")),
)


#: the default activation scale (ParameterFromRuntimeStatsScaling) is computed otherwise in each mode, by design
_RUNTIME_STATS = ("the default activation scale (core/scaling/standalone.py, ParameterFromRuntimeStatsScaling) is the "
                  "batch's own statistic in training mode (collecting it) and the statistic collected so far in eval "
                  "mode")
_RUNTIME_STATS_MODES = {
    "eval:preserves_forward": _RUNTIME_STATS + ": eval mode computes otherwise by design, and no spec states either",
    "eval:preserves_grad": _RUNTIME_STATS + ": eval mode computes otherwise by design, and no spec states either",
}


def subjects() -> Iterator[Subject]:
    per_tensor = dict(zero_point=0, rounding="half_even", channel_dim=None, scale=_SCALES)
    yield _subject("QuantIdentity[binary]", "quant.sign_clipped_ste", build_identity_binary,
                   fixed={"zero_value": 1.0, "threshold": 1.0, "inclusive": True},
                   known=(*_COMMON, *_no_setup_context("BinarySignSteFn", _FUNC, _BINARY_FUNC), _QCDQ_BINARY))
    yield _subject("QuantIdentity[ternary]", "quant.uniform", build_identity_ternary,
                   fixed=dict(per_tensor, bits=2, signed=True, narrow_range=True),
                   known=(*_COMMON, *_no_setup_context("RoundSteFn", _FUNC, _ROUND_FUNC)))
    yield _subject("QuantIdentity[int]", "quant.uniform", build_identity_int,
                   fixed=dict(per_tensor, bits=st.integers(2, 4), signed=True, narrow_range=False),
                   known=(*_COMMON, *_no_setup_context(_UINT_STE, _FUNC, _ROUND_FUNC), _SHARED_CLAMP))
    yield _subject("QuantReLU", "quant.uniform", build_relu,
                   fixed=dict(per_tensor, bits=st.integers(1, 4), signed=False, narrow_range=False),
                   not_applicable={"grad_matches_spec": "QuantReLU quantizes relu(x): its gradient is 0 for "
                                   "-scale/2 < x <= 0, where the quantizer's STE (the spec) passes it; a different "
                                   "op by design, the forward is the spec's"},
                   known=(*_COMMON, *_no_setup_context(_UINT_STE, _FUNC, _ROUND_FUNC), _SHARED_CLAMP))
    binary = dict(input_quant="none", zero_value=1.0, weight_scaling="none", bias=True)
    yield _subject("QuantLinear[binary]", "layer.binary_linear", build_linear_binary, fixed=binary,
                   param_map={"weight": "weight", "bias": "bias"},
                   known=(*_BINARY_WEIGHT, _OPACUS, *_no_setup_context(_WEIGHT_STE, _PER_SAMPLE, _BINARY_FUNC),
                          _QCDQ_BINARY))
    yield _subject("QuantConv2d[binary]", "layer.binary_conv2d", build_conv2d_binary,
                   fixed=dict(binary, pad_value=0.0), param_map={"weight": "weight", "bias": "bias"},
                   known=(*_BINARY_WEIGHT, _OPACUS, *_no_setup_context(_WEIGHT_STE, _PER_SAMPLE, _BINARY_FUNC),
                          _QCDQ_BINARY))
    # brevitas' layers as constructed by default: no spec fits (scales from the batch's or the weight's statistics),
    # so every transform is judged against the eager layer. The activation quantizers' parts run once per forward,
    # so bdpy pairs their features right and its by-reference finding (transforms/bdpy.py) shows instead.
    opaque = {"eager:output_dtype": "an opaque spec (fn=None) declares no output dtype"}
    weights = {"weight": "weight", "bias": "bias"}
    for name, build in (("QuantIdentity[default]", build_identity_default), ("QuantReLU[default]", build_relu_default)):
        yield _subject(name, "model.features_layer", build, not_applicable={**opaque, **_RUNTIME_STATS_MODES},
                       known=_DEFAULT_ACTIVATIONS, bdpy=_BDPY[1:])
    yield _subject("QuantLinear[default]", "model.features_layer", build_linear_default, not_applicable=opaque,
                   param_map=weights, known=_DEFAULT_WEIGHT_LAYERS)
    yield _subject("QuantConv2d[default]", "model.image_classifier", build_conv2d_default, not_applicable=opaque,
                   fixed={"channels": 1, "size": 6}, param_map=weights, known=_DEFAULT_WEIGHT_LAYERS)
