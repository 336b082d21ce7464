"""Sizes past a kernel's tiles and accumulators (issue 43, classes 2 and 3): the specs' ``size_edges`` (sequences of
9, 16 and 33 steps; K of 257, 320 and 513 with rows whose signs all agree and all disagree with the weights) find what
the edges and the draws never reach, and only the cells that judge the spec in eager float32 pay for them."""

import dataclasses

import pytest
import torch

from conformance import registry
from conformance.core import strategies as cs
from conformance.core.types import Cell
from conformance.runner import _judges_sizes, run_cell
from conformance.subjects.reference import SpecModule
from qsnn_reference import binary, neurons, packing

from .mutants import ACCUMULATES_IN_INT8, PACKS_FIRST_256_BITS, TILES_TIME_FROM_REST, _subject

#: each size mutant with a control: the same declaration built on the clean spec
CONTROLS = {
    TILES_TIME_FROM_REST.id: TILES_TIME_FROM_REST.replace(
        id="mutant.tiles_time_control", build=lambda ex: SpecModule(neurons.leaky, ex.params, ex.hyper)),
    ACCUMULATES_IN_INT8.id: ACCUMULATES_IN_INT8.replace(
        id="mutant.accumulates_control", build=lambda ex: SpecModule(binary.binary_linear, ex.params, ex.hyper)),
    PACKS_FIRST_256_BITS.id: _subject("packs_control", "packing.pack_signs",
                                      lambda ex: SpecModule(packing.pack_signs, {}, ex.hyper)),
}


@pytest.fixture(scope="module", autouse=True)
def registered():
    for subject in (TILES_TIME_FROM_REST, ACCUMULATES_IN_INT8, PACKS_FIRST_256_BITS, *CONTROLS.values()):
        registry.register(subject)


def _cell(subject_id: str, dtype: str = "float32") -> Cell:
    return Cell(subject_id, "eager", "forward_matches_spec", "cpu", dtype)


@pytest.mark.parametrize("mutant", [TILES_TIME_FROM_REST, ACCUMULATES_IN_INT8, PACKS_FIRST_256_BITS],
                         ids=lambda m: m.id)
def test_the_size_edges_find_what_the_edges_and_draws_never_reach(mutant, monkeypatch):
    """Caught with the size edges, missed without them (the draws stop at 6 steps and K of 96 or three words), and the
    clean implementation of the same declaration passes."""
    caught = run_cell(_cell(mutant.id))
    assert (caught.outcome, caught.cause) == ("fail", "forward-mismatch"), caught.message[:500]
    assert run_cell(_cell(CONTROLS[mutant.id].id)).outcome == "pass"
    spec = registry.specs()[mutant.spec]
    monkeypatch.setitem(registry.specs(), spec.id, dataclasses.replace(spec, size_edges=None))
    missed = run_cell(_cell(mutant.id))
    assert missed.outcome == "pass", missed.message[:500]


def test_only_the_spec_checks_of_eager_float32_judge_the_size_edges():
    """A compiling transform keeps its graphs as short as before, a transform computing in a dtype of its own and
    bfloat16 (rounding accumulated over 33 steps) do not see them, nor do checks other than the spec's."""
    transforms = registry.transforms()

    def judged(transform: str, check: str, dtype: str = "float32") -> bool:
        return _judges_sizes(Cell("reference.neuron.leaky", transform, check, "cpu", dtype), transforms[transform])

    assert judged("eager", "forward_matches_spec") and judged("eager", "grad_matches_spec")
    assert not judged("eager", "forward_matches_spec", "bfloat16")
    assert not judged("eager", "deterministic")
    assert not judged("compile_aot_eager", "preserves_forward")
    assert not judged("to_float64", "forward_matches_spec")
    assert not judged("half", "grad_matches_spec")


