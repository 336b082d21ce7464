"""Known failures of a kernel a library picks by CPU feature (Known.cpu): applied and strict on the CPUs they name,
neither applied nor stale elsewhere, their cells not compared with the expectations, their reproducers skipped."""

from __future__ import annotations

import pytest

from conformance import registry
from conformance.core.types import Cell, Known, Subject
from conformance.expectations import _without_cpu_dependent
from conformance.reproducers import Claim, Script, skip_reason

ENTRY = Known("eager", "forward_matches_spec", cause="forward-mismatch", reason="wrong on AVX-512 only",
              reproducer="reproducers/mutants/avx512_only.py", cpu="torch:avx512")
CELL = Cell("mutant.wrong_on_avx512", "eager", "forward_matches_spec", "cpu", "float32")
OTHER = Cell("mutant.wrong_on_avx512", "eager", "grad_matches_spec", "cpu", "float32")


def _build(example):
    return None


SUBJECT = Subject(id=CELL.subject, spec="quant.sign_ste", build=_build, fixed={"zero_value": 1.0}, library="mutants",
                  known=(ENTRY,))


@pytest.fixture
def on_cpu(monkeypatch):
    if CELL.subject not in registry.subjects():
        registry.register(SUBJECT)

    def with_features(*features):
        monkeypatch.setattr(registry, "cpu_features", lambda: frozenset(features))

    return with_features


def test_an_entry_for_a_cpu_feature_applies_only_where_the_cpu_has_it(on_cpu):
    subject = registry.subjects()[CELL.subject]
    on_cpu("torch:avx512", "avx512f")
    assert registry.known_failure(CELL, subject) == ENTRY
    assert (CELL.subject, ENTRY) in registry.unmatched_known([OTHER])  # strict where it applies
    on_cpu("torch:avx2", "avx2")
    assert registry.known_failure(CELL, subject) is None
    assert (CELL.subject, ENTRY) not in registry.unmatched_known([OTHER])  # neither applied nor stale here


def test_its_cells_are_not_compared_with_the_expectations_on_any_cpu(on_cpu):
    cells = {CELL.id: {"outcome": "pass", "cause": None}, OTHER.id: {"outcome": "pass", "cause": None}}
    for features in (("torch:avx512",), ("torch:avx2",)):
        on_cpu(*features)
        assert _without_cpu_dependent(cells) == ({OTHER.id: cells[OTHER.id]}, 1)


def test_its_reproducer_is_skipped_where_the_cpu_lacks_the_feature(on_cpu):
    script = Script(ENTRY.reproducer, [Claim(f"subject {CELL.subject}", ENTRY, ())])
    on_cpu("torch:avx2")
    assert "torch:avx512" in skip_reason(script, "")
    on_cpu("torch:avx512")
    assert skip_reason(script, "") == ""
