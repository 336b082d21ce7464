"""Every check can fail: each mutant (a deliberately broken implementation) is caught by the intended check with
the intended cause, and every check has at least one mutant."""

import pytest
import torch

from conformance import registry
from conformance.checks import CHECKS
from conformance.runner import run_cell
from conformance.types import Cell

from .mutants import MUTANTS


@pytest.fixture(scope="module", autouse=True)
def registered_mutants():
    for mutant in MUTANTS:
        registry.register(mutant.subject)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.subject.id for m in MUTANTS])
def test_mutant_is_caught(mutant):
    if mutant.device == "cuda" and not torch.cuda.is_available():
        pytest.skip("a CUDA mutant: runs in the GPU run (scripts/gpu-run.sh)")
    cell = Cell(mutant.subject.id, mutant.transform, mutant.check, mutant.device, mutant.dtype)
    result = run_cell(cell)
    assert result.outcome == "fail", f"{mutant.defect}: {cell.id} was {result.outcome}: {result.message[:500]}"
    if mutant.cause.endswith(":"):
        assert (result.cause or "").startswith(mutant.cause), (mutant.defect, result.cause, result.message[:500])
    else:
        assert result.cause == mutant.cause, (mutant.defect, result.cause, result.message[:500])


def test_every_check_has_a_mutant():
    covered = {m.check for m in MUTANTS}
    assert set(CHECKS) <= covered, f"checks without a mutant: {sorted(set(CHECKS) - covered)}"


def test_every_mutant_transform_and_check_exist():
    transforms = registry.transforms()
    for m in MUTANTS:
        assert m.check in transforms[m.transform].checks, f"{m.subject.id}: {m.transform} has no check {m.check}"
