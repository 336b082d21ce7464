"""optimum-quanto 0.2.7 subjects: ``QLinear`` with quantized weights, as its README shows them: a model holding one
``nn.Linear``, ``quantize(model, weights=qint8)`` (or ``qint4``), then optionally ``freeze(model)``.

- before ``freeze()`` the weight stays a float ``Parameter`` and every call quantizes it again (the ``qweight``
  property), straight through for the gradient; ``freeze()`` replaces it by the quantized tensor subclass
  (``WeightQBytesTensor`` for qint8, ``WeightQBitsTensor`` for qint4) held as a ``Parameter``;
- ``qint8``: ``AbsmaxOptimizer``, symmetric per output channel, ``scale = max|row| / 127``;
- ``qint4``: ``MaxOptimizer``, asymmetric with a float shift (``-min``), per group along the input dim; quanto picks
  the group size from ``in_features``: 128 when it divides it and ``in_features > 128`` (the subjects draw
  ``in_features`` of 256 and 384), else per output channel.
Both are the spec ``affine.minmax_weight_linear`` (the rules in ``qsnn_reference/affine.py``), judged in float32 only:
quanto computes the scales in the weight's dtype, and its bfloat16 qint4 weights take another kernel (TinyGemm).
- ``qfloat8`` (e4m3fn): ``AbsmaxOptimizer``, ``scale = max|row| / 448`` per output channel, ``w / scale`` saturated
  and cast to float8: the spec ``fp8.weight_only_linear`` (per row), whose weight is a constant (only the bias'
  gradient is judged; quanto's weight gradient is straight through).

quanto is imported only inside ``build``; it needs numpy at import (its other declared dependencies, ninja,
safetensors and huggingface_hub, only for its C++ extensions and for saving whole models).
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import nn

from ..core.types import Example, Known, Library, Subject
from . import float_linear

LIBRARY = Library("quanto", "optimum-quanto", "0.2.7", no_deps=True, dependencies=("numpy",))
REQUIRES = ("optimum.quanto",)
SOURCE = "https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto"

#: The subjects' cells: float32 only (see the module docstring).
FLOAT32 = frozenset({"float32"})
#: The weights' parameter paths in the model (one nn.Linear, held as quanto's users hold it: inside a model).
PARAM_MAP = {"weight": "0.weight", "bias": "0.bias"}


def build_quantized(weights: str, *, frozen: bool):
    """A builder of ``Sequential(Linear)`` holding the example's weight and bias, quantized with ``weights`` (a
    quanto qtype name) and, where ``frozen``, frozen."""

    def build(example: Example) -> nn.Module:
        from optimum.quanto import freeze, qtypes, quantize

        model = nn.Sequential(float_linear(example))
        quantize(model, weights=qtypes[weights])
        if frozen:
            freeze(model)
        return model

    return build


_REPRODUCERS = "reproducers/quanto"
_FUNCTORCH = ("vmap", "grad", "jvp", "per_sample_grad")
_OPACUS = Known("opacus_*", cause="opacus-failed", link=f"{SOURCE}/nn/qmodule.py",
                reason="every QLinear registers the input_scale and output_scale buffers (used only when activations "
                       "are quantized), and Opacus' GradSampleModule refuses a trainable layer holding buffers",
                reproducer=f"{_REPRODUCERS}/opacus_trainable_buffers.py")
_SCRIPT = Known("jit_script", cause="jit-unsupported", link=f"{SOURCE}/nn/qmodule.py",
                reason="QLinear keeps its qtype as a plain Python object (weight_qtype), which TorchScript cannot "
                       "type: torch.jit.script raises 'Module QLinear has no attribute weight_qtype'",
                reproducer=f"{_REPRODUCERS}/jit_script_qtype_attribute.py")

#: Before freeze(): the float weight is quantized on every call through quanto's autograd.Functions.
_QUANTIZED_KNOWN = (
    *(Known(transform, cause="autograd-function-without-setup_context", link=f"{SOURCE}/tensor/weights/qbytes.py",
            reason="the weight quantizers (WeightQBytesQuantizer, WeightQBitsQuantizer) are autograd.Functions with "
                   "forward(ctx, ...) and no setup_context, which torch.func transforms require",
            reproducer=f"{_REPRODUCERS}/functorch_without_setup_context.py") for transform in _FUNCTORCH),
    Known("compile_*", "no_graph_breaks", cause="graph-break:Failed to convert args kwargs to proxy",
          link=f"{SOURCE}/tensor/weights/qbytes.py", torch="2.1[2-9]*",
          reason="the weight quantizer, an autograd.Function, takes the qtype object as an argument, which dynamo "
                 "cannot put into a graph: a graph break, so fullgraph=True compilation raises",
          reproducer=f"{_REPRODUCERS}/compile_qtype_argument.py"),
    Known("compile_*", "no_graph_breaks", cause="graph-break:Missing  as_proxy()  implementation for some arg kwarg.",
          link=f"{SOURCE}/tensor/weights/qbytes.py", torch="2.11*",
          reason="the weight quantizer, an autograd.Function, takes the qtype object as an argument, which dynamo "
                 "cannot put into a graph (torch 2.11's account names it 'Missing as_proxy() implementation'): a "
                 "graph break, so fullgraph=True compilation raises",
          reproducer=f"{_REPRODUCERS}/compile_qtype_argument.py"),
    Known("compile_*", "preserves_*", cause="graph-break:Missing  as_proxy()  implementation for some arg kwarg.",
          link=f"{SOURCE}/tensor/weights/qbytes.py",
          reason="the weight quantizer, an autograd.Function, takes the qtype object as an argument, which dynamo "
                 "cannot put into a graph ('Missing as_proxy() implementation'): fullgraph=True compilation raises",
          reproducer=f"{_REPRODUCERS}/compile_qtype_argument.py"),
    _SCRIPT,
    Known("jit_trace", cause="jit-unsupported", link=f"{SOURCE}/tensor/weights/qbytes.py",
          reason="tracing runs the on-the-fly weight quantization, whose tensor subclass refuses the dtype change the "
                 "tracer asks for: ValueError 'The dtype of a weights Tensor cannot be changed'",
          reproducer=f"{_REPRODUCERS}/jit_trace_unfrozen.py"),
    _OPACUS,
    Known("module_contract", "independent_builds", cause="object-shared-between-builds",
          link=f"{SOURCE}/tensor/qtype.py",
          reason="quantize() stores the module-level qtype instance (qint8, qint4: a plain, mutable dataclass) on "
                 "every QLinear, and the weight quantization reads it on each call: changing one model's qtype "
                 "changes every other model's quantization",
          reproducer=f"{_REPRODUCERS}/shared_qtype.py"),
)

#: qint4 weights before freeze(): their linear under torch.export.
_QUANTIZED_QINT4_KNOWN = (
    Known("export", cause="export-failed", link=f"{SOURCE}/tensor/weights/qbits.py",
          reason="the WeightQBitsTensor quantized on each call goes through QuantizedLinearFunction, which under "
                 "export's tracing yields NotImplemented where a tensor is expected: RuntimeError 'Unable to cast "
                 "NotImplemented to Tensor' (qint8 weights, and a frozen qint4 model, export)",
          reproducer=f"{_REPRODUCERS}/export_unfrozen_qint4.py"),
)

_REFUSES_DTYPE = ("a frozen weight (WeightQBytesTensor, WeightQBitsTensor) refuses any dtype conversion in its "
                  "__torch_dispatch__ (ValueError 'The dtype of a weights Tensor cannot be changed')")
#: After freeze(): the weight is a wrapper tensor subclass held as a Parameter.
_FROZEN_KNOWN = (
    *(Known(transform, cause="deepcopy-failed", link="https://github.com/huggingface/optimum-quanto/issues/358",
            reason="the frozen weight is a wrapper tensor subclass whose clone() returns another type, so torch's "
                   "default Tensor.__deepcopy__ raises RuntimeError ('The default implementation of __deepcopy__() for "
                   "wrapper subclasses only works for subclass types that implement clone()...')",
            reproducer=f"{_REPRODUCERS}/frozen_deepcopy.py") for transform in ("deepcopy", "deepcopy_used")),
    *(Known(transform, cause="autograd-function-without-setup_context", link=f"{SOURCE}/tensor/function.py",
            reason="the linear of a quantized weight runs through autograd.Functions (WeightQBytesLinearFunction, "
                   "QuantizedLinearFunction) with forward(ctx, ...) and no setup_context, which torch.func "
                   "transforms require",
            reproducer=f"{_REPRODUCERS}/frozen_functorch_without_setup_context.py") for transform in _FUNCTORCH),
    _SCRIPT,
    _OPACUS,
    *(Known(transform, cause="conversion-failed", link=f"{SOURCE}/tensor/weights/qbytes.py",
            reason=_REFUSES_DTYPE + ": .half() and .double() raise",
            reproducer=f"{_REPRODUCERS}/frozen_dtype_conversion.py")
      for transform in ("half", "to_float64")),
    Known("module_contract", cause="module-method-failed", link=f"{SOURCE}/tensor/weights/qbytes.py",
          reason=_REFUSES_DTYPE + ": the module contract's .double() raises", also=("object-shared-between-builds",),
          reproducer=f"{_REPRODUCERS}/frozen_dtype_conversion.py"),
)

#: qfloat8 weights, before and after freeze(): the scale of an all-zero row.
_QFLOAT8_KNOWN = (
    Known("eager", "*_matches_spec", cause="forward-mismatch", link=f"{SOURCE}/tensor/optimizers/absmax_optimizer.py",
          reason="AbsmaxOptimizer computes scale = max|row| / 448 with no lower bound: the edge example's all-zero "
                 "weight row gets scale 0 and codes 0 / 0 = NaN (a float8 qtype is neither rounded nor cast to an "
                 "integer), so that output channel is NaN for every input (the spec's scale is at least float32's "
                 "smallest normal: codes 0)",
          reproducer=f"{_REPRODUCERS}/qfloat8_zero_row_nan.py"),
)

#: frozen qfloat8 weights: float8 codes under the pickle module.
_FROZEN_QFLOAT8_KNOWN = tuple(
    Known(transform, cause="pickle-failed", link="https://github.com/pytorch/pytorch/blob/v2.13.0/torch/storage.py",
          reason="the frozen weight keeps float8_e4m3fn codes, which torch's legacy pickle path cannot read back "
                 "(torch.storage._load_from_bytes: 'UntypedStorage has no attribute dtype'): torch's failure, shown "
                 "by quanto's frozen qfloat8 model (torch.save and torch.load carry it)",
          reproducer=f"{_REPRODUCERS}/qfloat8_frozen_pickle.py") for transform in ("pickle", "pickle_used"))

#: Before freeze() quanto quantizes the weight in the weight's dtype on every call; the spec states the float32 rule.
_CONVERTED = ("after .half() / .double() quanto quantizes the float weight in float16 / float64 on every call (scales "
              "and codes of that precision, other roundings); the spec states the float32 rule, which the float32 "
              "cells judge: a converted layer has no spec to be judged by")
NOT_APPLICABLE = {"half": _CONVERTED, "to_float64": _CONVERTED}

#: The spec's hyperparameters for each quanto weight type (its default optimizer and group size).
_SETTINGS = {"qint8": dict(bits=8, symmetric=True, group_size=None),
             "qint4": dict(bits=4, symmetric=False, group_size=128)}


def subjects() -> Iterator[Subject]:
    common = dict(spec="affine.minmax_weight_linear", library=LIBRARY.name, requires=REQUIRES, dtypes=FLOAT32,
                  param_map=PARAM_MAP)
    for weights, fixed in _SETTINGS.items():
        own = _QUANTIZED_QINT4_KNOWN if weights == "qint4" else ()
        yield Subject(id=f"quanto.QLinear[{weights}]", build=build_quantized(weights, frozen=False), fixed=fixed,
                      known=_QUANTIZED_KNOWN + own, not_applicable=NOT_APPLICABLE, **common)
        yield Subject(id=f"quanto.QLinear[{weights},frozen]", build=build_quantized(weights, frozen=True),
                      fixed=fixed, known=_FROZEN_KNOWN, **common)
    # qfloat8 (e4m3fn, AbsmaxOptimizer: absmax / 448 per output channel, a saturating cast): the FP8 spec, whose
    # weight is a constant, so only the bias' gradient is judged (quanto's weight gradient is straight through)
    fp8 = dict(common, spec="fp8.weight_only_linear", fixed={"fmt": "e4m3fn", "per_row": True},
               param_map={"bias": "0.bias"})
    yield Subject(id="quanto.QLinear[qfloat8]", build=build_quantized("qfloat8", frozen=False),
                  known=_QUANTIZED_KNOWN + _QFLOAT8_KNOWN, not_applicable=NOT_APPLICABLE, **fp8)
    yield Subject(id="quanto.QLinear[qfloat8,frozen]", build=build_quantized("qfloat8", frozen=True),
                  known=_FROZEN_KNOWN + _QFLOAT8_KNOWN + _FROZEN_QFLOAT8_KNOWN, **fp8)
