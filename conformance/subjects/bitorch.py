"""bitorch 0.4 subjects: QActivation with each input quantization, WeightDoReFa, QLinear, QConv2d and LeNet.

Adapter conventions (bitorch's, mapped onto the specs):
- every sign in bitorch gives sign(0) = +1 (``SignFunction``), except ``SteHeaviside`` (``x > 0``: sign(0) = -1);
- ``QActivation``'s gradient cancellation is ``|x| <= threshold`` (inclusive) and documented "disabled if
  threshold is 0" (the default); the adapters pass the documented values, so where the code disagrees
  (``threshold or config.gradient_cancellation_threshold`` turns 0.0 into 1.0) the cell fails against the spec;
- ``QConv2d`` binarizes first, then pads with ``pad_value`` (default -1.0, ``pad_value or config.padding_value``),
  so its pad value is the spec's ``pad_value``; it has no bias.
- ``QLinear(...)`` and ``QConv2d(...)`` return bitorch's ``LayerContainer`` (a non-module that delegates with
  ``__getattr__`` and fakes ``__class__``), as users get them: that is the object under test.

bitorch is imported only inside ``build``.
"""

from __future__ import annotations

from typing import Iterator

import torch
from hypothesis import strategies as st
from torch import nn

from ..core.types import Example, Known, Library, Subject
from . import load_parameters as _load

LIBRARY = Library("bitorch", "bitorch", "0.4.1")
REQUIRES = ("bitorch",)
SOURCE = "https://github.com/hpi-xnor/bitorch/blob/v0.4.1/bitorch"
#: The upstream pull request that reports bitorch's deepcopy and vmap failures, with their tracebacks.
DEEPCOPY_VMAP_PR = "https://github.com/hpi-xnor/bitorch/pull/4"

#: Positive gradient-cancellation thresholds: the ones bitorch's code honours as given.
_THRESHOLDS = st.sampled_from([0.5, 1.0, 2.0])


# ------------------------------------------------------------------------------------------------ adapters


def _forget_layer_recipes() -> None:
    """Drop bitorch's strong references to every QLinear/QConv built so far (kept for ``convert_layers_to``, which no
    transform uses), through its own ``LayerRegistry.clear``. Without this a CI worker keeps every layer and model
    hypothesis ever built alive: 17 GB after ~100 LeNet cells."""
    from bitorch.layers.register import all_layer_registries

    for registry in all_layer_registries():
        registry.clear()


def _quantization(name: str, example: Example):
    from bitorch import quantizations as q

    if name == "swishsign":
        return q.SwishSign(beta=example.hyper["beta"])
    if name == "inputdorefa":
        return q.InputDoReFa(bits=example.hyper["bits"])
    return q.quantization_from_name(name)()


def _qactivation(name: str, threshold_from_example: bool):
    def build(example: Example) -> nn.Module:
        from bitorch.layers import QActivation

        # QActivation's documented default, 0.0, means "gradient cancellation disabled".
        threshold = example.hyper["threshold"] if threshold_from_example else 0.0
        return QActivation(_quantization(name, example), gradient_cancellation_threshold=threshold)

    build.__name__ = f"build_qactivation_{name}"
    return build


def build_weight_dorefa(example: Example) -> nn.Module:
    from bitorch.quantizations import WeightDoReFa

    return WeightDoReFa(bits=example.hyper["bits"])


def build_qlinear(example: Example) -> nn.Module:
    from bitorch.layers import QLinear

    out_features, in_features = example.params["weight"].shape
    layer = QLinear(in_features, out_features, bias=True, input_quantization="sign", weight_quantization="sign",
                    gradient_cancellation_threshold=example.hyper["threshold"])
    _forget_layer_recipes()
    return _load(layer, {"weight": example.params["weight"], "bias": example.params["bias"]})


def build_qconv2d(example: Example) -> nn.Module:
    from bitorch.layers import QConv2d

    h = example.hyper
    weight = example.params["weight"]
    out_channels, kernel = weight.shape[0], weight.shape[-1]
    layer = QConv2d(example.x.shape[-3], out_channels, kernel, stride=h["stride"], padding=h["padding"],
                    dilation=h["dilation"], groups=h["groups"], bias=False, pad_value=h["pad_value"],
                    input_quantization="sign", weight_quantization="sign",
                    gradient_cancellation_threshold=h["threshold"])
    _forget_layer_recipes()
    return _load(layer, {"weight": weight})


