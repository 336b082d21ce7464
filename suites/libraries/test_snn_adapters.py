"""Unit tests of the spikingjelly, norse and sinabs adapters: each builds, resets its state per call, and computes the
spec on a hand-made example (the matrix judges them on drawn examples; these pin the plumbing)."""

from __future__ import annotations

import pytest
import torch

from conformance.core.types import Example
from conformance.subjects import norse as norse_subjects
from conformance.subjects import sinabs as sinabs_subjects
from conformance.subjects import spikingjelly as sj_subjects
from qsnn_reference import neurons, surrogate


def _subject(module, subject_id):
    return {s.id: s for s in module.subjects()}[subject_id]


def _x(shape, seed=0, scale=1.5):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * scale - 0.3)


def _run_twice(module, x):
    first, second = module(x), module(x)
    assert torch.equal(first, second), "state must be reset at the start of every forward"
    return first


def test_every_subject_declares_its_library():
    for module, library in ((sj_subjects, "spikingjelly"), (norse_subjects, "norse"), (sinabs_subjects, "sinabs")):
        for subject in module.subjects():
            assert subject.library == library and subject.requires == (library,)
            assert subject.id.startswith(f"{library}.")


@pytest.mark.parametrize("step_mode", ["s", "m"])
def test_spikingjelly_lif_matches_spec(step_mode):
    pytest.importorskip("spikingjelly")
    hyper = dict(tau=2.5, decay_input=True, v_threshold=1.0, v_reset=None, detach_reset=False, surrogate="atan",
                 surrogate_alpha=None, time_dim=0)
    x = _x((4, 2, 3)).float()
    module = _subject(sj_subjects, f"spikingjelly.LIFNode[{step_mode}]").build(Example(x.double(), {}, hyper))
    expected = neurons.sj_lif(x.double(), **hyper).float()
    torch.testing.assert_close(_run_twice(module, x), expected)


def test_spikingjelly_plif_maps_w():
    pytest.importorskip("spikingjelly")
    hyper = dict(decay_input=False, v_threshold=0.8, v_reset=0.0, detach_reset=True, surrogate="sigmoid",
                 surrogate_alpha=3.0, time_dim=0)
    w = torch.tensor(0.4, dtype=torch.float64)
    subject = _subject(sj_subjects, "spikingjelly.ParametricLIFNode[s]")
    module = subject.build(Example(_x((3, 1, 2)), {"w": w}, hyper))
    assert module.get_parameter(subject.param_map["w"]).item() == pytest.approx(0.4)


def test_spikingjelly_surrogate_is_non_strict():
    pytest.importorskip("spikingjelly")
    module = _subject(sj_subjects, "spikingjelly.surrogate.ATan").build(Example(torch.zeros(1), {}, {"alpha": 2.0}))
    assert module(torch.tensor([0.0, -0.1, 0.1])).tolist() == [1.0, 0.0, 1.0]


def test_norse_lif_cell_matches_spec():
    pytest.importorskip("norse")
    params = {k: torch.tensor(v, dtype=torch.float64) for k, v in
              dict(tau_syn_inv=200.0, tau_mem_inv=100.0, v_leak=0.0, v_th=0.5, v_reset=0.0).items()}
    hyper = dict(dt=1e-3, detach_reset=False, surrogate="fast_sigmoid", surrogate_alpha=1.0, time_dim=0)
    x = _x((5, 2, 3), scale=200.0)
    module = _subject(norse_subjects, "norse.LIFCell").build(Example(x, params, hyper))
    expected = neurons.norse_lif(x, **params, **hyper)
    torch.testing.assert_close(_run_twice(module, x.float()), expected.float())


def test_norse_sequence_equals_cell_loop():
    pytest.importorskip("norse")
    params = {k: torch.tensor(v, dtype=torch.float64) for k, v in
              dict(tau_syn_inv=150.0, tau_mem_inv=80.0, v_leak=0.1, v_th=0.6, v_reset=-0.1).items()}
    hyper = dict(dt=1e-3, detach_reset=False, surrogate="triangular", surrogate_alpha=0.5, time_dim=0)
    x = _x((4, 2, 2), seed=3, scale=300.0)
    example = Example(x, params, hyper)
    seq = _subject(norse_subjects, "norse.LIF[triangle]").build(example)
    torch.testing.assert_close(_run_twice(seq, x.float()), neurons.norse_lif(x, **params, **hyper).float())


@pytest.mark.parametrize("subject_id", ["sinabs.IAF", "sinabs.IAFSqueeze"])
def test_sinabs_iaf_is_batch_major(subject_id):
    pytest.importorskip("sinabs")
    subject = _subject(sinabs_subjects, subject_id)
    assert subject.fixed["time_dim"] == 1
    hyper = dict(spike_threshold=1.0, spike_fn="multi", reset="subtract", min_v_mem=None,
                 surrogate="single_exponential", grad_width=0.5, grad_scale=1.0, time_dim=1)
    x = _x((2, 5, 3), seed=1, scale=2.5)  # (B, T, N)
    module = subject.build(Example(x, {}, hyper))
    torch.testing.assert_close(_run_twice(module, x.float()), neurons.sinabs_iaf(x, **hyper).float())


def test_sinabs_lif_maps_tau_mem():
    pytest.importorskip("sinabs")
    subject = _subject(sinabs_subjects, "sinabs.LIF")
    hyper = dict(norm_input=False, spike_threshold=1.0, spike_fn="single", reset="zero", min_v_mem=-0.5,
                 surrogate="multi_gaussian", grad_width=0.5, grad_scale=1.0, time_dim=1)
    tau = torch.tensor(3.0, dtype=torch.float64)
    x = _x((2, 4, 2), seed=2, scale=2.0)
    module = subject.build(Example(x, {"tau_mem": tau}, hyper))
    assert module.get_parameter(subject.param_map["tau_mem"]).item() == pytest.approx(3.0)
    torch.testing.assert_close(_run_twice(module, x.float()),
                               neurons.sinabs_lif(x, tau_mem=tau, **hyper).float())


def test_sinabs_single_exponential_gradient():
    pytest.importorskip("sinabs")
    module = _subject(sinabs_subjects, "sinabs.SingleSpike[SingleExponential]").build(
        Example(torch.zeros(1), {}, {"width": 0.4, "scale": 1.5, "strict": False}))
    x = torch.tensor([-0.7, 0.3, 1.2], requires_grad=True)
    module(x).sum().backward()
    torch.testing.assert_close(x.grad, surrogate.single_exponential_grad(x.detach(), width=0.4, scale=1.5))
