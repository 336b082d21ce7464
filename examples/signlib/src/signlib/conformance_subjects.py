"""signlib's layers as subjects of the conformance kit (qsnn-conformance), published through the
``conformance.subjects`` entry point in pyproject.toml. Imported only by the kit, never by signlib itself."""

from __future__ import annotations

import torch
from torch import nn

from conformance.api import CallProtocol, Subject

from .neurons import LIF, MultiStepLIF
from .quant import SignSTE

#: How signlib's neurons are configured, in the words of the kit's spec ``neuron.leaky``.
NEURON_FIXED = {"reset_mechanism": "subtract", "reset_delay": True, "graded_spikes_factor": 1.0,
                "surrogate": "fast_sigmoid", "surrogate_alpha": 25.0, "time_dim": 0}


def _with_parameters(neuron: nn.Module, example) -> nn.Module:
    """``neuron`` holding the example's ``beta`` and ``threshold``."""
    with torch.no_grad():
        neuron.beta.copy_(example.params["beta"])
        neuron.threshold.copy_(example.params["threshold"])
    return neuron


class Sequence(nn.Module):
    """Feeds a single-step ``LIF`` a sequence ``[T, batch, ...]`` one step at a time, as a user's loop does.
    ``from_rest``: every call is a whole sequence from rest (the one-call view); else each call continues the last."""

    def __init__(self, neuron: LIF, from_rest: bool):
        super().__init__()
        self.neuron = neuron
        self.from_rest = from_rest

    def reset(self) -> None:
        self.neuron.reset()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.from_rest:
            self.neuron.reset()
        spikes = torch.stack([self.neuron(x_t) for x_t in x])
        if self.from_rest:
            self.neuron.reset()  # a whole sequence leaves nothing behind
        return spikes


def build_sign(example) -> nn.Module:
    return SignSTE()


def build_lif(example) -> nn.Module:
    return Sequence(_with_parameters(LIF(), example), from_rest=True)


def build_stepped_lif(example) -> nn.Module:
    return Sequence(_with_parameters(LIF(), example), from_rest=False)


def build_multistep_lif(example) -> nn.Module:
    return _with_parameters(MultiStepLIF(), example)


SIGN_STE = Subject(id="signlib.SignSTE", spec="quant.sign_ste", build=build_sign, library="signlib",
                   fixed={"zero_value": 1.0})
LIF_SUBJECT = Subject(id="signlib.LIF", spec="neuron.leaky", build=build_lif, library="signlib",
                      fixed={**NEURON_FIXED, "min_steps": 3},
                      param_map={"beta": "neuron.beta", "threshold": "neuron.threshold"},
                      protocol=CallProtocol(build_stepped_lif, reset="reset"))
MULTISTEP_LIF = Subject(id="signlib.MultiStepLIF", spec="neuron.leaky", build=build_multistep_lif,
                        library="signlib", fixed=NEURON_FIXED,
                        param_map={"beta": "beta", "threshold": "threshold"})


def subjects() -> list[Subject]:
    """The entry point: every subject signlib publishes."""
    return [SIGN_STE, LIF_SUBJECT, MULTISTEP_LIF]
