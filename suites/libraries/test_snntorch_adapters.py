"""Unit tests of the snntorch adapters: parameter mapping, surrogate argument names, the rollout's reset.

Each test states one property of the adapter (not of snntorch); all skip when snntorch is not installed.
"""

from __future__ import annotations

import pickle

import pytest
import torch

from conformance.core.types import Example
from conformance.subjects import snntorch as adapters

snntorch = pytest.importorskip("snntorch")


def leaky_example(**hyper) -> Example:
    x = torch.tensor([[[0.6, 1.4]], [[0.7, -0.2]], [[0.9, 0.3]]], dtype=torch.float64)  # (T=3, B=1, N=2)
    params = {"beta": torch.tensor(0.8, dtype=torch.float64), "threshold": torch.tensor(0.75, dtype=torch.float64),
              "graded_spikes_factor": torch.tensor(1.5, dtype=torch.float64)}
    base = {"reset_mechanism": "subtract", "reset_delay": True, "surrogate": "fast_sigmoid", "surrogate_alpha": 3.0,
            "time_dim": 0}
    return Example(x, params, {**base, **hyper})


def test_every_subject_claims_snntorch_and_builds_lazily():
    subjects = list(adapters.subjects())
    exchange = ("model.snn_network", "model.snn_conv_network")  # its three exchange networks
    assert 12 <= len([s for s in subjects if s.spec not in exchange]) <= 19
    assert {s.library for s in subjects} == {"snntorch"}
    assert all(s.requires == ("snntorch",) for s in subjects)
    assert len({s.id for s in subjects}) == len(subjects)


def test_the_default_leaky_holds_its_membrane_between_calls_only_when_persisting():
    """``Leaky(beta)`` called without mem: one call of T steps from rest equals T calls of one step when the layer
    persists; without ``persist`` every call starts from reset_mem()."""
    example = leaky_example()
    x = example.x.float()
    whole = adapters.build_default("Leaky")(example)(x)
    stepped = adapters.build_default("Leaky", persist=True)(example)
    assert torch.equal(torch.cat([stepped(x[t:t + 1]) for t in range(x.shape[0])]), whole)
    fresh = adapters.build_default("Leaky")(example)
    from_rest = torch.cat([fresh(x[t:t + 1]) for t in range(x.shape[0])])
    assert torch.equal(from_rest, (x >= 1.0).to(x.dtype))  # each step alone, from rest: fires where x reaches 1
    assert not torch.equal(from_rest, whole)  # the carried membrane fires neuron 0 at step 2 (0.8 * 0.6 + 0.7)
    assert fresh.neuron.threshold.item() == 1.0 and fresh.neuron.reset_mechanism == "subtract"  # snntorch's defaults


def test_factory_kwargs_use_snntorch_argument_names():
    assert adapters.factory_kwargs("fast_sigmoid", {"alpha": 7.0, "strict": True}) == {"slope": 7.0}
    assert adapters.factory_kwargs("sigmoid", {"alpha": 7.0, "strict": True}) == {"slope": 7.0}
    assert adapters.factory_kwargs("atan", {"alpha": 7.0, "strict": True}) == {"alpha": 7.0}
    assert adapters.factory_kwargs("triangular", {"alpha": 0.5, "strict": True}) == {"threshold": 0.5}
    assert adapters.factory_kwargs("spike_rate_escape", {"alpha": 3.0, "beta": 0.5, "strict": True}) == \
        {"slope": 3.0, "beta": 0.5}
    assert adapters.factory_kwargs("heaviside", {"strict": True}) == {}


def test_surrogate_alpha_none_means_the_spec_default_not_the_library_default():
    # snntorch's sigmoid defaults to slope=25; the spec's sigmoid to alpha=4.
    assert adapters.spec_default_alpha("sigmoid") == 4.0
    assert adapters.spike_grad("atan", None) is None  # snntorch's own default: atan(alpha=2), as the spec's
    x = torch.tensor([-0.3, 0.2], requires_grad=True)
    adapters.spike_grad("sigmoid", None)(x).sum().backward()
    expected = 4.0 * torch.sigmoid(4.0 * x.detach()) * torch.sigmoid(-4.0 * x.detach())
    torch.testing.assert_close(x.grad, expected)


