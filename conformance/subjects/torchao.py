"""torchao 0.18.0: an ``nn.Linear`` passed through ``torchao.quantization.quantize_`` with each config that runs on
the CPU, at its defaults as torchao's README shows them (``quantize_(model, Int8WeightOnlyConfig())``).

- ``Int8WeightOnlyConfig()``: the weight becomes an ``Int8Tensor``, int8 symmetric per output channel (PerRow,
  ``choose_qparams_affine`` with eps = float32's eps, ``quantize_affine``: ``round(w * (1.0 / scale))`` in float32,
  half to even); ``linear`` is ``(x @ codes.T) * scale + bias`` (``affine.symmetric_weight_only_linear``).
- ``IntxWeightOnlyConfig()``: ``IntxUnpackedToInt8Tensor``, int8 symmetric per output channel (PerAxis(0)), the
  scale's lower bound float32's smallest normal (``choose_qparams_affine``'s default eps); ``linear`` dequantizes
  and calls ``F.linear`` (the same spec, ``eps`` fixed to it).
- ``Int8DynamicActivationInt8WeightConfig()``: the ``Int8Tensor`` weight above and the activation quantized on
  each call, int8 symmetric per token (per row); the integer product ``torch._int_mm`` rescaled
  (``affine.dynamic_linear`` with ``weight_axis=0``, ``per_token``, -128..127 symmetric). No gradient.
- ``Float8WeightOnlyConfig()``: ``Float8Tensor``, e4m3fn per row, ``scale = amax / 448`` with no lower bound
  (``quant_primitives._choose_scale_float8``), ``x @ dequant(W).T + bias`` (``fp8.weight_only_linear``, whose scale
  is at least float32's smallest normal: a zero row is where they part).

Not subjects: ``Int4WeightOnlyConfig()`` (group size 128) leaves a layer whose ``in_features`` is not a multiple of
128 as it was, a plain Parameter, and raises ``ImportError: Requires mslk >= 1.0.0`` (a GPU kernel package) on one
that is; neither is int4 on the CPU (docs/quantization.md).

Every ``quantize_`` raises on ``nn.Linear(1, N)`` with N > 1 (``choose_qparams_affine`` reshapes a scale that
``amin``/``amax`` over no reduction dims left as one number; the reshape of pytorch/ao#3447): the subjects draw
``in_features`` of 2..8, and the finding is stated in docs/quantization.md. The subjects run in float32 on the CPU.

``quantize_`` at these defaults (``set_inductor_config=True``) also sets process-wide inductor options
(``recommended_inductor_config_setter``: coordinate descent tuning, ``force_fuse_int_mm_with_mul``) and never restores
them; the cell isolation does not put them back (docs/quantization.md).
"""

from __future__ import annotations

from typing import Iterator

import torch
from hypothesis import strategies as st
from torch import nn

from ..core.types import Example, Known, Library, Subject
from . import float_linear

#: Declares no dependencies; installed without them all the same, so the set-up never resolves torch again.
#: Not on the GPU machine: its subjects are CPU-only here (their CUDA kernels are another set of cells).
LIBRARY = Library("torchao", "torchao", "0.18.0", no_deps=True, gpu=False)
REQUIRES = ("torchao",)
FLOAT32 = frozenset({"float32"})
CPU = frozenset({"cpu"})
#: ``quantize_`` raises on in_features 1 (see the module docstring).
IN_FEATURES = st.integers(2, 8)


def _quantized(config_name: str):
    def build(example: Example) -> nn.Module:
        from torchao import quantization

        linear = float_linear(example)
        quantization.quantize_(linear, getattr(quantization, config_name)())
        return linear

    build.__name__ = f"build_{config_name}"
    return build


_SOURCE = "https://github.com/pytorch/ao/blob/v0.18.0/torchao"
_REPRODUCERS = "reproducers/torchao"

