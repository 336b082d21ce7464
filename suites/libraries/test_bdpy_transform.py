"""The bdpy FeatureExtractor transform (conformance/transforms_bdpy.py): its judgement of the features bdpy returns
(overwritten, mislabelled, intact), on hand-made modules whose outcome is known without running the matrix."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from conformance import registry
from conformance.checks.hooks import check_hook_capture_intact
from conformance.core.causes import CheckFailed
from conformance.core.types import Cell, Subject
from conformance.runner import run_cell
from conformance.transforms import HookCapture, TransformRun
from conformance.transforms.bdpy import judge_features


class Scale(nn.Module):
    def forward(self, x):
        return x * 2.0


class Twice(nn.Module):
    """A submodule run twice per forward (as a neuron stepped over time is)."""

    def __init__(self):
        super().__init__()
        self.inner = Scale()

    def forward(self, x):
        return self.inner(self.inner(x)) / 4.0


def _register(name: str, build) -> str:
    subject = Subject(id=f"test.bdpy.{name}", spec="quant.sign_ste", build=lambda ex: build(), library="test",
                      fixed={"zero_value": 1.0}, dtypes=frozenset({"float32"}))
    registry.register(subject)
    return subject.id


def test_judge_features_tells_overwritten_mislabelled_and_intact_apart():
    a, b = torch.ones(2), torch.zeros(2)
    observed = {"a": [(a, a.clone())], "b": [(b, b.clone())]}
    assert judge_features({"a": a, "b": b}, observed, by_reference=True) == {"mutated": [], "mislabelled": []}
    a.add_(1.0)
    assert judge_features({"a": a, "b": b}, observed, by_reference=True)["mutated"] == ["a"]
    swapped = judge_features({"a": b, "b": a}, observed, by_reference=True)
    assert swapped["mislabelled"] == ["a", "b"]
    detached = judge_features({"a": torch.ones(2).numpy(), "b": torch.zeros(2).numpy()}, observed,
                              by_reference=False)
    assert detached == {"mutated": [], "mislabelled": []}


def test_check_reports_mislabelled_before_mutated():
    out = TransformRun()
    out.findings.hooks = HookCapture(captured=["a"], mutated=["a"], mislabelled=["b"])
    with pytest.raises(CheckFailed) as failed:
        check_hook_capture_intact(None, out, None, "bdpy_features")
    assert failed.value.cause == "hook-capture-mislabelled"


def test_bdpy_cells_skip_without_bdpy(monkeypatch):
    monkeypatch.setattr(registry, "missing_requirement", lambda names: "bdpy" if "bdpy" in names else None)
    cell = Cell("reference.quant.sign_ste", "bdpy_features_detach", "hook_capture_intact")
    result = run_cell(cell)
    assert result.outcome == "skip" and "bdpy" in result.message


def test_detached_capture_of_a_plain_module_is_intact():
    pytest.importorskip("bdpy")
    cell = Cell("reference.quant.sign_ste", "bdpy_features_detach", "hook_capture_intact")
    result = run_cell(cell)
    assert result.outcome == "pass", result.message


def test_capture_by_reference_is_overwritten_by_the_inplace_op_downstream():
    """bdpy's own finding, found on any subject (here one this test declares) and charged to bdpy: the transform
    declares it, so the cells are xfail with bdpy's reason, not a failure of the subject."""
    pytest.importorskip("bdpy")
    sid = _register("scale", Scale)
    result = run_cell(Cell(sid, "bdpy_features", "hook_capture_intact"))
    assert (result.outcome, result.cause) == ("xfail", "hook-capture-mutated"), result.message
    assert "by reference" in result.known["reason"]
    grad = run_cell(Cell(sid, "bdpy_features", "preserves_grad"))
    assert (grad.outcome, grad.cause) == ("xfail", "transform-changed-grad"), grad.message


def test_a_module_run_twice_shifts_bdpy_features():
    pytest.importorskip("bdpy")
    sid = _register("twice", Twice)
    result = run_cell(Cell(sid, "bdpy_features_detach", "hook_capture_intact"))
    assert (result.outcome, result.cause) == ("fail", "hook-capture-mislabelled"), result.message


class PairOut(nn.Module):
    """Returns a tuple, on which bdpy's detaching hook raises inside forward."""

    def forward(self, x):
        return x, x


#: one instance inside every SharesPart, as brevitas shares its stateless quantizer parts between layers
_SHARED = PairOut()


class SharesPart(nn.Module):
    def __init__(self):
        super().__init__()
        self.part = _SHARED

    def forward(self, x):
        return torch.sign(self.part(x)[0])


def test_hooks_bdpy_leaves_when_its_forward_raises_are_removed():
    """bdpy removes its hooks only in FeatureExtractor.__del__, which a forward that raised delays: the transform
    removes them itself, or a part shared with later modules would run bdpy's hook in later cells (it kept
    FakeTensors of an export, and a fresh brevitas layer then could not be deep-copied)."""
    pytest.importorskip("bdpy")
    result = run_cell(Cell(_register("shares_part", SharesPart), "bdpy_features_detach", "hook_capture_intact"))
    assert result.outcome == "fail" and result.cause == "forward-raised", result.message
    assert not _SHARED._forward_hooks, "bdpy's hooks are still installed on the shared submodule"
