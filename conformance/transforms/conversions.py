"""Conversions as users apply them: a module built in float32 (as its users build it), then ``.double()`` or
``.half()``, judged against the spec in the new precision.

Every floating-point tensor the module holds (parameters, buffers, plain attributes, tensors in its lists and
dicts) must follow the conversion; one that keeps its dtype fails the cell (``conversion-incomplete``, naming it).
Integer tensors (a quantized module's integer representation) do not follow, as torch's own conversions leave them.
A column applies where the subject claims the precision it converts to (``Subject.dtypes``: float64 for
``.double()``; for ``.half()``, which no declaration names, a claim of bfloat16, the other 16-bit format). A module
that refuses a conversion it does not claim by design (a kernel that takes float32 only and raises a clear error, a
quantized module that keeps its integer representation) is not wrong: its subject declares the column not applicable
with the documented reason (``Subject.not_applicable``); a refusal not declared fails the cell with
``conversion-failed`` and the library's message, a known failure where it is the library's.

The cells are float32 cells (the example is drawn and rounded as for a float32 module): ``.double()`` computes on
exactly those values, so its cells are judged at float64's tolerance with float64's tie margin; ``.half()`` rounds
them to float16 and is judged at float16's.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch
from torch import nn

from .harness import Context, Transform, TransformRun, build, run_forward_backward, stage, tensor_state

#: where these transforms stand in the table (and the report's columns): after the module contract
ORDER = 16


@dataclasses.dataclass
class _Converted(Context):
    """The cell's context for a module converted to ``dtype``: its input in that dtype, and the cell's own cotangent
    (drawn in the cell's dtype ``drawn_in``, as the spec's answer draws it), converted."""

    drawn_in: torch.dtype = torch.float32

    def cotangent(self, like: torch.Tensor, seed: int = 20240611) -> torch.Tensor:
        return super().cotangent(like.to(self.drawn_in), seed).to(like.dtype)


class ConversionIncomplete(AssertionError):
    """Tensors a module holds kept their dtype through a conversion."""


def left_behind(module: nn.Module, dtype: torch.dtype) -> list[str]:
    """``"path (dtype)"`` of every floating-point tensor ``module`` holds in another dtype than ``dtype``."""
    return [f"{path} ({str(t.dtype).removeprefix('torch.')})" for path, t in tensor_state(module).items()
            if t.is_floating_point() and t.dtype != dtype]


def _conversion(name: str, dtype: torch.dtype, convert: Callable[[nn.Module], nn.Module], doc: str):
    def transform(ctx: Context) -> TransformRun:
        module = build(ctx)
        with stage(name):
            module = convert(module)
        stayed = left_behind(module, dtype)
        if stayed:
            with stage("left_behind"):
                raise ConversionIncomplete(f"after {name}: " + ", ".join(stayed))
        fields = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(Context)}
        converted = _Converted(**dict(fields, dtype=dtype), drawn_in=ctx.dtype)
        return run_forward_backward(converted, module, module, x=ctx.input().to(dtype), name=name)

    transform.__name__ = name
    transform.__doc__ = doc
    return transform


to_float64 = _conversion("to_float64", torch.float64, lambda m: m.double(),
                         "Built in float32, then .double(): every floating-point tensor it holds is float64 and it "
                         "computes the spec at float64's tolerance.")
half = _conversion("half", torch.float16, lambda m: m.half(),
                   "Built in float32, then .half(): every floating-point tensor it holds is float16 and it computes "
                   "the spec at float16's tolerance.")

#: the dtype a subject must claim for each column to apply to it
CLAIMS = {"to_float64": "float64", "half": "bfloat16"}


def _applies(column: str):
    def applies(subject, spec) -> str | None:
        if CLAIMS[column] not in subject.dtypes:
            return f"{subject.id} does not claim {CLAIMS[column]} support, which {column} converts it to"
        return None
    return applies


_CHECKS = ("forward_matches_spec", "grad_matches_spec")
TRANSFORMS = (
    Transform("to_float64", to_float64, _CHECKS, failure_cause="conversion-failed", protocol=True,
              compute_dtype="float64", stage_causes={"left_behind": "conversion-incomplete"},
              applies=_applies("to_float64")),
    Transform("half", half, _CHECKS, failure_cause="conversion-failed", protocol=True, compute_dtype="float16",
              stage_causes={"left_behind": "conversion-incomplete"}, applies=_applies("half")),
)