#: What every quantize_ config here shows: the layer it leaves behind under the copy, save and script columns.
_EVERY_CONFIG_KNOWN = (
    Known("pickle*", cause="pickle-failed", link=f"{_SOURCE}/quantization/quant_api.py",
          reason="quantize_ sets the layer's extra_repr to an instance attribute, types.MethodType(functools.partial"
                 "(...), module); pickle stores a bound method by its function's __name__, which a partial lacks "
                 "(AttributeError), so the layer neither pickles nor saves whole with torch.save (the weight itself "
                 "pickles)",
          reproducer=f"{_REPRODUCERS}/quantized_linear_unpicklable.py"),
    Known("safetensors", cause="safetensors-refused", link="https://github.com/pytorch/ao/issues/2338",
          reason="the quantized weight is a wrapper tensor subclass with no storage of its own: safetensors' save "
                 "reads its data pointer and raises ('invalid python storage'); torchao documents torch.save of "
                 "the state_dict, and its safetensors helpers are a prototype for Float8Tensor only",
          reproducer=f"{_REPRODUCERS}/safetensors_save_subclass_weight.py"),
    Known("jit_script", cause="jit-unsupported", link=f"{_SOURCE}/utils.py",
          reason="torch.jit.script compiles nn.Linear's forward, and the TorchScript interpreter calls aten::linear "
                 "on the weight without its Python __torch_function__ / __torch_dispatch__: the first call raises",
          reproducer=f"{_REPRODUCERS}/jit_script_subclass_weight.py"),
)
_FUNCTORCH = ("the weight's __torch_dispatch__ implements no rule for the aten op functorch's grad transform sends "
              "it (aten.t for Int8Tensor and IntxUnpackedToInt8Tensor, aten.addmm for Float8Tensor): "
              "NotImplementedError; eager autograd works (the linear is handled in __torch_function__)")
#: The weight-only configs (they have a gradient) under torch.func.grad; Opacus' functorch mode is the same call.
_FUNCTORCH_KNOWN = (
    Known("grad", cause="functional-call-failed", link=f"{_SOURCE}/utils.py", reason=_FUNCTORCH,
          reproducer=f"{_REPRODUCERS}/func_grad_subclass_weight.py"),
)
_OPACUS_FUNCTORCH = Known("opacus_functorch", cause="opacus-failed", link=f"{_SOURCE}/utils.py",
                          reason="Opacus' functorch mode computes per-sample gradients with torch.func.grad over "
                                 "functional_call: " + _FUNCTORCH,
                          reproducer=f"{_REPRODUCERS}/func_grad_subclass_weight.py")
_DYNAMIC_KNOWN = (
    Known("jit_trace", cause="jit-unsupported", link=f"{_SOURCE}/quantization/quantize_/workflows/int8/int8_tensor.py",
          reason="the activation is quantized on every call (choose_qparams_affine with a block_size list from the "
                 "input's shape): torch.jit.trace cannot record that argument, 'iter->isIntList() INTERNAL ASSERT "
                 "FAILED'; the weight-only configs trace",
          reproducer=f"{_REPRODUCERS}/jit_trace_dynamic_activation.py"),
)
_ZERO_ROW_KNOWN = (
    Known("eager", "*_matches_spec", cause="forward-mismatch", link="https://github.com/pytorch/ao/issues/4713",
          reason="_choose_scale_float8 computes scale = amax / 448 with no lower bound: the edge example's all-zero "
                 "weight row gets scale 0 and codes 0 / 0 = NaN, so that output channel is NaN for every input (the "
                 "spec's scale is at least float32's smallest normal: codes 0)",
          reproducer=f"{_REPRODUCERS}/float8_weight_only_zero_row_nan.py"),
)


#: The fake quantizers torchao's QATConfig documents (its docstring's example): int8 per-token asymmetric activations,
#: int4 weights symmetric per group of 32.
QAT_GROUP_SIZE = 32


_FAKE_QUANTIZER = f"{_SOURCE}/quantization/qat/fake_quantizer.py"
#: torchao's QAT FakeQuantizedLinear under the functional and TorchScript transforms.
_NO_SETUP_CONTEXT = ("fake quantization rounds with quant_primitives._Round, an autograd.Function without "
                     "setup_context (its forward takes ctx): functorch's transforms refuse it (Opacus' per-sample "
                     "gradients run on them); eager autograd works")
