"""Subject declarations: one module per library (plus ``specs`` for the specs themselves).

Each module exposes ``subjects() -> Iterable[Subject]`` and imports its library lazily, inside ``build``.
"""

import torch
from torch import nn


def load_parameters(module: nn.Module, values: dict[str, torch.Tensor]) -> nn.Module:
    """Copy a drawn example's tensors into ``module``'s parameters, addressed by dotted path (adapters' shared step)."""
    with torch.no_grad():
        for path, value in values.items():
            target = module.get_parameter(path)
            target.copy_(value.to(target.dtype))
    return module


class Network(nn.Module):
    """A library's own small network ``net`` (the spec ``model.snn_network``), run over ``x`` of shape
    ``(T, B, N)`` from rest by ``run(net, x)`` as the library's users step it. ``net`` is what exporters get."""

    def __init__(self, net: nn.Module, run):
        super().__init__()
        self.net = net
        self.run = run

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run(self.net, x)


def float_linear(example) -> nn.Linear:
    """The float32 ``nn.Linear`` a user starts from before quantizing it, holding the example's weight and bias."""
    weight, bias = example.params["weight"], example.params["bias"]
    linear = nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        linear.weight.copy_(weight)
        linear.bias.copy_(bias)
    return linear


def network_linear(example, dtype: torch.dtype | None = None) -> nn.Linear:
    """The Linear(4, 3) of model.snn_network with the example's weights."""
    from conformance.specs.models import NETWORK_INPUTS, NETWORK_NEURONS, network_weights

    linear = nn.Linear(NETWORK_INPUTS, NETWORK_NEURONS)
    weight, bias = network_weights(example.hyper["seed"])
    with torch.no_grad():
        linear.weight.copy_(weight)
        linear.bias.copy_(bias)
    return linear


def network_conv(example) -> nn.Conv2d:
    """The Conv2d(1, 2, 3, padding=1) of model.snn_conv_network with the example's weights."""
    from conformance.specs.models import CONV_NETWORK_CHANNELS, CONV_NETWORK_INPUT, conv_network_weights

    conv = nn.Conv2d(CONV_NETWORK_INPUT[0], CONV_NETWORK_CHANNELS, 3, padding=1)
    weight, bias = conv_network_weights(example.hyper["seed"])
    with torch.no_grad():
        conv.weight.copy_(weight)
        conv.bias.copy_(bias)
    return conv


def exchange_network(library: str, requires: tuple[str, ...]) -> dict:
    """The Subject fields of a library's model.snn_network: exported through NIR, float32 on the CPU, and kept to the
    eager and NIR columns (its layers' transforms are judged on their own rows)."""
    from conformance.transforms import TRANSFORMS

    reason = "an exchange network: kept to the eager and NIR columns (its layers are judged on their own rows)"
    # CPU only: the exchange formats are device-independent (the NIR columns run on the CPU)
    return dict(library=library, requires=requires, formats=frozenset({"nir"}), dtypes=frozenset({"float32"}),
                devices=frozenset({"cpu"}),
                not_applicable={t.id: reason for t in TRANSFORMS if t.id != "eager" and not t.id.startswith("nir_")})
