"""The save/load and conversion columns (conformance/transforms/serialization.py, conversions.py): the correct
modules their mutants break pass them, a load that leaves a tensor alone is visible, and a missing safetensors skips."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from torch import nn

from conformance import registry
from conformance.core.types import Cell
from conformance.runner import run_cell
from conformance.subjects.reference import SpecModule
from conformance.transforms import serialization
from conformance.transforms.conversions import left_behind
from qsnn_reference import neurons, quant

from .mutants import _LEAKY, _SIGN, ScaleNotFollowingTo, _subject

#: the clean leaky neuron the load mutants (ignores_threshold_on_load, copies_on_assign, tied_threshold) break
CLEAN_LEAKY = _subject("clean_leaky_for_loads", "neuron.leaky",
                       lambda ex: SpecModule(neurons.leaky, ex.params, ex.hyper), fixed=dict(_LEAKY),
                       param_map={"beta": "beta", "threshold": "threshold"})


class ScaleBuffer(nn.Module):
    """ScaleNotFollowingTo's scale as a registered buffer: it follows every conversion."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(()))

    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0) * self.scale


CLEAN_SCALE = _subject("clean_scale_buffer", "quant.sign_ste", lambda ex: ScaleBuffer(), fixed=_SIGN)


@pytest.mark.parametrize("transform, checks", [
    ("save_load", ("preserves_forward", "preserves_grad")), ("load_assign", ("preserves_forward", "preserves_grad")),
    ("safetensors", ("preserves_forward", "preserves_grad")),
    ("to_float64", ("forward_matches_spec", "grad_matches_spec")),
    ("half", ("forward_matches_spec", "grad_matches_spec"))])
def test_the_correct_modules_the_mutants_break_pass(transform, checks):
    for subject in (CLEAN_LEAKY, CLEAN_SCALE):
        registry.register(subject)
        for check in checks:
            result = run_cell(Cell(subject.id, transform, check, "cpu", "float32"))
            assert result.outcome == "pass", (subject.id, transform, check, result.message[:500])


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_the_module_loaded_into_differs_in_every_floating_point_tensor_before_the_load():
    from conformance.transforms.harness import Context

    spec = registry.specs()["neuron.leaky"]
    example = spec.examples(**CLEAN_LEAKY.fixed).example()
    ctx = Context(CLEAN_LEAKY, spec, example, torch.float32, torch.device("cpu"))
    source = ctx.build()
    target = serialization.displaced_target(ctx, source)
    mine = target.state_dict()
    same = [name for name, t in source.state_dict().items()
            if t.is_floating_point() and t.abs().max() > 0 and torch.equal(t, mine[name])]
    assert not same, f"a load that leaves these alone would go unseen: {same}"


def test_a_copying_load_under_assign_is_named_and_a_real_assign_is_not():
    module = nn.Linear(2, 2)
    loaded = {name: t.clone() for name, t in module.state_dict().items()}
    before = {name: p.requires_grad for name, p in module.named_parameters()}
    module.load_state_dict(loaded)
    assert serialization.not_assigned(module, loaded, before) == ["weight: does not hold the loaded tensor",
                                                                  "bias: does not hold the loaded tensor"]
    module.load_state_dict(loaded, assign=True)
    assert serialization.not_assigned(module, loaded, before) == []
    module.weight = nn.Parameter(module.weight.detach(), requires_grad=False)
    assert serialization.not_assigned(module, loaded, before) == [
        "weight: requires_grad True before loading, False after"]


def test_a_tensor_left_behind_by_a_conversion_is_named_by_its_path():
    assert left_behind(ScaleNotFollowingTo().double(), torch.float64) == ["scales[0] (float32)"]
    assert left_behind(ScaleBuffer().double(), torch.float64) == []


def test_without_safetensors_its_cells_skip_naming_the_extra(monkeypatch):
    registry.register(CLEAN_LEAKY)
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "safetensors" else found(name, *a))
    result = run_cell(Cell(CLEAN_LEAKY.id, "safetensors", "preserves_forward", "cpu", "float32"))
    assert result.outcome == "skip"
    assert "'safetensors' is not installed" in result.message and "qsnn-conformance[safetensors]" in result.message


