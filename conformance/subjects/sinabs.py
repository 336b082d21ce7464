"""sinabs 3.1 (``sinabs.layers``): ``IAF``, ``IAFSqueeze``, ``LIF`` with their spike functions (``MultiSpike``,
``SingleSpike``), reset functions and surrogate gradients, and the surrogates on their own.

sinabs is batch-major, ``(B, T, N)``: the neuron subjects fix the spec's ``time_dim=1``. ``ExpLeak`` has no subject:
it is a non-spiking leaky integrator and no spec describes it. Every forward starts from ``reset_states()``.
"""

from __future__ import annotations

from typing import Any, Iterator

import torch
from torch import nn

from ..types import Example, Known, Subject

LIBRARY = "sinabs"
REQUIRES = ("sinabs",)
_SRC = "https://github.com/synsense/sinabs/blob/develop/sinabs"


def _neuron_kwargs(hyper: dict[str, Any]) -> dict[str, Any]:
    from sinabs.activation import (MembraneReset, MembraneSubtract, MultiGaussian, MultiSpike, SingleExponential,
                                   SingleSpike)

    if hyper["surrogate"] == "single_exponential":
        surrogate = SingleExponential(grad_width=float(hyper["grad_width"]), grad_scale=float(hyper["grad_scale"]))
    else:
        surrogate = MultiGaussian(grad_scale=float(hyper["grad_scale"]))
    return dict(
        spike_threshold=torch.tensor(float(hyper["spike_threshold"])),
        spike_fn=MultiSpike if hyper["spike_fn"] == "multi" else SingleSpike,
        reset_fn=MembraneSubtract() if hyper["reset"] == "subtract" else MembraneReset(reset_value=0.0),
        surrogate_grad_fn=surrogate,
        min_v_mem=None if hyper["min_v_mem"] is None else float(hyper["min_v_mem"]),
    )


class FromReset(nn.Module):
    """A sinabs layer on ``x`` of shape ``(B, T, N)``, its state reset first."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.layer.reset_states()
        return self.layer(x)


class Squeezed(nn.Module):
    """``IAFSqueeze`` on ``x`` of shape ``(B, T, N)``: flattened to ``(B*T, N)`` as sinabs expects, unflattened after."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.layer.reset_states()
        return self.layer(x.flatten(0, 1)).reshape(x.shape)


def build_iaf(example: Example) -> nn.Module:
    from sinabs.layers import IAF

    return FromReset(IAF(**_neuron_kwargs(example.hyper)))


def build_iaf_squeeze(example: Example) -> nn.Module:
    from sinabs.layers import IAFSqueeze

    # num_timesteps (not batch_size) so that any batch size, e.g. one sample under vmap, unflattens correctly.
    return Squeezed(IAFSqueeze(num_timesteps=example.x.shape[1], **_neuron_kwargs(example.hyper)))


def build_lif(example: Example) -> nn.Module:
    from sinabs.layers import LIF

    layer = LIF(tau_mem=float(example.params["tau_mem"]), norm_input=bool(example.hyper["norm_input"]),
                **_neuron_kwargs(example.hyper))
    # sinabs creates tau_mem in float32 whatever the default dtype; hold the drawn value at the cell's precision.
    layer.to(torch.get_default_dtype())
    with torch.no_grad():
        layer.tau_mem.copy_(example.params["tau_mem"])
    return FromReset(layer)


class SpikeWithSurrogate(nn.Module):
    """sinabs' ``SingleSpike`` at ``spike_threshold = 1`` with a surrogate: ``x = v_mem - 1``."""

    def __init__(self, surrogate):
        from sinabs.activation import SingleSpike

        super().__init__()
        self.spike_fn = SingleSpike  # an autograd.Function class: pickles by reference
        self.surrogate = surrogate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.spike_fn.apply(x + 1.0, 1.0, self.surrogate)


def build_single_exponential(example: Example) -> nn.Module:
    from sinabs.activation import SingleExponential

    # At threshold 1, sinabs' absolute width (grad_width * threshold) is the spec's width.
    return SpikeWithSurrogate(SingleExponential(grad_width=float(example.hyper["width"]),
                                                grad_scale=float(example.hyper["scale"])))


def build_multi_gaussian(example: Example) -> nn.Module:
    from sinabs.activation import MultiGaussian

    h = example.hyper
    return SpikeWithSurrogate(MultiGaussian(mu=float(h["mu"]), sigma=float(h["sigma"]), h=float(h["h"]),
                                            s=float(h["s"]), grad_scale=float(h["scale"])))


# --- known failures --------------------------------------------------------------------------------------------


def subjects() -> Iterator[Subject]:
    common = dict(library=LIBRARY, requires=REQUIRES)
    batch_major = {"time_dim": 1}
    yield Subject(id="sinabs.IAF", spec="neuron.sinabs_iaf", build=build_iaf, fixed=batch_major, **common)
    yield Subject(id="sinabs.IAFSqueeze", spec="neuron.sinabs_iaf", build=build_iaf_squeeze, fixed=batch_major,
                  **common)
    yield Subject(id="sinabs.LIF", spec="neuron.sinabs_lif", build=build_lif, fixed=batch_major,
                  param_map={"tau_mem": "layer.tau_mem"}, **common)
    # SingleSpike fires at v_mem >= threshold
    yield Subject(id="sinabs.SingleSpike[SingleExponential]", spec="surrogate.single_exponential",
                  build=build_single_exponential, fixed={"strict": False}, **common)
    yield Subject(id="sinabs.SingleSpike[MultiGaussian]", spec="surrogate.multi_gaussian",
                  build=build_multi_gaussian, fixed={"strict": False}, **common)
