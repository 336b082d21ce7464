"""The neuron specs against trajectories computed by hand, their own step functions, and the transforms.

Hand trajectories use numbers whose float64 arithmetic is exact enough to state literally (beta = 0.5, inputs 0.6).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.specs.neuron import EXACT_NEURON_EDGES, SPECS
from qsnn_reference import neurons as N
from qsnn_reference import surrogate as S

NEURON_SPECS = {spec.id.split(".", 1)[1]: spec for spec in SPECS if spec.family == "neuron"}
NAMES = sorted(NEURON_SPECS)
FEW = settings(max_examples=12, deadline=None)
ONE = settings(max_examples=1, deadline=None, derandomize=True)
F64 = torch.float64


def _col(values) -> torch.Tensor:
    """A (T, 1, 1) float64 input from a list of per-step values."""
    return torch.tensor(values, dtype=F64).reshape(-1, 1, 1)


def _run_steps(step, x, state, *, feed_spike=False, **kw):
    """Run ``step`` over time; returns per-step spikes and states (recurrent steps get their spike back)."""
    spikes, mems = [], []
    for t in range(x.shape[0]):
        spk, *state = step(x[t], *state, **kw)
        spikes.append(spk.flatten().tolist())
        mems.append([s.flatten().tolist() for s in state])
        if feed_spike:
            state = [spk, *state]
    return spikes, mems


def test_spec_ids_are_the_declared_ones():
    expected = {"leaky", "synaptic", "alpha", "lapicque", "rleaky", "rsynaptic", "sj_if", "sj_lif", "sj_plif",
                "norse_lif", "norse_lif_box", "sinabs_iaf", "sinabs_lif"}
    assert set(NAMES) == expected
    assert all(spec.time_dim == 0 and spec.batch_dim == 1 for spec in NEURON_SPECS.values())


# --- hand-computed trajectories ---------------------------------------------------------------------------------------

# beta = 0.5, threshold = 1, x = 0.6 for 5 steps; spikes and stored membranes.
LEAKY = {
    ("subtract", True): ([0, 0, 1, 0, 0], [0.6, 0.9, 1.05, 0.125, 0.6625]),
    ("zero", True): ([0, 0, 1, 0, 0], [0.6, 0.9, 1.05, 0.6, 0.9]),
    ("none", True): ([0, 0, 1, 1, 1], [0.6, 0.9, 1.05, 1.125, 1.1625]),
    ("subtract", False): ([0, 0, 1, 0, 0], [0.6, 0.9, 0.05, 0.625, 0.9125]),
    ("zero", False): ([0, 0, 1, 0, 0], [0.6, 0.9, 0.0, 0.6, 0.9]),
    ("none", False): ([0, 0, 1, 1, 1], [0.6, 0.9, 1.05, 1.125, 1.1625]),
}


@pytest.mark.parametrize("reset_mechanism,reset_delay", sorted(LEAKY))
def test_leaky_hand_trajectory(reset_mechanism, reset_delay):
    x = _col([0.6] * 5)
    spikes, mems = _run_steps(N.leaky_step, x, (torch.zeros(1, 1, dtype=F64),), beta=0.5, threshold=1.0,
                              reset_mechanism=reset_mechanism, reset_delay=reset_delay)
    expected_spk, expected_mem = LEAKY[(reset_mechanism, reset_delay)]
    assert [s[0] for s in spikes] == expected_spk
    assert [m[0][0] for m in mems] == pytest.approx(expected_mem)
    rollout = N.leaky(x, beta=0.5, threshold=1.0, reset_mechanism=reset_mechanism, reset_delay=reset_delay)
    assert rollout.flatten().tolist() == expected_spk


def test_leaky_graded_spikes_scale_the_output_not_the_reset():
    x = _col([0.6] * 5)
    graded = N.leaky(x, beta=0.5, threshold=1.0, graded_spikes_factor=torch.tensor(2.5, dtype=F64), reset_delay=False)
    plain = N.leaky(x, beta=0.5, threshold=1.0, reset_delay=False)
    torch.testing.assert_close(graded, 2.5 * plain)


def test_leaky_reset_gradient_is_detached_when_delayed_and_not_otherwise():
    x, thr, beta = torch.tensor([0.3], dtype=F64), 1.0, 0.5
    mem = torch.tensor([1.5], dtype=F64, requires_grad=True)
    _, new = N.leaky_step(x, mem, beta=beta, threshold=thr, reset_delay=True)
    assert torch.autograd.grad(new.sum(), mem)[0].item() == pytest.approx(beta)  # reset H(mem - thr) detached
    _, new = N.leaky_step(x, mem, beta=beta, threshold=thr, reset_delay=False)
    # the stored 1.5 > thr still subtracts thr first; then the immediate reset carries the surrogate gradient
    u = beta * 1.5 + 0.3 - thr - thr
    expected = beta - thr * S.atan_grad(torch.tensor(u), alpha=2.0).item() * beta
    assert torch.autograd.grad(new.sum(), mem)[0].item() == pytest.approx(expected)


def test_leaky_spike_gradient_is_the_surrogate_at_the_margin():
    x = torch.tensor([0.7], dtype=F64, requires_grad=True)
    spk, _ = N.leaky_step(x, torch.tensor([0.4], dtype=F64), beta=0.5, threshold=1.0, surrogate="fast_sigmoid",
                          surrogate_alpha=3.0)
    u = 0.5 * 0.4 + 0.7 - 1.0
    assert torch.autograd.grad(spk.sum(), x)[0].item() == pytest.approx((1 + 3.0 * abs(u)) ** -2)


SYNAPTIC = {  # alpha = beta = 0.5, threshold 1, x = 0.6 x 4
    "subtract": ([0, 1, 0, 1], [0.6, 1.2, 0.65, 1.45]),
    "zero": ([0, 1, 0, 1], [0.6, 1.2, 0.0, 1.125]),
    "none": ([0, 1, 1, 1], [0.6, 1.2, 1.65, 1.95]),
}


@pytest.mark.parametrize("reset_mechanism", sorted(SYNAPTIC))
def test_synaptic_hand_trajectory(reset_mechanism):
    zero = torch.zeros(1, 1, dtype=F64)
    spikes, states = _run_steps(N.synaptic_step, _col([0.6] * 4), (zero, zero), alpha=0.5, beta=0.5, threshold=1.0,
                                reset_mechanism=reset_mechanism)
    assert [s[0] for s in spikes] == SYNAPTIC[reset_mechanism][0]
    assert [s[1][0] for s in states] == pytest.approx(SYNAPTIC[reset_mechanism][1])
    assert [s[0][0] for s in states] == pytest.approx([0.6, 0.9, 1.05, 1.125])  # the current is never reset


ALPHA = {  # alpha 0.5, beta 0.25 (tau_alpha = 2), threshold 0.9, x = 2 x 3: membranes
    "zero": ([0, 1, 0], [0.0, 1.0, 0.0]),
    "subtract": ([0, 1, 0], [0.0, 1.0, -0.75]),
    "none": ([0, 1, 1], [0.0, 1.0, 1.75]),
}


@pytest.mark.parametrize("reset_mechanism", sorted(ALPHA))
def test_alpha_hand_trajectory(reset_mechanism):
    zero = torch.zeros(1, 1, dtype=F64)
    spikes, states = _run_steps(N.alpha_step, _col([2.0] * 3), (zero, zero, zero), alpha=0.5, beta=0.25,
                                threshold=0.9, reset_mechanism=reset_mechanism)
    assert [s[0] for s in spikes] == ALPHA[reset_mechanism][0]
    assert [s[2][0] for s in states] == pytest.approx(ALPHA[reset_mechanism][1])


@pytest.mark.parametrize("reset_mechanism,expected", [("subtract", 0.125), ("zero", 0.0), ("none", 1.125)])
def test_lapicque_hand_trajectory_uses_euler_decay(reset_mechanism, expected):
    # R = 1, C = 2, T = 1: decay 1 - T/(RC) = 0.5 (not exp(-0.5)), input gain T/C = 0.5.
    spikes, states = _run_steps(N.lapicque_step, _col([1.2] * 4), (torch.zeros(1, 1, dtype=F64),), R=1.0, C=2.0,
                                time_step=1.0, threshold=1.0, reset_mechanism=reset_mechanism)
    assert [s[0][0] for s in states] == pytest.approx([0.6, 0.9, 1.05, expected])
    assert [s[0] for s in spikes] == [0, 0, 1, float(reset_mechanism == "none")]


@pytest.mark.parametrize("reset_mechanism,expected", [("subtract", 0.625), ("zero", 0.0), ("none", 1.625)])
def test_rleaky_one_to_one_hand_trajectory(reset_mechanism, expected):
    zero = torch.zeros(1, 1, dtype=F64)
    spikes, states = _run_steps(N.rleaky_step, _col([0.6] * 4), (zero, zero), beta=0.5, V=0.5, threshold=1.0,
                                reset_mechanism=reset_mechanism, feed_spike=True)
    assert [s[0][0] for s in states] == pytest.approx([0.6, 0.9, 1.05, expected])


def test_rleaky_all_to_all_uses_a_linear_layer_on_the_previous_spike():
    V = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=F64)
    bias = torch.tensor([0.1, 0.0], dtype=F64)
    x = torch.tensor([[[1.5, 0.0]], [[0.0, 0.0]]], dtype=F64)
    zero = torch.zeros(1, 2, dtype=F64)
    spikes, states = _run_steps(N.rleaky_step, x, (zero, zero), beta=0.5, V=V, recurrent_bias=bias, all_to_all=True,
                                threshold=1.0, feed_spike=True)
    assert spikes == [[1.0, 0.0], [0.0, 0.0]]  # 1.0 is not above the threshold (strict)
    assert states[0][0] == pytest.approx([1.6, 0.0])
    assert states[1][0] == pytest.approx([-0.1, 1.0])


@pytest.mark.parametrize("reset_mechanism,expected,spike", [("subtract", 1.15, 1), ("zero", 0.0, 0),
                                                             ("none", 2.15, 1)])
def test_rsynaptic_hand_trajectory(reset_mechanism, expected, spike):
    zero = torch.zeros(1, 1, dtype=F64)
    spikes, states = _run_steps(N.rsynaptic_step, _col([0.6] * 3), (zero, zero, zero), alpha=0.5, beta=0.5, V=0.5,
                                threshold=1.0, reset_mechanism=reset_mechanism, feed_spike=True)
    assert [s[0] for s in spikes] == [0, 1, spike]
    assert [s[0][0] for s in states] == pytest.approx([0.6, 0.9, 1.55])
    assert [s[1][0] for s in states] == pytest.approx([0.6, 1.2, expected])


@pytest.mark.parametrize("v_reset,inputs,spikes,voltages", [
    (0.0, [0.6, 0.6, 0.6], [0, 1, 0], [0.6, 0.0, 0.6]),
    (None, [0.6, 0.6, 0.6], [0, 1, 0], [0.6, 0.2, 0.8]),
    (-0.5, [0.6, 0.6, 0.6], [0, 0, 1], [0.1, 0.7, -0.5]),
    (0.0, [0.5, 0.5], [0, 1], [0.5, 0.0]),  # H = 1.0 = threshold spikes: spikingjelly fires on >=
])
def test_sj_if_hand_trajectory(v_reset, inputs, spikes, voltages):
    v0 = torch.full((1, 1), 0.0 if v_reset is None else v_reset, dtype=F64)
    got_spikes, states = _run_steps(N.sj_if_step, _col(inputs), (v0,), v_threshold=1.0, v_reset=v_reset)
    assert [s[0] for s in got_spikes] == spikes
    assert [s[0][0] for s in states] == pytest.approx(voltages)
    assert N.sj_if(_col(inputs), v_threshold=1.0, v_reset=v_reset).flatten().tolist() == spikes


@pytest.mark.parametrize("decay_input,v_reset,inputs,spikes,voltages", [
    (True, 0.0, [1.5, 1.5, 1.5], [0, 1, 0], [0.75, 0.0, 0.75]),
    (False, 0.0, [0.6, 0.6, 0.6], [0, 0, 1], [0.6, 0.9, 0.0]),
    (False, None, [0.6, 0.6, 0.6], [0, 0, 1], [0.6, 0.9, 0.05]),
])
def test_sj_lif_and_plif_hand_trajectory(decay_input, v_reset, inputs, spikes, voltages):
    v0 = torch.zeros(1, 1, dtype=F64)
    got_spikes, states = _run_steps(N.sj_lif_step, _col(inputs), (v0,), tau=2.0, decay_input=decay_input,
                                    v_reset=v_reset)
    assert [s[0] for s in got_spikes] == spikes
    assert [s[0][0] for s in states] == pytest.approx(voltages)
    w = torch.zeros((), dtype=F64)  # sigmoid(0) = 1/2 = 1/tau
    got_spikes, states = _run_steps(N.sj_plif_step, _col(inputs), (v0,), w=w, decay_input=decay_input,
                                    v_reset=v_reset)
    assert [s[0] for s in got_spikes] == spikes
    assert [s[0][0] for s in states] == pytest.approx(voltages)


def test_sj_plif_gradient_through_w():
    w = torch.zeros((), dtype=F64, requires_grad=True)
    _, margin = N.sj_plif_trace(_col([0.8]), w=w, v_threshold=1.0)
    (grad,) = torch.autograd.grad(margin.sum(), w)
    assert grad.item() == pytest.approx(0.8 * 0.5 * 0.5)  # H = x q, dq/dw = q (1 - q)


@pytest.mark.parametrize("detach_reset", [False, True])
def test_sj_detach_reset(detach_reset):
    v = torch.tensor([[0.7]], dtype=F64, requires_grad=True)
    _, new = N.sj_if_step(torch.tensor([[0.5]], dtype=F64), v, v_threshold=1.0, v_reset=None,
                          detach_reset=detach_reset, surrogate="sigmoid", surrogate_alpha=4.0)
    sg = 4.0 * (1 / (1 + math.exp(-0.8))) * (1 - 1 / (1 + math.exp(-0.8)))
    expected = 1.0 if detach_reset else 1.0 - 1.0 * sg
    assert torch.autograd.grad(new.sum(), v)[0].item() == pytest.approx(expected)


def test_norse_lif_hand_trajectory_jumps_current_before_integrating():
    zero = torch.zeros(1, 1, dtype=F64)
    spikes, states = _run_steps(N.norse_lif_step, _col([5.0, 5.0, 5.0]), (zero, zero), tau_mem_inv=100.0,
                                tau_syn_inv=200.0, v_leak=0.0, v_th=1.0, v_reset=0.0, dt=1e-3)
    assert [s[0] for s in spikes] == [0, 1, 1]
    assert [s[0][0] for s in states] == pytest.approx([0.5, 0.0, 0.0])
    assert [s[1][0] for s in states] == pytest.approx([4.0, 7.2, 9.76])
    _, margin = N.norse_lif_trace(_col([5.0, 5.0, 5.0]))
    assert margin.flatten().tolist() == pytest.approx([-0.5, 0.35, 0.22])


def test_norse_lif_starts_at_v_leak():
    _, margin = N.norse_lif_trace(_col([0.0]), v_leak=0.3, v_th=1.0)
    assert margin.item() == pytest.approx(0.3 - 1.0)


@pytest.mark.parametrize("reset,voltages", [("value", [0.6, 0.0, 0.6]), ("subtract", [0.6, 0.14, 0.726])])
def test_norse_lif_box_hand_trajectory(reset, voltages):
    spikes, states = _run_steps(N.norse_lif_box_step, _col([6.0] * 3), (torch.zeros(1, 1, dtype=F64),),
                                tau_mem_inv=100.0, v_th=1.0, reset=reset)
    assert [s[0] for s in spikes] == [0, 1, 0]
    assert [s[0][0] for s in states] == pytest.approx(voltages)


@pytest.mark.parametrize("spike_fn,reset,inputs,spikes,voltages", [
    ("multi", "subtract", [2.5, 0.2, 0.9], [2, 0, 1], [0.5, 0.7, 0.6]),
    ("single", "subtract", [2.5, 0.2, 0.9], [1, 1, 1], [1.5, 0.7, 0.6]),
    ("multi", "zero", [2.5, 0.2, 0.9], [2, 0, 1], [0.0, 0.2, 0.0]),
    ("single", "subtract", [1.0], [1], [0.0]),  # v = threshold spikes: sinabs fires on >=
])
def test_sinabs_iaf_hand_trajectory(spike_fn, reset, inputs, spikes, voltages):
    zero = torch.zeros(1, 1, dtype=F64)
    got, states = _run_steps(N.sinabs_iaf_step, _col(inputs), (zero, zero), spike_threshold=1.0, spike_fn=spike_fn,
                             reset=reset)
    assert [s[0] for s in got] == spikes
    assert [s[0][0] for s in states] == pytest.approx(voltages)


def test_sinabs_min_v_mem_and_synaptic_current():
    zero = torch.zeros(1, 1, dtype=F64)
    _, states = _run_steps(N.sinabs_iaf_step, _col([-2.0, 0.3]), (zero, zero), min_v_mem=-0.5)
    assert [s[0][0] for s in states] == pytest.approx([-0.5, -0.2])
    tau = 1 / math.log(2)  # exp(-1/tau) = 1/2
    got, states = _run_steps(N.sinabs_iaf_step, _col([2.0, 2.0]), (zero, zero), tau_syn=tau)
    assert [s[0] for s in got] == [1, 1]
    assert [s[1][0] for s in states] == pytest.approx([1.0, 1.5])  # i = (i + x) / 2
    assert [s[0][0] for s in states] == pytest.approx([0.0, 0.5])


@pytest.mark.parametrize("norm_input,spikes", [(True, [1, 1, 1]), (False, [2, 2, 2])])
def test_sinabs_lif_hand_trajectory(norm_input, spikes):
    tau = torch.tensor(1 / math.log(2), dtype=F64)  # alpha_mem = 1/2
    out = N.sinabs_lif(_col([2.0] * 3), tau_mem=tau, norm_input=norm_input, spike_threshold=1.0)
    assert out.flatten().tolist() == spikes


def test_sinabs_multi_spike_gradient_is_the_single_exponential_at_the_threshold():
    x = torch.tensor([[[2.3]]], dtype=F64, requires_grad=True)
    out = N.sinabs_iaf(x, spike_threshold=1.0, grad_width=0.5, grad_scale=1.0)
    assert out.item() == 2.0
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert grad.item() == pytest.approx(1 / 0.5 * math.exp(-1.3 / 0.5))


# --- rollout == steps; time_dim; margins --------------------------------------------------------------------------

def _initial(name, x0, example):
    zero = torch.zeros_like(x0)
    hyper, params = example.hyper, example.params
    if name in ("leaky", "lapicque"):
        return (zero,)
    if name in ("synaptic", "rleaky", "sinabs_iaf", "sinabs_lif"):
        return (zero, zero)
    if name in ("alpha", "rsynaptic"):
        return (zero, zero, zero)
    if name.startswith("sj_"):
        return (zero + (hyper["v_reset"] or 0.0),)
    if name == "norse_lif":
        return (zero + params["v_leak"], zero)
    return (zero + params["v_leak"],)


STEPS = {"leaky": N.leaky_step, "synaptic": N.synaptic_step, "alpha": N.alpha_step, "lapicque": N.lapicque_step,
         "rleaky": N.rleaky_step, "rsynaptic": N.rsynaptic_step, "sj_if": N.sj_if_step, "sj_lif": N.sj_lif_step,
         "sj_plif": N.sj_plif_step, "norse_lif": N.norse_lif_step, "norse_lif_box": N.norse_lif_box_step,
         "sinabs_iaf": N.sinabs_iaf_step, "sinabs_lif": N.sinabs_lif_step}


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_rollout_equals_repeated_steps(name, data):
    spec = NEURON_SPECS[name]
    example = data.draw(spec.examples())
    hyper = {k: v for k, v in example.hyper.items() if k != "time_dim"}
    state = _initial(name, example.x[0], example)
    spikes = []
    for t in range(example.x.shape[0]):
        spk, *state = STEPS[name](example.x[t], *state, **example.params, **hyper)
        if name in ("rleaky", "rsynaptic"):
            state = [spk, *state]
        spikes.append(spk)
    torch.testing.assert_close(spec.fn(example.x, **example.params, **example.hyper), torch.stack(spikes))


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_batch_major_equals_transposed_time_major(name, data):
    spec = NEURON_SPECS[name]
    example = data.draw(spec.examples(time_dim=1))
    assert example.hyper["time_dim"] == 1
    hyper = {**example.hyper, "time_dim": 0}
    expected = spec.fn(example.x.transpose(0, 1), **example.params, **hyper).transpose(0, 1)
    torch.testing.assert_close(spec.fn(example.x, **example.params, **example.hyper), expected)
    margin = spec.margin(example)
    assert margin.shape == example.x.shape


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_margin_sign_agrees_with_the_spikes(name, data):
    spec = NEURON_SPECS[name]
    example = data.draw(spec.examples())
    spikes = spec.fn(example.x, **example.params, **example.hyper)
    margin = spec.margin(example)
    assert margin.shape == spikes.shape
    strict = name in ("leaky", "synaptic", "alpha", "lapicque", "rleaky", "rsynaptic", "norse_lif", "norse_lif_box")
    if name.startswith("sinabs") and example.hyper["spike_fn"] == "multi":
        return  # the margin is to the nearest count boundary, whose sign says nothing about spiking
    fired = (margin > 0) if strict else (margin >= 0)
    assert torch.equal(spikes != 0, fired)


def test_drawn_examples_spike_sometimes_and_not_always():
    """A share of examples must contain both spikes and silent steps, or the suite would test nothing."""
    for name, spec in NEURON_SPECS.items():
        mixed = []

        @settings(max_examples=40, deadline=None, derandomize=True)
        @given(example=spec.examples())
        def collect(example):
            out = spec.fn(example.x, **example.params, **example.hyper)
            mixed.append(bool((out != 0).any() and (out == 0).any()))

        collect()
        assert sum(mixed) >= 0.3 * len(mixed), (name, sum(mixed), len(mixed))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_drawn_examples_are_valid_in_every_dtype(name, dtype, data):
    spec = NEURON_SPECS[name]
    example = data.draw(spec.examples())
    x = example.x.to(dtype).requires_grad_()
    params = {k: v.to(dtype).requires_grad_() for k, v in example.params.items()}
    out = spec.fn(x, **params, **example.hyper)
    assert out.dtype == dtype and out.shape == x.shape
    grads = torch.autograd.grad(out.sum(), [x, *params.values()], allow_unused=True)
    assert all(g is None or (g.dtype == dtype and torch.isfinite(g).all()) for g in grads)


# --- bad parameters ----------------------------------------------------------------------------------------------

X = torch.ones(2, 1, 1, dtype=F64)


@pytest.mark.parametrize("call,param", [
    (lambda: N.leaky(X, beta=1.5), "beta"),
    (lambda: N.leaky(X, beta=torch.tensor(-0.1)), "beta"),
    (lambda: N.leaky(X, beta=0.5, reset_mechanism="soft"), "reset_mechanism"),
    (lambda: N.leaky(X, beta=0.5, reset_delay=1), "reset_delay"),
    (lambda: N.leaky(X, beta=0.5, threshold=float("inf")), "threshold"),
    (lambda: N.leaky(X, beta=0.5, surrogate="erf"), "surrogate"),
    (lambda: N.leaky(X, beta=0.5, surrogate_alpha=0.0), "surrogate_alpha"),
    (lambda: N.leaky(X, beta=0.5, time_dim=2), "time_dim"),
    (lambda: N.leaky(X.long(), beta=0.5), "x"),
    (lambda: N.synaptic(X, alpha=2.0, beta=0.5), "alpha"),
    (lambda: N.alpha_neuron(X, alpha=0.5, beta=0.8), "alpha"),
    (lambda: N.alpha_neuron(X, alpha=0.9, beta=0.0), "beta"),
    (lambda: N.lapicque(X, R=0.0), "R"),
    (lambda: N.lapicque(X, C=-1.0), "C"),
    (lambda: N.lapicque(X, time_step=0.0), "time_step"),
    (lambda: N.lapicque(X, R=1.0, C=1.0, time_step=2.0), "time_step"),
    (lambda: N.rleaky(X, beta=0.5, V=torch.ones(3, 3), all_to_all=True), "V"),
    (lambda: N.rleaky(X, beta=0.5, V=0.5, recurrent_bias=torch.zeros(1)), "recurrent_bias"),
    (lambda: N.rsynaptic(X, alpha=0.5, beta=0.5, all_to_all="yes"), "all_to_all"),
    (lambda: N.sj_lif(X, tau=0.0), "tau"),
    (lambda: N.sj_lif(X, tau=-2.0), "tau"),
    (lambda: N.sj_lif(X, tau=0.5), "tau"),
    (lambda: N.sj_lif(X, decay_input=None), "decay_input"),
    (lambda: N.sj_if(X, v_reset="hard"), "v_reset"),
    (lambda: N.sj_if(X, detach_reset="no"), "detach_reset"),
    (lambda: N.sj_plif(X, w=float("nan")), "w"),
    (lambda: N.norse_lif(X, dt=0.0), "dt"),
    (lambda: N.norse_lif(X, dt=-1e-3), "dt"),
    (lambda: N.norse_lif(X, tau_mem_inv=0.0), "tau_mem_inv"),
    (lambda: N.norse_lif(X, tau_syn_inv=-1.0), "tau_syn_inv"),
    (lambda: N.norse_lif_box(X, reset="zero"), "reset"),
    (lambda: N.sinabs_lif(X, tau_mem=0.0), "tau_mem"),
    (lambda: N.sinabs_lif(X, tau_mem=torch.tensor(-1.0)), "tau_mem"),
    (lambda: N.sinabs_iaf(X, spike_threshold=0.0), "spike_threshold"),
    (lambda: N.sinabs_iaf(X, spike_fn="max"), "spike_fn"),
    (lambda: N.sinabs_iaf(X, reset="none"), "reset"),
    (lambda: N.sinabs_iaf(X, surrogate="atan"), "surrogate"),
    (lambda: N.sinabs_iaf(X, grad_width=0.0), "grad_width"),
])
def test_bad_parameters_raise_naming_them(call, param):
    with pytest.raises(ValueError, match=param):
        call()


@pytest.mark.parametrize("name", NAMES)
def test_examples_reject_unknown_fixed_names(name):
    with pytest.raises(ValueError, match="no hyperparameter"):
        NEURON_SPECS[name].examples(not_a_parameter=1)


# --- transforms ------------------------------------------------------------------------------------------------------

def _short(example):
    """At most 4 time steps (time-major) to keep compile and export quick."""
    return example.x[:4]


@pytest.mark.parametrize("name", NAMES)
@ONE
@given(data=st.data())
def test_spec_survives_functorch_transforms(name, data):
    spec = NEURON_SPECS[name]
    example = data.draw(spec.examples())
    x, params, hyper = _short(example), dict(example.params), dict(example.hyper)
    f = lambda t, p: spec.fn(t, **p, **hyper)
    out = f(x, params)
    vmapped = torch.func.vmap(lambda t: f(t, params), in_dims=spec.batch_dim, out_dims=spec.batch_dim)(x)
    torch.testing.assert_close(vmapped, out)
    per_sample = [f(x.select(1, b).unsqueeze(1), params) for b in range(x.shape[1])]
    torch.testing.assert_close(torch.cat(per_sample, dim=1), out)

    weights = torch.linspace(0.5, 1.5, out.numel(), dtype=x.dtype).reshape(out.shape)
    loss = lambda t, p: (f(t, p) * weights).sum()
    grads = torch.func.grad(loss, argnums=(0, 1))(x, params)
    xr = x.clone().requires_grad_()
    pr = {k: v.clone().requires_grad_() for k, v in params.items()}
    expected = torch.autograd.grad(loss(xr, pr), [xr, *pr.values()], allow_unused=True)
    torch.testing.assert_close(grads[0], expected[0])
    for key, g in zip(pr, expected[1:]):
        torch.testing.assert_close(grads[1][key], torch.zeros_like(pr[key]) if g is None else g)

    u = (torch.cos(torch.arange(x.numel(), dtype=x.dtype)).reshape(x.shape),
         {k: torch.full_like(v, 0.3) for k, v in params.items()})
    v = torch.sin(torch.arange(out.numel(), dtype=x.dtype) + 1).reshape(out.shape)
    _, ju = torch.func.jvp(f, (x, params), u)
    _, vjp_fn = torch.func.vjp(f, x, params)
    vjx, vjp = vjp_fn(v)
    lhs = (v * ju).sum()
    rhs = (vjx * u[0]).sum() + sum((vjp[k] * u[1][k]).sum() for k in params)
    torch.testing.assert_close(lhs, rhs)


@pytest.mark.parametrize("name", NAMES)
@ONE
@given(data=st.data())
def test_spec_compiles_fullgraph_and_exports(name, data):
    spec = NEURON_SPECS[name]
    example = data.draw(spec.examples())
    x, hyper = _short(example), dict(example.hyper)
    f = lambda t, p: spec.fn(t, **p, **hyper)
    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
    pe = {k: v.clone().requires_grad_() for k, v in example.params.items()}
    pc = {k: v.clone().requires_grad_() for k, v in example.params.items()}
    ye, yc = f(xe, pe), compiled(xc, pc)
    torch.testing.assert_close(yc, ye)
    weights = torch.linspace(0.5, 1.5, ye.numel(), dtype=x.dtype).reshape(ye.shape)
    ge = torch.autograd.grad((ye * weights).sum(), [xe, *pe.values()], allow_unused=True)
    gc = torch.autograd.grad((yc * weights).sum(), [xc, *pc.values()], allow_unused=True)
    for a, b in zip(gc, ge):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b)

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.held = torch.nn.ParameterDict({k: torch.nn.Parameter(v.clone()) for k, v in example.params.items()})

        def forward(self, t):
            return spec.fn(t, **dict(self.held), **hyper)

    module = Wrapped()
    exported = torch.export.export(module, (x,))
    torch.testing.assert_close(exported.module()(x), module(x))


@pytest.mark.parametrize("name", sorted(EXACT_NEURON_EDGES))
def test_edge_examples_put_membranes_exactly_on_the_threshold(name):
    """The neurons' edge examples (checked first in every cell): dyadic inputs and parameters, so every membrane is
    exact in bfloat16 too over their 6 steps and some sit exactly on the threshold (margin 0, judged, never excused
    as a tie), in either time layout."""
    spec = NEURON_SPECS[name]
    for fixed in ({}, {"time_dim": 1, "min_steps": 3}):
        (example,) = spec.edges(**fixed)
        margin = spec.margin(example)
        assert (margin == 0).sum() >= 2, name
        assert torch.equal(margin.to(torch.bfloat16).double(), margin)
        assert torch.equal(example.x.to(torch.bfloat16).double(), example.x)
        assert example.x.shape[example.hyper["time_dim"]] == 6


@pytest.mark.parametrize("name", sorted(n for n, s in NEURON_SPECS.items() if s.edges is not None
                                        and n not in EXACT_NEURON_EDGES))
def test_edge_examples_of_non_dyadic_neurons_bring_the_inputs_and_the_library_defaults(name):
    """Neurons whose decay is not dyadic get the same input levels (exact in bfloat16), 6 steps in either layout, and
    finite spec outputs; their membranes are not exact, so nothing is claimed about the threshold."""
    spec = NEURON_SPECS[name]
    for fixed in ({}, {"time_dim": 1, "min_steps": 3}):
        (example,) = spec.edges(**fixed)
        assert torch.equal(example.x.to(torch.bfloat16).double(), example.x)
        assert example.x.shape[example.hyper["time_dim"]] == 6
        assert torch.isfinite(spec.fn(example.x, **example.params, **example.hyper)).all()
