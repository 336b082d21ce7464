"""snntorch 1.0 as subjects: the neurons (``Leaky``, ``Synaptic``, ``Alpha``, ``Lapicque``, ``RLeaky``,
``RSynaptic``) against ``neuron.*`` and the spike functions of ``snntorch.surrogate`` against ``surrogate.*``.

Every quirk of the library lives in this adapter; snntorch is imported only inside ``build``.

Neurons: the built module runs the snntorch layer over the time axis of ``x`` (``(T, B, N)``), one call per step,
starting every forward from the state the layer's own ``reset_mem()`` gives (the per-instance reset of snntorch 1.0;
``init_leaky()`` and friends are its deprecated aliases). ``init_hidden=False`` threads the state through the call
arguments as snntorch's tutorials do; ``init_hidden=True`` lets the layer keep it. The class-level
``reset_hidden()`` / ``snntorch.utils.reset(net)`` are not used: they walk ``SpikingNeuron.instances``, every neuron
ever built in the process, so one cell would reset (and ``detach_()``) the state of every other cell's modules.

Parameters: the layer is built from the drawn values as Python floats (the documented constructor), then every spec
parameter is copied into the parameter or buffer holding it, under ``torch.no_grad``; only those snntorch makes
learnable (``learn_beta``, ``learn_threshold``, the recurrent weights, which ``learn_recurrent=True`` makes
learnable by default) are in ``param_map``.

Surrogates: the spec's ``alpha`` (and ``beta``) map onto the factory's own argument names (``slope``, ``alpha``,
``threshold``, ``beta``); ``surrogate_alpha=None`` means the *spec's* default, passed explicitly, except for ``atan``
where ``spike_grad=None`` exercises snntorch's own default (``atan(alpha=2.0)``, which is the spec's default too).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterator, Mapping

import torch
from torch import nn

from ..types import Example, Known, Subject

LIBRARY = "snntorch"
# The 1.0.0 wheel's surrogate.py and _neurons/{neurons,leaky,synaptic,alpha,lapicque,rleaky,rsynaptic}.py are
# byte-identical to the v0.9.4 tag (same git blob hashes): links point there, so line anchors stay valid.
SOURCE = "https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch"
SURROGATE_SRC = f"{SOURCE}/surrogate.py"
NEURONS_SRC = f"{SOURCE}/_neurons/neurons.py"

#: spec surrogate -> (snntorch.surrogate factory, {spec parameter: factory argument}).
SURROGATE_FACTORIES: dict[str, tuple[str, dict[str, str]]] = {
    "heaviside": ("heaviside", {}),
    "straight_through": ("straight_through_estimator", {}),
    "fast_sigmoid": ("fast_sigmoid", {"alpha": "slope"}),
    "atan": ("atan", {"alpha": "alpha"}),
    "sigmoid": ("sigmoid", {"alpha": "slope"}),
    "triangular": ("triangular", {"alpha": "threshold"}),
    "spike_rate_escape": ("spike_rate_escape", {"alpha": "slope", "beta": "beta"}),
}


def factory_kwargs(name: str, hyper: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of snntorch's factory for spec surrogate ``name`` with the spec's ``hyper``.

    >>> factory_kwargs("spike_rate_escape", {"alpha": 3.0, "beta": 0.5, "strict": True})
    {'slope': 3.0, 'beta': 0.5}
    """
    _, names = SURROGATE_FACTORIES[name]
    return {library_name: hyper[spec_name] for spec_name, library_name in names.items()}


def spec_default_alpha(name: str) -> float | None:
    """The spec's default for the primary parameter of surrogate ``name`` (None when it has none)."""
    from reference import surrogate as S

    parameter = inspect.signature(getattr(S, name)).parameters.get("alpha")
    return None if parameter is None else parameter.default


def spike_grad(surrogate: str, surrogate_alpha: float | None) -> Callable | None:
    """snntorch's ``spike_grad`` for a neuron spec's ``surrogate``/``surrogate_alpha`` (None: the library default)."""
    import snntorch.surrogate as library

    if surrogate == "atan" and surrogate_alpha is None:
        return None  # snntorch's own default, atan(alpha=2.0)
    alpha = spec_default_alpha(surrogate) if surrogate_alpha is None else surrogate_alpha
    factory, names = SURROGATE_FACTORIES[surrogate]
    return getattr(library, factory)(**({names["alpha"]: alpha} if "alpha" in names else {}))


# --------------------------------------------------------------------------------------------- modules


