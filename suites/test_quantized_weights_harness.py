"""The deterministic check and the forward_hooks column compare NaN with NaN: a layer that computes the same NaN
twice (torchao's fp8 weight-only layer on a zero weight row) is deterministic and its captures intact, its forward
check is what judges the NaN; a NaN that moves between calls is not deterministic."""

import itertools

import pytest

import torch
from torch import nn

from conformance import registry
from conformance.core.types import Cell, Subject
from conformance.runner import run_cell

from .mutants import MUTANTS


def test_the_same_nan_twice_is_deterministic_and_fails_the_forward_check():
    (mutant,) = [m for m in MUTANTS if m.subject.id == "mutant.fp8_scale_without_floor"]
    registry.register(mutant.subject)
    assert run_cell(Cell(mutant.subject.id, "eager", "deterministic", "cpu", "float32")).outcome == "pass"
    forward = run_cell(Cell(mutant.subject.id, "eager", "forward_matches_spec", "cpu", "float32"))
    assert (forward.outcome, forward.cause) == ("fail", "forward-mismatch")


class MovingNan(nn.Module):
    """Its output's NaN moves to the next element on every call."""

    def __init__(self):
        super().__init__()
        self.calls = itertools.count()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y.view(-1)[next(self.calls) % y.numel()] = float("nan")
        return y


def test_a_nan_that_moves_between_calls_is_nondeterministic():
    subject = Subject(id="mutant.moving_nan", spec="quant.sign_ste", build=lambda example: MovingNan(),
                      library="mutants", fixed={"zero_value": 1.0})
    registry.register(subject)
    result = run_cell(Cell(subject.id, "eager", "deterministic", "cpu", "float32"))
    assert (result.outcome, result.cause) == ("fail", "nondeterministic"), result.message


def test_a_hooked_output_holding_nan_is_intact():
    """The forward_hooks column compares each capture with its capture-time copy: the same NaN is intact."""
    (mutant,) = [m for m in MUTANTS if m.subject.id == "mutant.fp8_scale_without_floor"]
    registry.register(mutant.subject)
    result = run_cell(Cell(mutant.subject.id, "forward_hooks", "hook_capture_intact", "cpu", "float32"))
    assert result.outcome == "pass", result.message


class SharesQuantizedWeight(nn.Module):
    """A torchao weight-only layer whose deepcopy copies the bias but keeps the very same quantized weight."""

    def __init__(self, linear: nn.Module):
        super().__init__()
        self.linear = linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)

    def __deepcopy__(self, memo):
        linear = nn.Linear(self.linear.in_features, self.linear.out_features)
        linear.weight = self.linear.weight
        with torch.no_grad():
            linear.bias.copy_(self.linear.bias)
        return SharesQuantizedWeight(linear)


def _torchao_subject(name: str, build) -> Subject:
    from conformance.subjects import torchao as adapter

    subject = Subject(id=f"mutant.{name}", spec="affine.symmetric_weight_only_linear", build=build, library="mutants",
                      param_map={"bias": "linear.bias"}, requires=("torchao",), dtypes=adapter.FLOAT32,
                      fixed={"quant_min": -128, "quant_max": 127, "eps": float(torch.finfo(torch.float32).eps),
                             "in_features": adapter.IN_FEATURES})
    registry.register(subject)
    return subject


def test_a_copy_sharing_the_quantized_weight_is_caught_inside_the_wrapper():
    """copy_independent looks inside a wrapper tensor subclass (its codes and scale), which has no storage itself."""
    pytest.importorskip("torchao")
    from conformance.subjects.torchao import _quantized

    subject = _torchao_subject("shares_quantized_weight",
                               lambda example: SharesQuantizedWeight(_quantized("Int8WeightOnlyConfig")(example)))
    result = run_cell(Cell(subject.id, "deepcopy", "copy_independent", "cpu", "float32"))
    assert (result.outcome, result.cause) == ("fail", "copy-shares-state"), result.message


def test_functional_call_lends_a_weight_without_arithmetic_as_it_is():
    """torchao's Int8Tensor has no aten.mul: functional_call is given the weight itself (and the scaled bias), and a
    module holding those computes what functional_call computed."""
    pytest.importorskip("torchao")
    from conformance.subjects.torchao import _quantized

    subject = _torchao_subject("int8_weight_only_lent", lambda example: SharesQuantizedWeight(
        _quantized("Int8WeightOnlyConfig")(example)))
    for check in ("preserves_forward", "preserves_grad", "no_state_leak"):
        result = run_cell(Cell(subject.id, "functional_call", check, "cpu", "float32"))
        assert result.outcome == "pass", (check, result.message[:500])


def test_autocast_judges_the_eager_output_as_its_own_dtype_holds_it():
    """Under autocast to float16 an output past 65504 is float16's infinity (IEEE rounding): the eager float32 value
    there is judged as float16 holds it, as the spec checks judge theirs; a finite wrong value still fails."""
    from types import SimpleNamespace

    import pytest
    import torch

    from conformance.checks.harness import Truth
    from conformance.checks.preserve import check_preserves_forward
    from conformance.core.causes import CheckFailed
    from conformance.transforms import TransformRun

    ctx = SimpleNamespace(dtype=torch.float32, spec=SimpleNamespace(output_dtype=None, time_dim=None),
                          example=SimpleNamespace(hyper={}), batch_dim=0, persistent=False)
    eager = TransformRun(y=torch.tensor([[-4.5e6, 3.0]]))
    overflowed = TransformRun(y=torch.tensor([[-float("inf"), 3.0]]))
    overflowed.against = eager
    truth = Truth(y=eager.y, grads=None, margin=None)
    assert check_preserves_forward(ctx, overflowed, truth, "autocast_fp16") == 0
    wrong = TransformRun(y=torch.tensor([[-4.5e6, 3.5]]))
    wrong.against = eager
    with pytest.raises(CheckFailed, match="autocast_fp16 output vs eager"):
        check_preserves_forward(ctx, wrong, truth, "autocast_fp16")
    with pytest.raises(CheckFailed):  # in float32 (no compute dtype of its own) the infinity is a finding
        check_preserves_forward(ctx, overflowed, truth, "eager")
