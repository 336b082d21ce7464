"""The specs themselves as subjects: the row that every transform must leave green."""

from __future__ import annotations

import collections.abc
from typing import Any, Callable, Iterator, Mapping

import torch
from torch import nn

from ..core.types import Example, Known, Subject

#: Cells inapplicable to every spec subject, by design.
SPEC_NOT_APPLICABLE = {
    "jit_script": "TorchScript compiles neither a module that calls a Python function attribute nor "
                  "torch.autograd.Function (the specs' custom gradients); TorchScript is in maintenance mode and "
                  "torch.export is the supported path",
}


class SpecModule(nn.Module):
    """A spec function as a module: ``params`` become ``nn.Parameter``s, ``hyper`` plain attributes.

    ``fn`` is a module-level function, so the module pickles and deep-copies by reference to it.
    """

    def __init__(self, fn: Callable[..., torch.Tensor], params: Mapping[str, torch.Tensor],
                 hyper: Mapping[str, Any]):
        super().__init__()
        self.fn = fn
        self.hyper = dict(hyper)
        self.param_names = tuple(params)
        for name, value in params.items():
            self.register_parameter(name, nn.Parameter(value.detach().clone()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        params = {name: getattr(self, name) for name in self.param_names}
        return self.fn(x, **params, **self.hyper)

    def extra_repr(self) -> str:
        return f"fn={getattr(self.fn, '__qualname__', self.fn)}, hyper={self.hyper}"


#: Hyperparameters fixed for the spec's own row: the general case, so every parameter's gradient is judged.
SPEC_FIXED = {
    "layer.binary_linear": {"bias": True},
    "layer.binary_conv2d": {"bias": True},
}


#: Known failures of the specs themselves (numerical limits of a formula in a low precision), with evidence.
#: Empty: the Alpha neuron's bfloat16 gradient, ill-conditioned through log(a)/(log(b)-log(a)), passes on the
#: examples drawn since they keep alpha - beta >= 0.25 (conformance/specs_neuron.py).
_LSHIFT = Known(
    "onnx", cause="onnx-export-failed", link="https://github.com/microsoft/onnxscript/tree/main/onnxscript/"
                                            "function_libs/torch_lib/ops",
    reason="torch.onnx.export (dynamo=True) finds no ONNX function for aten.__lshift__.Tensor (onnxscript 0.7.2's "
           "torchlib defines none), which the packing specs spell their bit positions with (`bits << positions`)",
    reproducer="reproducers/onnxscript/lshift_no_function.py")
#: Findings on the specs' own rows: a tool's gap that the spec's plain PyTorch shows (each blames that tool).
_REPEATED_SCALE_TAIL = dict(
    link="https://github.com/pytorch/pytorch/tree/v2.13.0/torch/_inductor",
    reason="torch.compile (inductor, CPU) miscompiles the dequantization's `values * absmax repeated per block of 64, "
           "cut to the weight's length`: the weights past the last full block (a tail block) get other scales",
    reproducer="reproducers/torch/inductor_repeated_scale_tail.py")
SPEC_KNOWN: dict = {"packing.pack_signs": (_LSHIFT,), "packing.binary_matmul": (_LSHIFT,),
                    "blockwise.linear_4bit": (
                        Known("compile_inductor", "preserves_forward", cause="transform-changed-forward",
                              **_REPEATED_SCALE_TAIL),
                        Known("compile_inductor", "preserves_grad", cause="transform-changed-grad",
                              **_REPEATED_SCALE_TAIL))}


#: Cells inapplicable to one spec, by design.
SPEC_NOT_APPLICABLE_ONE = {
    "quant.swish_sign": {
        "half": "the spec's gradient term, evaluated in float16, overflows: beta*(2 - beta*x*tanh(beta*x/2)) passes "
                "float16's 65504 for the edge examples' |x| up to 1e4 and over cosh's inf gives NaN (0 * NaN in the "
                "forward); the spec is a reference in float32, float64 and bfloat16, whose range holds it",
    },
    "affine.observed_fake_quantize": {
        "half": "an edge example maps the observed maximum exactly onto quant_max; float16's rounding of the scale "
                "moves it past the clamp edge, which zeroes the STE gradient there, and the tie rule excuses flips of "
                "the forward only, not of a gradient's clamp mask",
    },
    "affine.fake_quantized_linear": {
        "half": "the module converted by .half() holds a float16-rounded weight and rounds its input to float16: "
                "the spec's exact int8/int4 codes of those values differ from the drawn float32 ones by a step where "
                "a value lies near a rounding boundary (up to 20% of the output over 200 random draws), which no "
                "float16 tolerance covers and the tie rule does not excuse",
    },
    "blockwise.linear_int8": {
        "half": "the edge examples' |x| up to 1e4 times the weights pass float16's largest finite value 65504 inside "
                "the matrix product, whose sum of +inf and -inf terms is NaN: a range float16 does not have",
    },
    "neuron.norse_lif": {
        "half": "an edge example brings the membrane exactly to v_th, where the fast-sigmoid surrogate's slope "
                "(alpha 100) turns float16's rounding of the membrane (~1e-3) into a 2% change of d/dv_reset, beyond "
                "the tolerance of the gradients and outside the tie rule, which excuses forward flips only",
    },
    "layer.bie_binary_conv2d": {
        "jvp": "the spec's backward is bitorch-engine's hand-written training rule (clipped STE, sqrt(numel) "
               "scale gradient, int8 weight gradient), not the derivative of its forward: no forward-mode formula "
               "is defined for it",
    },
}


def spec_subject(spec, *, prefix: str = "reference") -> Subject:
    fixed = SPEC_FIXED.get(spec.id, {})

    def build(example: Example) -> nn.Module:
        return SpecModule(spec.fn, example.params, example.hyper)

    return Subject(
        id=f"{prefix}.{spec.id}",
        spec=spec.id,
        build=build,
        fixed=fixed,
        param_map=SpecParams(spec, fixed),
        library="reference",
        not_applicable={**SPEC_NOT_APPLICABLE, **SPEC_NOT_APPLICABLE_ONE.get(spec.id, {})},
        known=SPEC_KNOWN.get(spec.id, ()),
    )


class SpecParams(collections.abc.Mapping):
    """A spec subject's ``param_map``: each parameter name of the spec's examples to itself, known once an example is
    drawn (the simplest one), on first use. Drawing every spec's example took 0.7 s of every process that loads the
    registry (each benchmark round, each pytest process the system tests start), most of which never asks."""

    def __init__(self, spec, fixed):
        self._spec, self._fixed, self._names = spec, fixed, None

    def _drawn(self) -> tuple[str, ...]:
        if self._names is None:
            self._names = tuple(_first_example(self._spec, self._fixed).params)
        return self._names

    def __getitem__(self, name: str) -> str:
        if name not in self._drawn():
            raise KeyError(name)
        return name

    def __iter__(self):
        return iter(self._drawn())

    def __len__(self) -> int:
        return len(self._drawn())

    def __repr__(self) -> str:
        return repr(dict(self))

    def __reduce__(self):  # a copy (pickle, deepcopy) is the plain mapping
        return dict, (dict(self),)


def _first_example(spec, fixed) -> Example:
    from hypothesis import HealthCheck, given, settings

    found: list[Example] = []

    @settings(max_examples=1, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(spec.examples(**fixed))
    def draw(example):
        found.append(example)

    draw()
    return found[0]


def subjects() -> Iterator[Subject]:
    from ..specs import SPECS

    for spec in SPECS:
        if spec.fn is not None:  # opaque models have no spec function to run
            yield spec_subject(spec)