class SurrogateSpike(nn.Module):
    """``snntorch.surrogate.<factory>(**kwargs)(x)``: the factory is a module-level function (pickled by reference);
    its closure is made in forward, so the module holds no closure of its own."""

    def __init__(self, factory: Callable, kwargs: Mapping[str, Any]):
        super().__init__()
        self.factory = factory
        self.kwargs = dict(kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.factory(**self.kwargs)(x)

    def extra_repr(self) -> str:
        return f"{self.factory.__name__}({self.kwargs})"


class Rollout(nn.Module):
    """One snntorch neuron run over ``x``'s leading time axis from a freshly reset state; returns the spikes.

    ``state_size`` is how many trailing outputs of a step are the next step's state arguments (``Leaky``: ``mem``;
    ``RLeaky``: ``spk, mem``; ...).
    """

    def __init__(self, neuron: nn.Module, *, init_hidden: bool, state_size: int):
        super().__init__()
        self.neuron = neuron
        self.init_hidden = init_hidden
        self.state_size = state_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        state = self.neuron.reset_mem()
        state = tuple(state) if isinstance(state, tuple) else (state,)
        spikes = []
        for step in range(x.shape[0]):
            if self.init_hidden:
                spikes.append(self.neuron(x[step]))
            else:
                out = self.neuron(x[step], *state)
                spikes.append(out[0])
                state = tuple(out[-self.state_size:])
        return torch.stack(spikes)


def load(module: nn.Module, paths: Mapping[str, str], params: Mapping[str, torch.Tensor]) -> None:
    """Copy each spec parameter into the module tensor at its path (a parameter or a buffer), values only."""
    with torch.no_grad():
        for name, path in paths.items():
            if name in params:
                owner, _, attr = path.rpartition(".")
                target = getattr(module.get_submodule(owner) if owner else module, attr)
                target.copy_(params[name].reshape(target.shape))


def _float(params: Mapping[str, torch.Tensor], name: str, default: float = 1.0) -> float:
    return float(params[name]) if name in params and params[name].dim() == 0 else default


# --------------------------------------------------------------------------------------------- neuron builders


def _snn_common(hyper: Mapping[str, Any]) -> dict[str, Any]:
    return {"spike_grad": spike_grad(hyper["surrogate"], hyper["surrogate_alpha"]),
            "reset_mechanism": hyper["reset_mechanism"]}


def build_leaky(*, init_hidden: bool = False, learn_beta: bool = False, learn_threshold: bool = False):
    def build(example: Example) -> nn.Module:
        import snntorch

        p, h = example.params, example.hyper
        neuron = snntorch.Leaky(beta=_float(p, "beta"), threshold=_float(p, "threshold"), init_hidden=init_hidden,
                                learn_beta=learn_beta, learn_threshold=learn_threshold,
                                graded_spikes_factor=_float(p, "graded_spikes_factor"),
                                reset_delay=h["reset_delay"], **_snn_common(h))
        load(neuron, {"beta": "beta", "threshold": "threshold", "graded_spikes_factor": "graded_spikes_factor"}, p)
        return Rollout(neuron, init_hidden=init_hidden, state_size=1)

    return build


def build_synaptic(example: Example) -> nn.Module:
    import snntorch

    p, h = example.params, example.hyper
    neuron = snntorch.Synaptic(alpha=_float(p, "alpha"), beta=_float(p, "beta"), threshold=_float(p, "threshold"),
                               reset_delay=h["reset_delay"], **_snn_common(h))
    load(neuron, {"alpha": "alpha", "beta": "beta", "threshold": "threshold"}, p)
    return Rollout(neuron, init_hidden=False, state_size=2)


def build_alpha(example: Example) -> nn.Module:
    import snntorch

    p, h = example.params, example.hyper
    neuron = snntorch.Alpha(alpha=_float(p, "alpha"), beta=_float(p, "beta"), threshold=_float(p, "threshold"),
                            **_snn_common(h))
    load(neuron, {"alpha": "alpha", "beta": "beta", "threshold": "threshold"}, p)
    return Rollout(neuron, init_hidden=False, state_size=3)


def build_lapicque(example: Example) -> nn.Module:
    import snntorch

    p, h = example.params, example.hyper
    neuron = snntorch.Lapicque(R=h["R"], C=h["C"], time_step=h["time_step"], threshold=_float(p, "threshold"),
                               **_snn_common(h))
    load(neuron, {"threshold": "threshold"}, p)
    return Rollout(neuron, init_hidden=False, state_size=1)


def build_rleaky(example: Example) -> nn.Module:
    """``all_to_all=True`` (the default): the recurrence is an ``nn.Linear(N, N)`` holding ``V`` and the bias."""
    import snntorch

    p, h = example.params, example.hyper
    neuron = snntorch.RLeaky(beta=_float(p, "beta"), threshold=_float(p, "threshold"), all_to_all=True,
                             linear_features=example.x.shape[-1], reset_delay=h["reset_delay"], **_snn_common(h))
    load(neuron, {"beta": "beta", "threshold": "threshold", "V": "recurrent.weight",
                  "recurrent_bias": "recurrent.bias"}, p)
    return Rollout(neuron, init_hidden=False, state_size=2)


def build_rsynaptic(example: Example) -> nn.Module:
    """``all_to_all=False``: one-to-one recurrence through the learnable scalar ``V``."""
    import snntorch

    p, h = example.params, example.hyper
    neuron = snntorch.RSynaptic(alpha=_float(p, "alpha"), beta=_float(p, "beta"), V=_float(p, "V"),
                                threshold=_float(p, "threshold"), all_to_all=False, reset_delay=h["reset_delay"],
                                **_snn_common(h))
    load(neuron, {"alpha": "alpha", "beta": "beta", "threshold": "threshold", "V": "V"}, p)
    return Rollout(neuron, init_hidden=False, state_size=3)


def build_surrogate(name: str) -> Callable[[Example], nn.Module]:
    def build(example: Example) -> nn.Module:
        import snntorch.surrogate as library

        return SurrogateSpike(getattr(library, SURROGATE_FACTORIES[name][0]), factory_kwargs(name, example.hyper))

    return build


# --------------------------------------------------------------------------------------------- known failures

# Filled in from the recorded matrix; each entry names the library code that causes it.
NEURON_KNOWN: tuple[Known, ...] = ()
SURROGATE_KNOWN: tuple[Known, ...] = ()


# --------------------------------------------------------------------------------------------- subjects


def _neuron(variant: str, spec: str, build, *, fixed: Mapping[str, Any], param_map: Mapping[str, str] | None = None,
            known: tuple[Known, ...] = ()) -> Subject:
    return Subject(id=f"snntorch.{variant}", spec=spec, build=build, fixed={"time_dim": 0, **fixed},
                   param_map=dict(param_map or {}), library=LIBRARY, requires=("snntorch",),
                   known=NEURON_KNOWN + known)


def _surrogate(name: str, known: tuple[Known, ...] = ()) -> Subject:
    return Subject(id=f"snntorch.surrogate.{SURROGATE_FACTORIES[name][0]}", spec=f"surrogate.{name}",
                   build=build_surrogate(name), fixed={"strict": True}, library=LIBRARY, requires=("snntorch",),
                   known=SURROGATE_KNOWN + known)


def subjects() -> Iterator[Subject]:
    yield _neuron("Leaky[subtract]", "neuron.leaky", build_leaky(), fixed={"reset_mechanism": "subtract"})
    yield _neuron("Leaky[zero,learn_beta]", "neuron.leaky", build_leaky(learn_beta=True),
                  fixed={"reset_mechanism": "zero"}, param_map={"beta": "neuron.beta"})
    yield _neuron("Leaky[none,learn_threshold]", "neuron.leaky", build_leaky(learn_threshold=True),
                  fixed={"reset_mechanism": "none"}, param_map={"threshold": "neuron.threshold"})
    yield _neuron("Leaky[init_hidden]", "neuron.leaky", build_leaky(init_hidden=True),
                  fixed={"reset_mechanism": "subtract"})
    yield _neuron("Synaptic", "neuron.synaptic", build_synaptic, fixed={})
    yield _neuron("Alpha", "neuron.alpha", build_alpha, fixed={})
    yield _neuron("Lapicque", "neuron.lapicque", build_lapicque, fixed={})
    yield _neuron("RLeaky", "neuron.rleaky", build_rleaky, fixed={"all_to_all": True},
                  param_map={"V": "neuron.recurrent.weight", "recurrent_bias": "neuron.recurrent.bias"})
    yield _neuron("RSynaptic", "neuron.rsynaptic", build_rsynaptic, fixed={"all_to_all": False, "reset_delay": True},
                  param_map={"V": "neuron.V"})
    for name in SURROGATE_FACTORIES:
        yield _surrogate(name)
