"""The optimum-quanto adapters and what the harness needed for a library whose parameters are tensor subclasses
(quanto's frozen weights): each test states one property; those that need quanto skip without it, the others use
torch's own wrapper subclass ``TwoTensor``."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from torch import nn
from torch.testing._internal.two_tensor import TwoTensor

from conformance import registry
from conformance.checks.state import check_state_matches_eager, plain_tensors
from conformance.core.causes import CheckFailed
from conformance.core.types import Cell, Example
from conformance.runner import run_cell
from conformance.subjects import quanto as quanto_adapters
from conformance.transforms import TransformRun
from conformance.transforms.contract import _storage
from conformance.transforms.harness import foreign_tensor

needs_quanto = pytest.mark.skipif(importlib.util.find_spec("optimum") is None
                                  or importlib.util.find_spec("optimum.quanto") is None,
                                  reason="optimum-quanto is not installed")


def test_subjects_are_declared_without_importing_the_library():
    subjects = list(quanto_adapters.subjects())
    assert {s.library for s in subjects} == {"quanto"} and all(s.requires == ("optimum.quanto",) for s in subjects)
    assert all(s.id.startswith("quanto.QLinear[") for s in subjects) and len({s.id for s in subjects}) == 6
    for subject in subjects:
        registry.specs()[subject.spec].examples(**subject.fixed)  # raises on a misspelt hyperparameter


def test_a_dotted_requirement_under_a_namespace_package_is_looked_up_whole():
    """``optimum`` is a namespace package that other distributions share: its presence says nothing of quanto."""
    if importlib.util.find_spec("optimum") is None:
        pytest.skip("no optimum namespace package here")
    assert registry.missing_requirement(("optimum.no_such_subpackage",)) == "optimum.no_such_subpackage"
    assert registry.missing_requirement(("no_such_package.quanto",)) == "no_such_package.quanto"


@needs_quanto
@pytest.mark.parametrize("in_features", [256, 384])
def test_quanto_picks_the_group_size_the_int4_subjects_fix(in_features):
    weight = torch.randn(2, in_features, dtype=torch.float64)
    example = Example(torch.randn(1, in_features, dtype=torch.float64), {"weight": weight, "bias": torch.zeros(2)},
                      {})
    model = quanto_adapters.build_quantized("qint4", frozen=True)(example)
    fixed = next(s.fixed for s in quanto_adapters.subjects() if s.id == "quanto.QLinear[qint4,frozen]")
    assert model[0].weight_group_size == fixed["group_size"] == 128
    assert type(model[0].weight).__name__ == "WeightQBitsTensor"


def _holding(value: torch.Tensor) -> nn.Module:
    module = nn.Module()
    module.weight = nn.Parameter(value, requires_grad=False)
    return module


def test_state_held_in_a_wrapper_subclass_is_compared_by_the_tensors_it_wraps():
    same = TwoTensor(torch.ones(3), torch.zeros(3))
    assert set(plain_tensors({"weight": same})) == {"weight.a", "weight.b"}
    run = TransformRun(y=None)
    run.findings.state_pair = (_holding(same), _holding(TwoTensor(torch.ones(3), torch.zeros(3))))
    assert check_state_matches_eager(None, run, None, "checkpoint") == 0
    run.findings.state_pair = (_holding(same), _holding(TwoTensor(torch.ones(3), torch.full((3,), 0.5))))
    with pytest.raises(CheckFailed, match="'weight.b'"):
        check_state_matches_eager(None, run, None, "checkpoint")


def test_a_parameter_of_a_library_subclass_is_no_tracing_leftover():
    pair = TwoTensor(torch.ones(2), torch.zeros(2))
    assert foreign_tensor(nn.Parameter(pair, requires_grad=False)) is None
    assert foreign_tensor(pair) == "tensor subclass TwoTensor"  # held as anything but a Parameter, it still is


def test_a_wrapper_subclass_has_no_storage_address():
    assert _storage(TwoTensor(torch.ones(2), torch.zeros(2))) is None
    assert _storage(torch.ones(2)) is not None


@needs_quanto
@pytest.mark.parametrize("check", ["preserves_forward", "no_state_leak"])
def test_functional_call_of_a_frozen_model_passes(check):
    """The twin holds the value lent to functional_call even where the module's parameter is a subclass (a
    WeightQBytesTensor ignores ``.data = tensor``), and the frozen weight the module held before is no leak."""
    result = run_cell(Cell("quanto.QLinear[qint8,frozen]", "functional_call", check, "cpu", "float32"))
    assert result.outcome == "pass", result.message[:500]


@needs_quanto
def test_records_name_the_release_of_a_library_installed_under_another_name():
    """The library ``quanto`` is the distribution ``optimum-quanto``: its records carry that distribution's release."""
    from importlib.metadata import version

    from conformance.records.io import library_version

    assert library_version("quanto") == version("optimum-quanto")


def test_a_library_page_names_the_release_its_records_carry():
    from conformance.report.libdocs import render

    record = {"library": "quanto", "library_version": "0.2.7", "subject": "quanto.QLinear[qint8]",
              "spec": "affine.minmax_weight_linear", "transform": "eager", "check": "forward_matches_spec",
              "device": "cpu", "dtype": "float32", "outcome": "pass", "cause": None, "known": None,
              "cell": "quanto.QLinear[qint8]|eager|forward_matches_spec|cpu|float32", "message": "",
              "env": {"torch": "2.13.0+cpu", "libraries": {"optimum-quanto": "0.2.7"}}}
    assert "(quanto 0.2.7; torch 2.13.0+cpu)" in render("quanto", [record])