def build_lenet(example: Example) -> nn.Module:
    from bitorch.models import LeNet

    # A fixed seed: every build (the subject, its baselines, the per-sample loop) must hold the same weights.
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = LeNet(input_shape=[1, example.x.shape[1], example.x.shape[2], example.x.shape[3]], num_classes=10)
    _forget_layer_recipes()
    # Evaluation mode: BatchNorm in training mode couples the samples of a batch (no per-sample gradient exists,
    # Opacus rejects it) and BatchNorm1d refuses a batch of one; bitorch's quantizers do not depend on the mode.
    return model.eval()


#: the models are built in eval mode (BatchNorm's training mode couples the samples of a batch)
_BUILT_IN_EVAL = "built in eval mode (its BatchNorm layers would couple the samples of a batch): every column runs it so"


def build_resnet18v2(example: Example) -> nn.Module:
    from bitorch.models import Resnet18V2

    # Resnet18V2 is bitorch's smallest ResNet (its Resnet spec starts at 18 layers); a fixed seed as for LeNet.
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = Resnet18V2(input_shape=[1, example.x.shape[1], example.x.shape[2], example.x.shape[3]],
                           num_classes=10)
    _forget_layer_recipes()
    return model.eval()  # as LeNet: BatchNorm in evaluation mode, no coupling of the samples of a batch


# ------------------------------------------------------------------------------------------------ known failures

_NO_SETUP_CONTEXT = "autograd-function-without-setup_context"


def _functorch_known(function: str, transforms: tuple[str, ...]) -> tuple[Known, ...]:
    reason = (f"bitorch's {function} is an autograd.Function written forward(ctx, ...) without setup_context, "
              "which torch.func (vmap/grad/jvp, Opacus' functorch path) requires")
    script = {"GradientCancellation": "reproducers/bitorch/gradient_cancellation_torch_func.py",
              "WeightDoReFaFunction": "reproducers/bitorch/weight_dorefa_torch_func.py",
              "ProgressiveSignFunctionTrain": "reproducers/bitorch/progressive_sign_torch_func.py"}[function]
    return tuple(Known(transform=t, cause=_NO_SETUP_CONTEXT, reason=reason, link=DEEPCOPY_VMAP_PR, reproducer=script)
                 for t in transforms)


_FUNC_TRANSFORMS = ("vmap", "grad", "jvp")
_DEEPCOPY_REASON = ("QLinear/QConv2d are LayerContainers whose __getattr__ reads '_layer_implementation' from "
                    "__dict__, empty on the instance copy creates before restoring state, so copy's "
                    "hasattr(y, '__setstate__') raises KeyError instead of AttributeError")


def _container_known() -> tuple[Known, ...]:
    link = f"{SOURCE}/layers/extensions/layer_container.py"
    return (
        _JIT_SCRIPT,
        Known(transform="deepcopy*", cause="deepcopy-getattr-recursion", reason=_DEEPCOPY_REASON, link=DEEPCOPY_VMAP_PR,
              reproducer="reproducers/bitorch/layer_container_deepcopy.py"),
        Known(transform="pickle*", cause="pickle-failed", reason="LayerContainer fakes __class__ (a property "
              "returning the wrapped layer's class), so pickle's __reduce_ex__ emits that class for an object whose "
              "type is LayerContainer ('args[0] from __newobj__ args has the wrong class')", link=link,
              reproducer="reproducers/bitorch/layer_container_pickle.py"),
    )


#: A layer that is a LayerContainer (not a model that holds some).
_RETURNS_INNER = Known(
    transform="module_contract", check="module_contract", cause="module-method-returned-other",
    reason="LayerContainer.__getattr__ hands every nn.Module method to the layer it wraps and patches the return "
           "value of `to` alone, so eval(), train(), requires_grad_(), double(), float() and cpu() return the inner "
           "_QLinearComposed/_QConv2dComposed: `layer = layer.eval()` drops the container",
    link=f"{SOURCE}/layers/extensions/layer_container.py#L16",
    reproducer="reproducers/bitorch/layer_container_methods_return_inner_layer.py")


_JIT_SCRIPT = Known(transform="jit_script", cause="jit-unsupported",
                    reason="TorchScript compiles Quantization's deprecated 'bitwidth' property, whose warn(..., "
                           "DeprecationWarning) call it cannot script ('Python exception cannot be used as a value')",
                    link=f"{SOURCE}/quantizations/base.py",
                    reproducer="reproducers/bitorch/quantization_jit_script_bitwidth.py")
_PRINT_BREAK = "graph-break:Dynamo does not know how to trace builtin operator  print  with argument types"