_QAT_KNOWN = (
    *(Known(transform, cause="autograd-function-without-setup_context",
            link=f"{_SOURCE}/quantization/quant_primitives.py", reason=_NO_SETUP_CONTEXT,
            reproducer=f"{_REPRODUCERS}/qat_round_no_setup_context.py")
      for transform in ("grad", "per_sample_grad", "jvp", "opacus_*")),
    Known("vmap", cause="autograd-function-without-setup_context", also=("state-leak",),
          link=f"{_SOURCE}/quantization/quant_primitives.py",
          reason=_NO_SETUP_CONTEXT + "; before it raises, the activation fake quantizer has stored the call's scale "
                 "and zero point on itself (self.scale, self.zero_point: kept from every call), so the module keeps "
                 "the ended vmap's batched tensors",
          reproducer=f"{_REPRODUCERS}/qat_round_no_setup_context.py"),
    Known("jit_script", cause="jit-unsupported", link=_FAKE_QUANTIZER,
          reason="IntxFakeQuantizer.forward reads self.config.range_learning, and TorchScript types config as the "
                 "base class FakeQuantizeConfigBase, which has no such attribute: scripting raises",
          reproducer=f"{_REPRODUCERS}/qat_jit_script_fake_quantizer.py"),
    Known("jit_trace", cause="jit-unsupported", link=_FAKE_QUANTIZER,
          reason="the per-token activation fake quantizer calls choose_qparams_affine on every call with a "
                 "block_size list from the input's shape: torch.jit.trace cannot record it, 'iter->isIntList() "
                 "INTERNAL ASSERT FAILED'",
          reproducer=f"{_REPRODUCERS}/qat_jit_trace_per_token.py"),
)


def build_fake_quantized_linear(example: Example) -> nn.Module:
    """``quantize_(model, QATConfig(activation_config=..., weight_config=..., step="prepare"))`` on a model holding
    the Linear, which it swaps for a ``FakeQuantizedLinear`` (a bare Linear passed as the model is left as it was)."""
    from torchao.quantization import quantize_
    from torchao.quantization.qat import IntxFakeQuantizeConfig, QATConfig

    model = nn.Sequential(float_linear(example))
    config = QATConfig(activation_config=IntxFakeQuantizeConfig(torch.int8, "per_token", is_symmetric=False),
                       weight_config=IntxFakeQuantizeConfig(torch.int4, group_size=QAT_GROUP_SIZE, is_symmetric=True),
                       step="prepare")
    quantize_(model, config)
    return model[0]


def subjects() -> Iterator[Subject]:
    common = dict(library=LIBRARY.name, requires=REQUIRES, dtypes=FLOAT32, devices=CPU)
    weight_only = dict(spec="affine.symmetric_weight_only_linear", param_map={"bias": "bias"})
    yield Subject(id="torchao.quantize_[Int8WeightOnlyConfig]", build=_quantized("Int8WeightOnlyConfig"),
                  fixed={"quant_min": -128, "quant_max": 127, "eps": float(torch.finfo(torch.float32).eps),
                         "in_features": IN_FEATURES},
                  known=_EVERY_CONFIG_KNOWN + _FUNCTORCH_KNOWN + (_OPACUS_FUNCTORCH,), **weight_only, **common)
    yield Subject(id="torchao.quantize_[IntxWeightOnlyConfig]", build=_quantized("IntxWeightOnlyConfig"),
                  fixed={"quant_min": -128, "quant_max": 127, "eps": float(torch.finfo(torch.float32).tiny),
                         "in_features": IN_FEATURES},
                  known=_EVERY_CONFIG_KNOWN + _FUNCTORCH_KNOWN + (_OPACUS_FUNCTORCH,), **weight_only, **common)
    yield Subject(id="torchao.quantize_[Int8DynamicActivationInt8WeightConfig]", spec="affine.dynamic_linear",
                  build=_quantized("Int8DynamicActivationInt8WeightConfig"),
                  fixed={"quant_min": -128, "quant_max": 127, "symmetric": True, "per_token": True, "weight_axis": 0,
                         "in_features": IN_FEATURES},
                  known=_EVERY_CONFIG_KNOWN + _DYNAMIC_KNOWN, **common)
    yield Subject(id="torchao.quantize_[Float8WeightOnlyConfig]", spec="fp8.weight_only_linear",
                  build=_quantized("Float8WeightOnlyConfig"), param_map={"bias": "bias"},
                  fixed={"fmt": "e4m3fn", "per_row": True, "in_features": IN_FEATURES},
                  known=_EVERY_CONFIG_KNOWN + _FUNCTORCH_KNOWN + _ZERO_ROW_KNOWN, **common)
    yield Subject(id="torchao.qat.FakeQuantizedLinear", spec="affine.fake_quantized_linear",
                  build=build_fake_quantized_linear, param_map={"weight": "weight", "bias": "bias"},
                  fixed={"group_size": QAT_GROUP_SIZE, "in_features": QAT_GROUP_SIZE}, known=_QAT_KNOWN, **common)