def test_a_half_module_is_judged_against_the_spec_as_float16_represents_it():
    from conformance.checks.harness import compare
    from conformance.checks.spec import as_computed
    from conformance.core.causes import CheckFailed
    from conformance.core.tolerance import tolerance

    from conformance.transforms.harness import Context

    spec = registry.specs()["quant.sign_ste"]
    ctx = Context(CLEAN_SCALE, spec, None, torch.float32, torch.device("cpu"))
    expected = torch.tensor([1e8, -2e5, 3.0], dtype=torch.float64)
    half_tolerance = tolerance("float32", "half", "forward_matches_spec")
    as_float16 = as_computed(ctx, expected, "half")
    assert as_float16.tolist() == [float("inf"), float("-inf"), 3.0]
    assert torch.equal(as_computed(ctx, expected, "to_float64"), expected)
    compare(expected.half(), as_float16, tol=half_tolerance, cause="forward-mismatch", what="overflow to inf")
    with pytest.raises(CheckFailed):  # a finite answer where float16 overflows is not float16's
        compare(torch.tensor([65504.0, -65504.0, 3.0]), as_float16, tol=half_tolerance, cause="forward-mismatch",
                what="finite where float16 overflows")
    with pytest.raises(CheckFailed):  # infinities of the other sign differ
        compare(-as_float16, as_float16, tol=half_tolerance, cause="forward-mismatch", what="signs")


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_a_tensor_every_build_shares_is_not_scaled_in_the_module_loaded_into():
    from conformance.transforms.harness import Context

    from .mutants import SharesDefaultScale

    shares = _subject("shares_default_scale_for_loads", "quant.sign_ste", lambda ex: SharesDefaultScale(), fixed=_SIGN)
    spec = registry.specs()["quant.sign_ste"]
    ctx = Context(shares, spec, spec.examples(**_SIGN).example(), torch.float32, torch.device("cpu"))
    source = ctx.build()
    serialization.displaced_target(ctx, source)
    assert float(source.scale) == 1.0 and float(SharesDefaultScale().scale) == 1.0


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_a_spike_flip_is_excused_by_the_margin_of_the_precision_a_conversion_computes_in():
    from conformance.checks.harness import Truth
    from conformance.checks.spec import check_forward_matches_spec
    from conformance.core.causes import CheckFailed
    from conformance.transforms.harness import Context, TransformRun

    spec = registry.specs()["quant.sign_ste"]
    ctx = Context(CLEAN_SCALE, spec, spec.examples(**_SIGN).example(), torch.float32, torch.device("cpu"))
    truth = Truth(y=torch.tensor([1.0, -1.0], dtype=torch.float64), grads=None,
                  margin=torch.tensor([0.5, -0.005], dtype=torch.float64))  # the second 0.005 from its edge
    flipped = TransformRun(y=torch.tensor([1.0, 1.0]))
    assert check_forward_matches_spec(ctx, flipped, truth, "half") == 1  # within float16's rounding: excused
    with pytest.raises(CheckFailed):  # float64's arithmetic flips nothing that far from the edge
        check_forward_matches_spec(ctx, flipped, truth, "to_float64")


class InferenceScale(nn.Module):
    """Its scale made under ``torch.inference_mode`` and kept as a plain tensor of its state_dict (as hqq keeps the
    scales and zeros its optimizer returns)."""

    def __init__(self):
        super().__init__()
        with torch.inference_mode():
            self.scale = torch.full((), 2.0)

    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0) * self.scale

    def state_dict(self, *args, **kwargs):
        return {"scale": self.scale}


def test_an_inference_mode_tensor_of_the_module_loaded_into_is_scaled_too():
    from conformance.transforms.harness import Context

    inference = _subject("inference_scale_for_loads", "quant.sign_ste", lambda ex: InferenceScale(), fixed=_SIGN)
    spec = registry.specs()["quant.sign_ste"]
    ctx = Context(inference, spec, spec.examples(**_SIGN).example(), torch.float32, torch.device("cpu"))
    target = serialization.displaced_target(ctx, ctx.build())
    assert torch.equal(target.scale, torch.full((), 2.0) * serialization.DISPLACEMENT)