def _steheaviside_known() -> tuple[Known, ...]:
    link = f"{SOURCE}/quantizations/ste_heaviside.py"
    reason = "SteHeavisideFunction.backward calls print(...) on every backward pass, which dynamo cannot trace"
    return (
        Known(transform="eager", check="output_dtype", dtype="float64", cause="dtype-mismatch", link=link,
              reason="SteHeavisideFunction.forward builds its output with torch.where from two float32 "
                     "torch.tensor(1.0)/(-1.0) constants, so the output is float32 whatever the input dtype",
              reproducer="reproducers/bitorch/steheaviside_output_dtype.py"),
        Known(transform="eager", check="output_dtype", dtype="bfloat16", cause="dtype-mismatch", link=link,
              reason="SteHeavisideFunction.forward builds its output from float32 constants: bfloat16 in, "
                     "float32 out", reproducer="reproducers/bitorch/steheaviside_output_dtype.py"),
        Known(transform="eager", check="grad_matches_spec", dtype="float64", cause="grad-mismatch", link=link,
              reason="its float32 output rounds the gradient reaching it to float32, which its straight-through "
                     "backward passes on: a float64 input's gradient is float32-accurate",
              reproducer="reproducers/bitorch/steheaviside_float64_gradient_float32.py"),
        Known(transform="compile_*", cause=_PRINT_BREAK, reason=reason, link=link,
              reproducer="reproducers/bitorch/steheaviside_compile_print.py"),
    )


_OPACUS_DEEPCOPY = Known(transform="opacus_*", cause="deepcopy-getattr-recursion", link=DEEPCOPY_VMAP_PR,
                         reason="Opacus computes per-sample gradients of a layer it has no sampler for through "
                                "functorch, whose make_functional deep-copies the layer: the LayerContainer "
                                "KeyError of the deepcopy cells",
                         reproducer="reproducers/bitorch/layer_container_opacus.py")


def _threshold_zero_known(function: str) -> tuple[Known, ...]:
    # eager, and the module built in float32 then converted (conversions.py): the same threshold in every dtype
    return tuple(Known(transform=column, check="grad_matches_spec", cause="grad-mismatch",
                       reason=f"QActivation documents gradient_cancellation_threshold=0 as 'disabled', but __init__ "
                              f"does 'threshold or config.gradient_cancellation_threshold', so 0.0 becomes 1.0 and the "
                              f"{function} gradient is zeroed for |x| > 1",
                       link=f"{SOURCE}/layers/qactivation.py",
                       reproducer="reproducers/bitorch/qactivation_threshold_zero_not_disabled.py")
                 for column in ("eager", "to_float64", "half"))


_LAYER_LEVEL = "a layer-level transform: Resnet18V2 is a model-level row (LeNet and bitorch's layer rows cover it)"
_RESNET_NOT_APPLICABLE = {t: _LAYER_LEVEL for t in ("vmap", "grad", "jvp", "compile_aot_eager", "compile_inductor",
                                                     "compile_dynamic", "jit_script", "jit_trace", "export",
                                                     "checkpoint", "cpu_vs_cuda", "autocast_bf16", "autocast_fp16",
                                                     "onnx")}


# ------------------------------------------------------------------------------------------------ declarations


TORCH_AUTOCAST = "https://pytorch.org/docs/stable/amp.html#cuda-ops-that-can-autocast-to-float16"
#: What a binarized model shows on CUDA (the H200 run): properties of sign() and of torch's CUDA defaults.
_CUDA_MODEL_KNOWN: tuple[Known, ...] = (
    Known(transform="autocast_*", cause="transform-changed-forward", also=("transform-changed-grad",),
          link=TORCH_AUTOCAST,
          reason="autocast runs the convolutions and linear layers in bfloat16/float16: a pre-activation near 0 "
                 "changes sign after rounding, the binarized activation flips between -1 and +1, and every later "
                 "layer sees a different input (19 of 20 logits moved, by up to 0.5). A binarized network is not "
                 "autocast-safe by construction; not a bitorch defect",
          reproducer="reproducers/bitorch/lenet_autocast_flips_signs.py"),
    Known(transform="cpu_vs_cuda", check="preserves_*", cause="transform-changed-grad",
          also=("transform-changed-forward",),
          link="https://pytorch.org/docs/stable/notes/cuda.html",
          reason="cuDNN convolutions sum in another order than the CPU's, in float32 on both (TF32 off): a binarized "
                 "activation whose input sits near 0 flips sign, and the logits downstream (by up to 0.6 on the "
                 "H100) and the gradients upstream change, over the 1e-5 float32 tolerance. Not a bitorch defect; "
                 "the cells keep it",
          reproducer="reproducers/bitorch/lenet_cuda_conv_grad_differs.py"),
)


