"""The small examples a session's rounds share (conformance.bench.examples): read back they are the tensors and
values a fresh draw gives, bit for bit, and a round of other code never reads them."""

from __future__ import annotations

import pytest
import torch

from conformance.bench import cases, examples
from conformance.core.types import Example

#: One case per kind of example (elementwise; a layer with parameters; a convolution with the family's hints; a
#: neuron with 0-dimensional parameters; a recurrent one), of the specs' own rows so that no library is needed:
#: between them their hyperparameters are floats, ints, bools, strings and None.
CASES = [cases.Case("reference.quant.sign_ste", "32x4096", "forward"),
         cases.Case("reference.layer.binary_linear", "linear-256", "forward"),
         cases.Case("reference.layer.binary_conv2d", "conv-64ch-16x16-b8", "forward"),
         cases.Case("reference.neuron.leaky", "lif-1024x50-b8", "forward+backward"),
         cases.Case("reference.neuron.rleaky", "rlif-512x50-b8", "forward")]


def small_examples() -> dict[str, Example]:
    """The small example this process holds for each of CASES."""
    found = {}
    for case in CASES:
        subject, spec = cases.runnable(case)
        found[case.subject] = cases.small_example(subject, spec)
    return found


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.dtype, a.shape, a.stride()) == (b.dtype, b.shape, b.stride()) and \
        torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def identical(a: Example, b: Example) -> bool:
    """The same tensors bit for bit (-0.0 is not 0.0), the same parameters and hyperparameters in the same order,
    each value of the same type (a bool is not an int)."""
    return same_bits(a.x, b.x) and list(a.params) == list(b.params) \
        and all(same_bits(a.params[k], b.params[k]) for k in a.params) \
        and list(a.hyper.items()) == list(b.hyper.items()) \
        and all(type(a.hyper[k]) is type(b.hyper[k]) for k in a.hyper)


def never_drawn(*args, **kwargs):
    raise AssertionError("drew an example the session's file holds")


@pytest.fixture
def fresh_process(monkeypatch):
    """This process as a new round starts it: no small example held yet."""
    monkeypatch.setattr(cases, "_SMALL", {})
    return monkeypatch


def test_examples_read_from_the_session_are_the_fresh_draws_bit_for_bit(tmp_path, fresh_process):
    assert examples.prepare(CASES, "cpu", tmp_path) == {"read": 0, "drawn": len(CASES)}
    drawn = small_examples()
    fresh_process.setattr(cases, "_SMALL", {})
    fresh_process.setattr(cases, "draw_small_example", never_drawn)
    assert examples.prepare(CASES, "cpu", tmp_path) == {"read": len(CASES), "drawn": 0}
    read = small_examples()
    for case in CASES:
        assert identical(read[case.subject], drawn[case.subject]), case.subject
        subject, spec = cases.runnable(case)  # and the case grows it as it grows the drawn one
        family = cases.FAMILIES[cases.family_of(spec.id)]
        dims = next(size.dims for size in family.sizes if size.name == case.size)
        assert identical(cases.example_for(subject, spec, case.size), family.grow(drawn[case.subject], dims))


def test_the_comparison_tells_a_changed_example_apart():
    ex = Example(torch.tensor([0.0, 1.5], dtype=torch.float64), {"w": torch.ones(2, dtype=torch.float64)},
                 {"flag": True, "n": 1, "mode": "zero", "t": None})
    assert identical(ex, Example(ex.x.clone(), {"w": ex.params["w"].clone()}, dict(ex.hyper)))
    for changed in (Example(torch.tensor([-0.0, 1.5], dtype=torch.float64), ex.params, ex.hyper),
                    Example(ex.x.float(), ex.params, ex.hyper),
                    Example(ex.x, {"w": ex.params["w"][:1]}, ex.hyper),
                    Example(ex.x, ex.params, {**ex.hyper, "flag": 1}),
                    Example(ex.x, ex.params, {"n": 1, "flag": True, "mode": "zero", "t": None})):
        assert not identical(ex, changed)


def test_examples_of_other_code_are_drawn_not_read(tmp_path, fresh_process):
    assert examples.prepare(CASES[:2], "cpu", tmp_path, identity="code-a") == {"read": 0, "drawn": 2}
    fresh_process.setattr(cases, "_SMALL", {})
    assert examples.prepare(CASES[:2], "cpu", tmp_path, identity="code-b") == {"read": 0, "drawn": 2}
    fresh_process.setattr(cases, "_SMALL", {})
    fresh_process.setattr(cases, "draw_small_example", never_drawn)
    assert examples.prepare(CASES[:2], "cpu", tmp_path, identity="code-a") == {"read": 2, "drawn": 0}


def test_a_damaged_file_is_drawn_again(tmp_path, fresh_process):
    (tmp_path / "examples-code-a.pt").write_bytes(b"not a file torch wrote")
    assert examples.prepare(CASES[:1], "cpu", tmp_path, identity="code-a") == {"read": 0, "drawn": 1}
    fresh_process.setattr(cases, "_SMALL", {})
    assert examples.prepare(CASES[:1], "cpu", tmp_path, identity="code-a") == {"read": 1, "drawn": 0}


def test_the_code_identity_changes_with_any_file_of_the_code_and_nothing_else(tmp_path):
    for path, text in (("conformance/specs/a.py", "A = 1\n"), ("qsnn_reference/b.py", "B = 2\n"),
                       ("pyproject.toml", "[project]\n"), ("suites/t.py", "T = 3\n")):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    first = examples.code_identity(tmp_path)
    (tmp_path / "suites" / "t.py").write_text("T = 4\n")  # not code a round runs
    (tmp_path / "conformance" / "specs" / "__pycache__").mkdir()
    (tmp_path / "conformance" / "specs" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    assert examples.code_identity(tmp_path) == first
    for path, text in (("qsnn_reference/b.py", "B = 3\n"), ("pyproject.toml", "[project]\nname = 'x'\n"),
                       ("conformance/specs/c.py", "")):
        before = (tmp_path / path).read_text() if (tmp_path / path).exists() else None
        (tmp_path / path).write_text(text)
        assert examples.code_identity(tmp_path) != first, path
        if before is None:
            (tmp_path / path).unlink()
        else:
            (tmp_path / path).write_text(before)
        assert examples.code_identity(tmp_path) == first
    (tmp_path / "conformance" / "specs" / "a.py").rename(tmp_path / "conformance" / "specs" / "z.py")  # same bytes
    assert examples.code_identity(tmp_path) != first


def test_a_round_outside_a_session_draws_its_own(fresh_process):
    assert examples.prepare(CASES[:1], "cpu") == {"read": 0, "drawn": 1}