def test_leaky_parameters_are_loaded_into_the_layer():
    example = leaky_example()
    module = adapters.build_leaky(learn_beta=True)(example)
    assert isinstance(module.neuron.beta, torch.nn.Parameter)
    assert module.get_parameter("neuron.beta").item() == pytest.approx(0.8)
    assert module.neuron.threshold.item() == pytest.approx(0.75)
    assert module.neuron.graded_spikes_factor.item() == pytest.approx(1.5)
    assert "neuron.threshold" not in dict(module.named_parameters())  # a buffer unless learn_threshold


def test_rleaky_maps_V_and_bias_onto_the_recurrent_linear():
    example = leaky_example()
    V = torch.tensor([[0.1, -0.2], [0.3, 0.4]], dtype=torch.float64)
    bias = torch.tensor([0.05, -0.05], dtype=torch.float64)
    example = example._replace(params={"beta": example.params["beta"], "threshold": example.params["threshold"],
                                       "V": V, "recurrent_bias": bias},
                               hyper={**example.hyper, "all_to_all": True})
    module = adapters.build_rleaky(example)
    subject = next(s for s in adapters.subjects() if s.id == "snntorch.RLeaky")
    torch.testing.assert_close(module.get_parameter(subject.param_map["V"]).double(), V, check_dtype=False)
    torch.testing.assert_close(module.get_parameter(subject.param_map["recurrent_bias"]).double(), bias,
                               check_dtype=False)


@pytest.mark.parametrize("init_hidden", [False, True])
def test_rollout_starts_every_forward_from_a_reset_state(init_hidden):
    module = adapters.build_leaky(init_hidden=init_hidden)(leaky_example())
    x = leaky_example().x.float()
    first, second = module(x), module(x)
    assert first.shape == x.shape
    torch.testing.assert_close(first, second)


def test_leaky_rollout_matches_the_documented_first_steps():
    # U0 = 0.6 (no spike at thr 0.75), U1 = 0.8*0.6 + 0.7 = 1.18 > 0.75 -> spike scaled by 1.5.
    example = leaky_example()
    spikes = adapters.build_leaky()(example)(example.x.float())
    assert spikes[:2, 0, 0].tolist() == [0.0, 1.5]


def test_surrogate_module_pickles_by_reference_to_the_factory():
    module = adapters.build_surrogate("atan")(Example(torch.zeros(2), {}, {"alpha": 2.0, "strict": True}))
    clone = pickle.loads(pickle.dumps(module))
    assert clone.factory is snntorch.surrogate.atan and clone.kwargs == {"alpha": 2.0}


def test_rsynaptic_rollout_passes_step_shaped_state():
    # RSynaptic's reset_delay=False branch reads its state arguments: an empty state would raise there.
    x = torch.tensor([[[1.5, 0.2]], [[0.1, 0.9]]], dtype=torch.float64)
    params = {name: torch.tensor(value, dtype=torch.float64)
              for name, value in {"alpha": 0.5, "beta": 0.7, "threshold": 1.0, "V": 0.3}.items()}
    hyper = {"all_to_all": False, "reset_mechanism": "subtract", "reset_delay": False, "surrogate": "atan",
             "surrogate_alpha": None, "time_dim": 0}
    module = adapters.build_rsynaptic(Example(x, params, hyper))
    assert module.get_parameter("neuron.V").item() == pytest.approx(0.3)
    assert module(x.float()).shape == x.shape


def test_known_failures_name_registered_causes_and_evidence():
    from conformance.core.causes import CAUSES
    from conformance.transforms.bdpy import SOURCE as BDPY_SOURCE

    for subject in adapters.subjects():
        for known in subject.known:
            if known.link.startswith(BDPY_SOURCE):
                continue  # bdpy's findings (its transform), evidence in bdpy's source: suites/libraries/test_bdpy_*
            for cause in (known.cause, *known.also):  # the taxonomy, or its graph-break:<dynamo reason> family
                assert cause in CAUSES or cause.startswith("graph-break:"), (subject.id, known)
            assert known.reason and known.link.startswith("https://github.com/jeshraghian/snntorch/")