def test_outside_the_cells_that_judge_sizes_the_draws_are_what_they_were():
    """Every other cell (a compiled one, bfloat16, the ci profile) draws exactly the strategies it drew before."""
    from hypothesis import strategies as st

    assert repr(cs.time_steps(1, 6)) == repr(st.integers(1, 6))
    assert repr(cs.reduction_lengths(33, 96)) == repr(st.integers(33, 96))
    with cs.long_draws(True):
        assert repr(cs.time_steps(3, 6)) == repr(st.integers(3, 6) | st.integers(7, 33))


@pytest.mark.parametrize("mutant", [TILES_TIME_FROM_REST, ACCUMULATES_IN_INT8, PACKS_FIRST_256_BITS],
                         ids=lambda m: m.id)
def test_the_long_draws_of_the_dev_profile_reach_them_without_the_size_edges(mutant, monkeypatch):
    """dev and thorough draw sequences of 7 to 33 steps and K past 256 with a row at +K in the cells that judge the
    size edges: they catch each size mutant with the size edges taken away (derandomized here, not shrunk)."""
    import hypothesis

    from conformance import runner
    from conformance.core.settings import PROFILES

    monkeypatch.setitem(PROFILES, "dev", dict(PROFILES["dev"], derandomize=True, database=None))
    monkeypatch.setattr(runner, "settings", lambda **options: hypothesis.settings(
        **dict(options, phases=[p for p in options["phases"] if p is not hypothesis.Phase.shrink])))
    spec = registry.specs()[mutant.spec]
    monkeypatch.setitem(registry.specs(), spec.id, dataclasses.replace(spec, size_edges=None))
    caught = run_cell(_cell(mutant.id), profile="dev")
    assert (caught.outcome, caught.cause) == ("fail", "forward-mismatch"), caught.message[:500]
    assert run_cell(_cell(mutant.id), profile="ci").outcome == "pass"


@pytest.mark.parametrize("spec_id", sorted(s for s in registry.specs() if s.startswith("neuron.")))
def test_the_neurons_size_edges_are_long_sequences_of_the_edge_setting(spec_id):
    """9, 16 and 33 steps with the 6-step edge's parameters, each spiking past the first tile of 8 steps (where a
    tile computed from rest shows)."""
    spec = registry.specs()[spec_id]
    (edge,) = spec.edges()
    sizes = spec.size_edges()
    assert [e.x.shape for e in sizes] == [(steps, 1, 4) for steps in cs.LONG_SEQUENCE_STEPS]
    assert max(cs.LONG_SEQUENCE_STEPS) >= 33 and all(e.hyper == edge.hyper for e in sizes)
    assert all(torch.equal(e.params[k], edge.params[k]) for e in sizes for k in edge.params)
    assert all(spec.fn(e.x, **e.params, **e.hyper)[8:].sum() > 0 for e in sizes)


@pytest.mark.parametrize("spec_id", ["packing.binary_matmul", "layer.binary_linear"])
def test_the_layers_size_edges_reach_both_accumulator_extremes(spec_id):
    """The first input row's signs all agree with the first weight row's, the second's all disagree: sign dot
    products of exactly +K and -K, K past 256."""
    for example in registry.specs()[spec_id].size_edges():
        weight = example.params.get("w", example.params.get("weight"))
        k = weight.shape[-1]
        dots = example.x.sign() @ weight.sign().T
        assert k > 256 and dots[0, 0] == k and dots[1, 0] == -k


def test_the_conv_size_edge_windows_sum_to_both_extremes():
    for example in registry.specs()["layer.binary_conv2d"].size_edges():
        weight = example.params["weight"]
        k = weight[0].numel()
        sums = torch.nn.functional.conv2d(example.x.sign(), weight.sign())
        assert k > 256 and (sums[0, 0] == k).all() and (sums[1, 0] == -k).all()


def test_the_packing_size_edges_fill_every_word_past_256_bits():
    for example in registry.specs()["packing.pack_signs"].size_edges():
        words = packing.pack_signs(example.x, **example.hyper)[:, 0]  # the row of all +1: every bit set
        length, full = example.x.shape[-1], example.x.shape[-1] // example.hyper["word_bits"]
        assert length > 256 and (words[:, :full] == -1).all() and (words[:, full:] != 0).all()