_ONNX_SIGN_FLIPS = Known(
    transform="onnx", cause="transform-changed-forward", link="https://pytorch.org/docs/stable/onnx_dynamo.html",
    reason="onnxruntime's convolutions sum in another order than torch's (7e-7 on the first conv's outputs, every "
           "layer alone agrees within 1e-5); a binarized activation whose input sits within that rounding of 0 flips "
           "sign and every later layer sees another input: the logits move by up to ~0.5. A property of sign() on "
           "rounding differences, as on CUDA; not an exporter or bitorch defect",
    reproducer="reproducers/bitorch/lenet_onnx_sign_flips.py")


def _subject(name: str, spec: str, build, *, known: tuple[Known, ...] = (), **fields) -> Subject:
    return Subject(id=f"bitorch.{name}", spec=spec, build=build, library=LIBRARY.name, requires=REQUIRES,
                   known=known, **fields)


def subjects() -> Iterator[Subject]:
    sign = {"zero_value": 1.0}
    yield _subject("QActivation[sign]", "quant.sign_ste", _qactivation("sign", False), fixed=sign,
                   known=(*_threshold_zero_known("sign STE"), _JIT_SCRIPT,
                          *_functorch_known("GradientCancellation", _FUNC_TRANSFORMS)))
    yield _subject("QActivation[sign,cancel]", "quant.sign_clipped_ste", _qactivation("sign", True),
                   fixed=dict(sign, threshold=_THRESHOLDS, inclusive=True),
                   known=(_JIT_SCRIPT, *_functorch_known("GradientCancellation", _FUNC_TRANSFORMS)))
    yield _subject("QActivation[approxsign]", "quant.approx_sign", _qactivation("approxsign", False), fixed=sign,
                   known=(_JIT_SCRIPT, *_functorch_known("GradientCancellation", _FUNC_TRANSFORMS)))
    # beta <= 2 keeps SwishSign's gradient above tolerance on 1 < |x| <= 4 (at beta 5 it vanishes past |x| ~ 2.5,
    # which would make the cancellation finding depend on the drawn x).
    yield _subject("QActivation[swishsign]", "quant.swish_sign", _qactivation("swishsign", False),
                   fixed=dict(sign, beta=st.sampled_from([1.0, 2.0])),
                   known=(*_threshold_zero_known("SwishSign"), _JIT_SCRIPT,
                          *_functorch_known("GradientCancellation", _FUNC_TRANSFORMS)))
    yield _subject("QActivation[inputdorefa]", "quant.dorefa_activation", _qactivation("inputdorefa", False),
                   fixed={"gradient": "identity"},
                   known=(*_threshold_zero_known("InputDoReFa identity-STE"), _JIT_SCRIPT,
                          *_functorch_known("GradientCancellation", _FUNC_TRANSFORMS)))
    yield _subject("QActivation[steheaviside]", "quant.sign_clipped_ste", _qactivation("steheaviside", False),
                   fixed={"zero_value": -1.0, "threshold": 1.0, "inclusive": True},
                   known=(*_steheaviside_known(), _JIT_SCRIPT,
                          *_functorch_known("GradientCancellation", _FUNC_TRANSFORMS)))
    # progressive_sign as constructed by default (its scale from bitorch's global schedule): no spec has it, so
    # every transform is judged against the eager activation
    progressive_in_training = ("ProgressiveSign applies its progressive (scaled) sign 'during training' only "
                               "(quantizations/progressive_sign.py: `if self.training`) and the plain sign in eval "
                               "mode: eval mode computes otherwise by design, and no spec states either")
    yield _subject("QActivation[progressive_sign]", "model.features_layer", _qactivation("progressive_sign", False),
                   not_applicable={"eager:output_dtype": "an opaque spec (fn=None) declares no output dtype",
                                   "eval:preserves_forward": progressive_in_training,
                                   "eval:preserves_grad": progressive_in_training},
                   known=(_JIT_SCRIPT, *_functorch_known("ProgressiveSignFunctionTrain", _FUNC_TRANSFORMS)))
    yield _subject("WeightDoReFa", "quant.dorefa_weight", build_weight_dorefa, fixed={"gradient": "identity"},
                   known=(_JIT_SCRIPT, *_functorch_known("WeightDoReFaFunction", _FUNC_TRANSFORMS)))

    layer = dict(input_quant="clipped_ste", threshold=_THRESHOLDS, zero_value=1.0, weight_scaling="none")
    per_sample = ("vmap", "grad", "jvp", "per_sample_grad")
    yield _subject("QLinear", "layer.binary_linear", build_qlinear, fixed=dict(layer, bias=True),
                   param_map={"weight": "weight", "bias": "bias"},
                   known=(*_container_known(), _RETURNS_INNER, _OPACUS_DEEPCOPY,
                          *_functorch_known("GradientCancellation", per_sample)))
    conv = dict(layer, bias=False)
    yield _subject("QConv2d", "layer.binary_conv2d", build_qconv2d,
                   fixed=dict(conv, pad_value=st.sampled_from([-1.0, 1.0])), param_map={"weight": "weight"},
                   known=(*_container_known(), _RETURNS_INNER, _OPACUS_DEEPCOPY,
                          *_functorch_known("GradientCancellation", per_sample)))
    yield _subject("QConv2d[pad_value=0]", "layer.binary_conv2d", build_qconv2d,
                   fixed=dict(conv, pad_value=0.0, padding=1), param_map={"weight": "weight"},
                   # the spec checks of the eager cells and of the conversion columns (conversions.py)
                   known=(*(Known(transform=transform, check="*_matches_spec", cause="forward-mismatch",
                                  also=("grad-mismatch",),
                                  reason="QConv2d_NoAct does 'pad_value or config.padding_value', so an explicit "
                                         "pad_value=0.0 pads the binarized input with -1.0 (the border outputs "
                                         "differ, and so does the weight gradient, which reads the padded input)",
                                  link=f"{SOURCE}/layers/qconv2d.py",
                                  reproducer="reproducers/bitorch/qconv2d_pad_value_zero_ignored.py")
                            for transform in ("eager", "to_float64", "half")),
                          *_container_known(), _RETURNS_INNER, _OPACUS_DEEPCOPY,
                          *_functorch_known("GradientCancellation", per_sample)))
    yield _subject("LeNet", "model.image_classifier", build_lenet, fixed={"batch": 2, "channels": 1, "size": 28},
                   param_map={"conv1.weight": "_model.0.weight", "qconv.weight": "_model.4.weight",
                              "qlinear.weight": "_model.10.weight", "fc.weight": "_model.13.weight"},
                   not_applicable={"eager:output_dtype": "check_output_dtype reads the spec's output dtype, which an "
                                   "opaque model (fn=None) does not have: it raises AttributeError in the harness",
                                   "compile_inductor": "inductor compiles the whole model's forward+backward in ~30 s "
                                   "per example on one CPU thread, over the CI cell budget; compile_aot_eager covers "
                                   "dynamo's capture of the model",
                                   "compile_dynamic": "as compile_inductor (inductor, whole model, over the CI budget)",
                                   "eval": _BUILT_IN_EVAL},
                   known=(*_container_known(), *_CUDA_MODEL_KNOWN, _ONNX_SIGN_FLIPS,
                          Known(transform="opacus_*", cause="opacus-failed", link=DEEPCOPY_VMAP_PR,
                                reason="LeNet has BatchNorm layers (buffers), which Opacus' strict GradSampleModule "
                                       "refuses; bitorch pull request 4 ran ModuleValidator.fix first (bitorch's own per-sample "
                                       "failure shows under per_sample_grad and vmap)",
                                reproducer="reproducers/bitorch/model_batchnorm_opacus.py"),
                          *_functorch_known("GradientCancellation", per_sample)))
    # The whole ResNet only where a model-level property is asked (copies, state, per-sample gradients, hooks); the
    # layer-level transforms are covered by its layers' own rows and by LeNet. Measured on the 2-core host (one torch
    # thread): build 0.4 s, forward+backward of 2x3x16x16 0.7 s, so a cell of 5 examples stays under ~10 s.
    yield _subject("Resnet18V2", "model.image_classifier", build_resnet18v2,
                   fixed={"batch": 2, "channels": 3, "size": 16},
                   param_map={"bn_in.weight": "_model.features.0.weight", "conv1.weight": "_model.features.1.weight",
                              "qconv.weight": "_model.features.2.0.body.0.weight",
                              "fc.weight": "_model.output_layer.weight"},
                   not_applicable={**_RESNET_NOT_APPLICABLE,
                                   "eager:output_dtype": "check_output_dtype reads the spec's output dtype, which an "
                                   "opaque model (fn=None) does not have", "eval": _BUILT_IN_EVAL},
                   known=(*(k for k in _container_known() if k.transform != "jit_script"),
                          *_functorch_known("GradientCancellation", ("per_sample_grad",)),
                          Known(transform="opacus_*", cause="opacus-failed", link=DEEPCOPY_VMAP_PR,
                                reason="Resnet18V2 has BatchNorm layers (buffers), which Opacus' strict "
                                       "GradSampleModule refuses",
                                reproducer="reproducers/bitorch/model_batchnorm_opacus.py")))
