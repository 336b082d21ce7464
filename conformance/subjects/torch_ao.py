"""PyTorch's own quantized ops (torch 2.13, CPU kernels): fake quantization per tensor and per channel, the learnable
fake quantizer, torch.ao's ``FakeQuantize`` with its default observer, and the dynamically quantized Linear.

The functional ops are held as users hold them in a model: a small module whose buffers (or, for the learnable
quantizer, parameters) are the scale and zero point, as torch.ao's ``FakeQuantize`` and ``_LearnableFakeQuantize``
keep theirs. torch's kernels take the scale as a C ``float``; the subjects run in float32 only (a float64 or
bfloat16 scale buffer, which ``module.to(dtype)`` makes, is refused by the per-channel kernel), and the learnable
quantizer's kernels are float32 only.

``FakeQuantize()`` as constructed by default (``MovingAverageMinMaxObserver``, quint8, 0..255, per-tensor affine) is
judged on its first call: its observer has then seen only the input, so the scale and zero point are the min/max
rule of ``affine.choose_qparams`` (asymmetric, 0..255) applied to that input (``affine.observed_fake_quantize``).

``torch.ao.nn.quantized.dynamic.Linear`` is built as its docs show, ``from_float`` of an ``nn.Linear`` holding the
example's weight and bias with ``default_dynamic_qconfig`` (weight: ``MinMaxObserver``, qint8, per-tensor symmetric;
activation: quantized on each call, fbgemm's reduced range 0..127): ``affine.dynamic_linear``. It has no gradient
and runs on the CPU only (fbgemm).

torch is imported by every module of this suite; the subjects need nothing installed.
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import nn

from ..core.types import Example, Known, Library, Subject
from . import float_linear, load_parameters

LIBRARY = Library("torch", "torch", "2.13.0", gpu=False)

#: The subjects' cells: float32 only (see the module docstring).
FLOAT32 = frozenset({"float32"})


class PerTensorFakeQuantize(nn.Module):
    """``torch.fake_quantize_per_tensor_affine`` with the scale (float32) and zero point (int32) as buffers."""

    def __init__(self, scale: float, zero_point: int, quant_min: int, quant_max: int):
        super().__init__()
        self.register_buffer("scale", torch.tensor([scale], dtype=torch.float32))
        self.register_buffer("zero_point", torch.tensor([zero_point], dtype=torch.int32))
        self.quant_min, self.quant_max = quant_min, quant_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fake_quantize_per_tensor_affine(x, self.scale, self.zero_point, self.quant_min, self.quant_max)


class PerChannelFakeQuantize(nn.Module):
    """``torch.fake_quantize_per_channel_affine`` along ``axis``; the op takes a non-negative axis, so a negative one
    (counted from the end, as the spec's) is resolved against each input's dims."""

    def __init__(self, scale, zero_point, axis: int, quant_min: int, quant_max: int):
        super().__init__()
        self.register_buffer("scale", torch.tensor(scale, dtype=torch.float32))
        self.register_buffer("zero_point", torch.tensor(zero_point, dtype=torch.int32))
        self.axis, self.quant_min, self.quant_max = axis, quant_min, quant_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fake_quantize_per_channel_affine(x, self.scale, self.zero_point, self.axis % x.dim(),
                                                      self.quant_min, self.quant_max)


class LearnableFakeQuantize(nn.Module):
    """``torch._fake_quantize_learnable_per_tensor_affine`` with scale and zero point as parameters of shape (1,), as
    torch.ao's ``_LearnableFakeQuantize`` holds them."""

    def __init__(self, example: Example):
        super().__init__()
        self.scale = nn.Parameter(example.params["scale"].detach().to(torch.float32).clone())
        self.zero_point = nn.Parameter(example.params["zero_point"].detach().to(torch.float32).clone())
        self.quant_min, self.quant_max = example.hyper["quant_min"], example.hyper["quant_max"]
        self.grad_factor = example.hyper["grad_factor"]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch._fake_quantize_learnable_per_tensor_affine(x, self.scale, self.zero_point, self.quant_min,
                                                                self.quant_max, self.grad_factor)


def build_per_tensor(example: Example) -> nn.Module:
    h = example.hyper
    return PerTensorFakeQuantize(h["scale"], h["zero_point"], h["quant_min"], h["quant_max"])


def build_per_channel(example: Example) -> nn.Module:
    h = example.hyper
    return PerChannelFakeQuantize(list(h["scale"]), list(h["zero_point"]), h["axis"], h["quant_min"], h["quant_max"])


def build_learnable(example: Example) -> nn.Module:
    return LearnableFakeQuantize(example)


def build_fake_quantize(example: Example) -> nn.Module:
    from torch.ao.quantization import FakeQuantize

    return FakeQuantize()


_SOURCE = "https://github.com/pytorch/pytorch/blob/v2.13.0"
_DERIVATIVES = f"{_SOURCE}/tools/autograd/derivatives.yaml"
_FAKE_QUANTIZE = f"{_SOURCE}/torch/ao/quantization/fake_quantize.py"

#: The fake quantization ops' findings (each op's own name in the error).
_OPS_KNOWN = (
    Known("jvp", cause="jvp-unsupported", link=_DERIVATIVES,
          reason="the fake quantization ops define a backward but no forward-mode derivative in derivatives.yaml: "
                 "torch.func.jvp raises NotImplementedError ('Trying to use forward AD with ...')",
          reproducer="reproducers/torch/fake_quantize_ops_no_forward_ad.py"),
    Known("compile_dynamic", cause="graph-break:Operator does not support running with fake tensors",
          link=f"{_SOURCE}/torch/_subclasses/fake_tensor.py",
          reason="with dynamic shapes dynamo runs the op on fake tensors of symbolic sizes and its fake "
                 "implementation refuses them (UnsupportedOperatorException): a graph break, so fullgraph=True "
                 "compilation raises; static shapes (compile_aot_eager, compile_inductor) compile",
          reproducer="reproducers/torch/fake_quantize_ops_compile_dynamic.py"),
)

_OBSERVER_MUTATES = ("FakeQuantize.forward runs its observer and copies the observed scale and zero point into its "
                     "buffers in place (aten::copy_ / in-place min/max updates)")
_SKIPPED = ("dynamo's trace rules skip torch.ao.quantization: FakeQuantize.forward is 'marked as skipped', a graph "
            "break, so fullgraph=True compilation raises")
#: torch.ao's FakeQuantize module: what its observer's in-place state and dynamo's skip list do to the transforms.
_FAKE_QUANTIZE_KNOWN = (
    Known("vmap", cause="vmap-unsupported", link=_FAKE_QUANTIZE,
          reason=_OBSERVER_MUTATES + ": vmap refuses an in-place update of an unbatched buffer with a batched value",
          reproducer="reproducers/torch/fake_quantize_module_vmap.py"),
    Known("grad", cause="functional-call-failed", link=_FAKE_QUANTIZE,
          reason=_OBSERVER_MUTATES + ": torch.func.grad refuses a function that mutates a captured tensor",
          reproducer="reproducers/torch/fake_quantize_module_func_grad.py"),
    Known("jvp", cause="jvp-unsupported", link=_FAKE_QUANTIZE,
          reason=_OBSERVER_MUTATES + ": torch.func.jvp refuses a function that mutates a captured tensor (the "
                 "same error as under torch.func.grad)",
          reproducer="reproducers/torch/fake_quantize_module_func_grad.py"),
    Known("compile_*", "no_graph_breaks", cause="graph-break:Attempted to inline function marked as skipped",
          link=f"{_SOURCE}/torch/_dynamo/trace_rules.py", reason=_SKIPPED,
          reproducer="reproducers/torch/fake_quantize_module_compile_skipped.py"),
    Known("compile_*", "preserves_*",
          cause="graph-break:Dynamo developers have intentionally marked that the function  FakeQuantize.forw",
          link=f"{_SOURCE}/torch/_dynamo/trace_rules.py", reason=_SKIPPED,
          reproducer="reproducers/torch/fake_quantize_module_compile_skipped.py"),
    Known("export", cause="data-dependent-item", link=_FAKE_QUANTIZE,
          reason="FakeQuantize.forward branches on its tensor flags (`if self.observer_enabled[0] == 1`): a "
                 "data-dependent guard torch.export cannot resolve (GuardOnDataDependentSymNode)",
          reproducer="reproducers/torch/fake_quantize_module_export.py"),
)

#: a FakeQuantize observes whenever observer_enabled is set: eval() does not stop it
_OBSERVES_IN_EVAL = Known(
    "eval", "eval_keeps_state", cause="state-changed-in-eval",
    link="https://github.com/Lightning-AI/pytorch-lightning/issues/8507",
    reason="FakeQuantize.forward runs its observer whenever observer_enabled is set, whatever the mode: eval() "
           "does not stop it (torch.ao.quantization.disable_observer does), so a forward in eval mode moves the "
           "observer's min_val/max_val and the scale and zero point (of the weight's fake quantizer in a qat layer)",
    reproducer="reproducers/torch/fake_quantize_observes_in_eval.py")


_DYNAMIC_LINEAR = f"{_SOURCE}/torch/ao/nn/quantized/dynamic/modules/linear.py"
_PACKED = ("the layer's forward calls torch.ops.quantized.linear_dynamic with its packed weight, a TorchScript "
           "object (LinearPackedParamsBase)")
#: torch.ao.nn.quantized.dynamic.Linear: its packed weight under the tracing transforms.
_DYNAMIC_LINEAR_KNOWN = (
    Known("compile_*", "no_graph_breaks", cause="graph-break:Failed to convert args kwargs to proxy",
          link=_DYNAMIC_LINEAR, reason=_PACKED + " that dynamo cannot put into a graph: a graph break, so "
                                                 "fullgraph=True compilation raises",
          reproducer="reproducers/torch/dynamic_linear_compile_packed_params.py"),
    Known("compile_*", "preserves_*", cause="graph-break:Missing  as_proxy()  implementation for some arg kwarg.",
          link=_DYNAMIC_LINEAR, reason=_PACKED + " that dynamo cannot put into a graph ('Missing as_proxy() "
                                                 "implementation'): fullgraph=True compilation raises",
          reproducer="reproducers/torch/dynamic_linear_compile_packed_params.py"),
    Known("export", cause="export-failed", link=_DYNAMIC_LINEAR,
          reason=_PACKED + " that declares no __obj_flatten__, which torch.export needs to lift it: export raises "
                           "AttributeError",
          reproducer="reproducers/torch/dynamic_linear_export_packed_params.py"),
    Known("safetensors", cause="safetensors-refused",
          link="https://github.com/huggingface/sentence-transformers/issues/2923",
          reason="the layer's state_dict holds its packed weight as '_packed_params.dtype' (a torch.dtype) and "
                 "'_packed_params._packed_params' (a tuple), which safetensors.torch.save refuses: it saves tensors "
                 "only",
          reproducer="reproducers/torch/dynamic_linear_safetensors_packed_params.py"),
)


def build_dynamic_linear(example: Example) -> nn.Module:
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear
    from torch.ao.quantization import default_dynamic_qconfig

    linear = float_linear(example)
    linear.qconfig = default_dynamic_qconfig
    return DynamicLinear.from_float(linear)


_QCONFIG = f"{_SOURCE}/torch/ao/quantization/qconfig.py"
_FUSED_OBSERVER = ("the weight fake quantizer (FusedMovingAvgObsFakeQuantize) writes its observer's running min/max, "
                   "scale and zero point in place on every forward")
_FUSED_SKIPPED = ("dynamo's trace rules skip torch.ao.quantization: the weight fake quantizer's "
                  "FusedMovingAvgObsFakeQuantize.forward is 'marked as skipped', a graph break, so fullgraph=True "
                  "compilation raises")
#: torch.ao.nn.qat's layers with the default QAT qconfig: what their weight fake quantizer does to the transforms.
_QAT_KNOWN = (
    _OBSERVES_IN_EVAL,
    Known("load_assign", cause="state-dict-mismatch", link=_FAKE_QUANTIZE, device="cpu",
          reason="the per-channel observer's min_val/max_val start empty and the CPU's fused kernel resizes them (and "
                 "scale, zero_point) in place on the first forward; after load_state_dict(assign=True) the layer holds "
                 "torch.load's tensors, whose storage is not resizable: 'Trying to resize storage that is not "
                 "resizable'",
          reproducer="reproducers/torch/qat_load_assign_resize.py"),
    Known("module_contract", "independent_builds", cause="object-shared-between-builds", link=_QCONFIG,
          reason="get_default_qat_qconfig returns a new QConfig holding torch.ao's module-level partial wrappers "
                 "(default_fused_per_channel_wt_fake_quant): every layer built from it shares the same mutable "
                 "qconfig.weight",
          reproducer="reproducers/torch/qat_qconfig_shared_between_layers.py"),
    *(Known(transform, "no_state_leak", cause="state-leak", link=_FAKE_QUANTIZE,
            reason=_FUSED_OBSERVER + ", also inside torch.func's transforms: the layer comes out with its statistics "
                   "updated (to an eager forward's values)",
            reproducer="reproducers/torch/qat_observer_updates_under_func.py")
      for transform in ("vmap", "grad", "per_sample_grad", "jvp")),
    Known("opacus_*", cause="opacus-failed", link="https://github.com/pytorch/opacus/blob/main/opacus/grad_sample/"
                                                  "grad_sample_module.py",
          reason="the layer holds its trainable weight beside its weight fake quantizer's buffers, and Opacus' "
                 "GradSampleModule refuses a trainable layer with buffers ('Model contains a trainable layer with "
                 "buffers that Opacus doesn't currently support')",
          reproducer="reproducers/torch/qat_opacus_trainable_layer_with_buffers.py"),
    Known("compile_*", "no_graph_breaks", cause="graph-break:Attempted to inline function marked as skipped",
          link=f"{_SOURCE}/torch/_dynamo/trace_rules.py", reason=_FUSED_SKIPPED,
          reproducer="reproducers/torch/qat_compile_skipped.py"),
    Known("compile_*", "preserves_*",
          cause="graph-break:Dynamo developers have intentionally marked that the function  FusedMovingAvgObs",
          link=f"{_SOURCE}/torch/_dynamo/trace_rules.py", reason=_FUSED_SKIPPED,
          reproducer="reproducers/torch/qat_compile_skipped.py"),
)


def _qat_layer(float_layer: nn.Module, qat_class) -> nn.Module:
    """A float layer made a QAT layer as ``prepare_qat`` makes it: ``qconfig`` set, then ``from_float`` (train mode)."""
    from torch.ao.quantization import get_default_qat_qconfig

    float_layer.qconfig = get_default_qat_qconfig("x86")
    return qat_class.from_float(float_layer)


def build_qat_linear(example: Example) -> nn.Module:
    from torch.ao.nn.qat import Linear as QATLinear

    return _qat_layer(float_linear(example), QATLinear)


def build_qat_conv2d(example: Example) -> nn.Module:
    from torch.ao.nn.qat import Conv2d as QATConv2d

    h, weight, bias = example.hyper, example.params["weight"], example.params.get("bias")
    conv = nn.Conv2d(weight.shape[1] * h["groups"], weight.shape[0], weight.shape[2], stride=h["stride"],
                     padding=h["padding"], dilation=h["dilation"], groups=h["groups"], bias=bias is not None)
    load_parameters(conv, {k: v for k, v in example.params.items()})
    return _qat_layer(conv, QATConv2d)


def subjects() -> Iterator[Subject]:
    common = dict(library=LIBRARY.name, dtypes=FLOAT32)
    yield Subject(id="torch.fake_quantize_per_tensor_affine", spec="affine.fake_quantize", build=build_per_tensor,
                  fixed={"axis": None}, known=_OPS_KNOWN, **common)
    yield Subject(id="torch.fake_quantize_per_channel_affine", spec="affine.fake_quantize", build=build_per_channel,
                  fixed={"axis": -1}, known=_OPS_KNOWN, **common)
    yield Subject(id="torch._fake_quantize_learnable_per_tensor_affine", spec="affine.fake_quantize_learnable",
                  build=build_learnable, param_map={"scale": "scale", "zero_point": "zero_point"},
                  known=_OPS_KNOWN, **common)
    yield Subject(id="torch.ao.quantization.FakeQuantize", spec="affine.observed_fake_quantize",
                  build=build_fake_quantize, fixed={"quant_min": 0, "quant_max": 255, "symmetric": False},
                  known=(*_FAKE_QUANTIZE_KNOWN, _OBSERVES_IN_EVAL), **common)
    yield Subject(id="torch.ao.nn.quantized.dynamic.Linear", spec="affine.dynamic_linear", build=build_dynamic_linear,
                  devices=frozenset({"cpu"}), known=_DYNAMIC_LINEAR_KNOWN, **common)
    qat = dict(param_map={"weight": "weight", "bias": "bias"}, known=_QAT_KNOWN,
               fixed={"quant_min": -128, "quant_max": 127, "symmetric": True})
    yield Subject(id="torch.ao.nn.qat.Linear", spec="affine.qat_linear", build=build_qat_linear, **qat, **common)
    yield Subject(id="torch.ao.nn.qat.Conv2d", spec="affine.qat_conv2d", build=build_qat_conv2d, **qat, **common)
