"""snntorch 1.0 as subjects: the neurons (``Leaky``, ``Synaptic``, ``Alpha``, ``Lapicque``, ``RLeaky``,
``RSynaptic``) against ``neuron.*`` and the spike functions of ``snntorch.surrogate`` against ``surrogate.*``.

Every quirk of the library lives in this adapter; snntorch is imported only inside ``build``.

Neurons: the built module runs the snntorch layer over the time axis of ``x`` (``(T, B, N)``), one call per step,
resetting it with its own per-instance ``reset_mem()`` at the start of every forward (``init_leaky()`` and friends
are deprecated aliases of it). ``init_hidden=False`` threads the state through the call arguments as snntorch's
tutorials do, starting from zeros shaped like one step; ``init_hidden=True`` lets the layer keep it. The
class-level ``reset_hidden()`` / ``snntorch.utils.reset(net)`` are not used: they walk ``SpikingNeuron.instances``,
every neuron ever built in the process, so one cell would reset (and ``detach_()``) every other cell's modules.

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
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping

import torch
from torch import nn

from . import Network, exchange_network, network_conv, network_linear
from ..core.types import CallProtocol, Example, Known, Library, Subject
from ..transforms.bdpy import known_stepped as bdpy_stepped
from ..transforms.nir import reset_snntorch

LIBRARY = Library("snntorch", "snntorch", "1.0.0", history=("0.9.4",))
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
    from qsnn_reference import surrogate as S

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
    """``snntorch.surrogate.<factory>(**kwargs)(x)``, as a user holds it: the closure made once. The factory is a
    module-level function (pickled by reference) and a copy or an unpickled module makes the closure again, which a
    closure cannot be pickled to do: the copies judge snntorch's spike function, not the adapter's attribute."""

    def __init__(self, factory: Callable, kwargs: Mapping[str, Any]):
        super().__init__()
        self.factory = factory
        self.kwargs = dict(kwargs)
        self.spike = factory(**self.kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.spike(x)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("spike", None)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.spike = self.factory(**self.kwargs)

    def extra_repr(self) -> str:
        return f"{self.factory.__name__}({self.kwargs})"


class Rollout(nn.Module):
    """One snntorch neuron run over ``x``'s leading time axis from a freshly reset state; returns the spikes.

    ``state_size`` is how many trailing outputs of a step are the next step's state arguments (``Leaky``: ``mem``;
    ``RLeaky``: ``spk, mem``; ...). ``persist`` (``init_hidden=True`` only): the layer goes on from the state the
    previous call left, as a user's network of ``init_hidden`` layers does; ``reset()`` is its ``reset_mem()``.
    """

    def __init__(self, neuron: nn.Module, *, init_hidden: bool, state_size: int, persist: bool = False):
        super().__init__()
        if persist and not init_hidden:
            raise ValueError("only an init_hidden layer keeps its state between calls")
        self.neuron = neuron
        self.init_hidden = init_hidden
        self.state_size = state_size
        self.persist = persist

    def reset(self) -> None:
        self.neuron.reset_mem()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.persist:
            return torch.stack([self.neuron(x[step]) for step in range(x.shape[0])])
        self.neuron.reset_mem()
        # The state passed at t=0 is zeros shaped like one step: what reset_mem() returns once the layer has run.
        # On a never-run layer reset_mem() returns empty tensors, which every neuron re-initialises except
        # RSynaptic's reset_delay=False branch (it reads its arguments; see RSYNAPTIC_NO_RESET_DELAY).
        state = tuple(torch.zeros_like(x[0]) for _ in range(self.state_size))
        spikes = []
        for step in range(x.shape[0]):
            if self.init_hidden:
                spikes.append(self.neuron(x[step]))
            else:
                out = self.neuron(x[step], *state)
                spikes.append(out[0])
                state = tuple(out[-self.state_size:])
        return torch.stack(spikes)


class HeldState(nn.Module):
    """A snntorch neuron as its defaults build it (``init_hidden=False``), called as ``spk, mem = lif(x_t)`` without
    passing ``mem``: the layer keeps the membrane itself (``self.mem``) from call to call until ``reset_mem()``.
    Returns the spikes over ``x``'s leading time axis; each call starts from ``reset_mem()`` unless ``persist``."""

    def __init__(self, neuron: nn.Module, persist: bool = False):
        super().__init__()
        self.neuron = neuron
        self.persist = persist

    def reset(self) -> None:
        self.neuron.reset_mem()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.persist:
            self.neuron.reset_mem()
        return torch.stack([self.neuron(x[step])[0] for step in range(x.shape[0])])


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


def build_leaky(*, init_hidden: bool = False, learn_beta: bool = False, learn_threshold: bool = False,
                persist: bool = False):
    def build(example: Example) -> nn.Module:
        import snntorch

        p, h = example.params, example.hyper
        neuron = snntorch.Leaky(beta=_float(p, "beta"), threshold=_float(p, "threshold"), init_hidden=init_hidden,
                                learn_beta=learn_beta, learn_threshold=learn_threshold,
                                graded_spikes_factor=_float(p, "graded_spikes_factor"),
                                reset_delay=h["reset_delay"], **_snn_common(h))
        load(neuron, {"beta": "beta", "threshold": "threshold", "graded_spikes_factor": "graded_spikes_factor"}, p)
        return Rollout(neuron, init_hidden=init_hidden, state_size=1, persist=persist)

    return build


def build_default(class_name: str, persist: bool = False):
    """``Leaky(beta)`` or ``Synaptic(alpha, beta)``: the required arguments, every other at snntorch's default."""
    def build(example: Example) -> nn.Module:
        import snntorch

        required = ("alpha", "beta") if class_name == "Synaptic" else ("beta",)
        return HeldState(getattr(snntorch, class_name)(**{name: _float(example.params, name) for name in required}),
                         persist)

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

ISSUES = "https://github.com/jeshraghian/snntorch/issues"
_FLOAT_SPIKES = ("snntorch's spike functions return `(input_ > 0).float()`, so the output is float32 whatever the "
                 "input and module dtype (spec: the output follows x's dtype)")
_OLD_STYLE_FUNCTION = ("snntorch's spike functions are torch.autograd.Function subclasses with the legacy "
                       "`forward(ctx, ...)` and no setup_context, which torch.func transforms refuse")


_LEAVES_WRAPPED_STATE = ("; and the failed transform leaves its functorch-wrapped tensors in the neuron's state "
                         "buffers (mem, syn, spk): forward stores the new state in the module before the spike "
                         "function raises (copy.deepcopy of that neuron then raises)")


def _old_style_function(*transforms: str, neuron: bool = False) -> tuple[Known, ...]:
    entries = []
    for t in transforms:
        if neuron:  # what no_state_leak finds besides the failure (issue 18, section 4)
            entries.append(Known(transform=t, check="no_state_leak", cause="autograd-function-without-setup_context",
                                 also=("state-leak",), reason=_OLD_STYLE_FUNCTION + _LEAVES_WRAPPED_STATE,
                                 link=f"{SOURCE}/_neurons/leaky.py#L210",
                                 reproducer="reproducers/snntorch/failed_torch_func_leaves_wrapped_state.py"))
        entries.append(Known(transform=t, cause="autograd-function-without-setup_context", reason=_OLD_STYLE_FUNCTION,
                             link=f"{SURROGATE_SRC}#L187",
                             reproducer="reproducers/snntorch/torch_func_autograd_function_no_setup_context.py"))
    return tuple(entries)


def _float_spikes(transform: str = "eager", check: str = "output_dtype") -> tuple[Known, ...]:
    return tuple(Known(transform=transform, check=check, dtype=dtype, cause="dtype-mismatch", reason=_FLOAT_SPIKES,
                       link=f"{ISSUES}/422", reproducer="reproducers/snntorch/spike_dtype_float32.py")
                 for dtype in ("float64", "bfloat16"))


#: float32 spikes in a float64 neuron: the gradient reaching them and the membrane update they enter are float32
_FLOAT64_REPRO = "reproducers/snntorch/float64_computes_in_float32.py"
FLOAT64_GRAD = Known(transform="eager", check="grad_matches_spec", dtype="float64", cause="grad-mismatch",
                     link=f"{ISSUES}/422", reproducer=_FLOAT64_REPRO,
                     reason="the spike function returns float32 spikes, so the gradient reaching them is rounded to "
                            "float32 before the surrogate's backward: float32-accurate gradients (errors near 4e-8 "
                            "relative) in a float64 cell")
FLOAT64_MEMBRANE = Known(transform="eager", check="forward_matches_spec", dtype="float64", cause="forward-mismatch",
                         link=f"{ISSUES}/422", reproducer=_FLOAT64_REPRO,
                         reason="the float32 spikes pull the membrane update into float32 (`spk * threshold`: a "
                                "float32 tensor times a 0-dim float64 threshold stays float32): the float64 membrane "
                                "is float32-rounded (1.9 comes out 1.8999999762)")
#: the same in a neuron built in float32 and converted by .double() (the to_float64 cells are float32 cells)
FLOAT64_GRAD_CONVERTED = replace(FLOAT64_GRAD, transform="to_float64", dtype="*")
#: what Leaky's float32 spikes show in float64: its gradient and membrane, and the gradient once converted
FLOAT64_LEAKY = (FLOAT64_GRAD, FLOAT64_MEMBRANE, FLOAT64_GRAD_CONVERTED)


#: What every neuron subject shows (the layer's state handling and its spike functions).
NEURON_KNOWN: tuple[Known, ...] = (
    Known(transform="compile_dynamic", cause="compile-failed", link=f"{SURROGATE_SRC}#L194",
          reason="with dynamic=True, dynamo crashes (AssertionError `lift_tracked_freevar_to_input should not be "
                 "called on root SubgraphTracer`) while speculating the atan surrogate's ATan.backward inside the "
                 "neuron step (`mem_reset`); the same neurons compile with fast_sigmoid, sigmoid or "
                 "straight_through, and static-shape compiles pass",
          reproducer="reproducers/snntorch/compile_dynamic_atan_backward.py"),
    *_float_spikes(),
    Known(transform="pickle*", cause="pickle-failed", link=f"{ISSUES}/420",
          reason="SpikingNeuron stores `spike_grad`, the closure a snntorch.surrogate factory returns "
                 "(`atan.<locals>.inner` by default), and pickle cannot serialise a local function",
          reproducer="reproducers/snntorch/neuron_pickle_local_closure.py"),
    Known(transform="deepcopy_used", cause="deepcopy-non-leaf", link=f"{SOURCE}/_neurons/leaky.py#L210",
          reason="forward assigns the graph-connected membrane to the registered buffer `mem` "
                 "(`self.mem = self.state_function(input_)`), and copy.deepcopy refuses non-leaf tensors",
          reproducer="reproducers/snntorch/neuron_deepcopy_after_backward.py"),
    Known(transform="jit_script", cause="jit-unsupported", link=f"{NEURONS_SRC}#L194",
          reason="TorchScript cannot compile snntorch's neurons: the `reset_mechanism` property, the bound "
                 "`state_function` attribute and the autograd.Function spike closures are all unscriptable",
          reproducer="reproducers/snntorch/jit_script_neuron.py"),
    *_old_style_function("vmap", "grad", "jvp", neuron=True),
)
PARAM_KNOWN: tuple[Known, ...] = _old_style_function("per_sample_grad", neuron=True)

EXPORT_LEAK = Known(
    transform="export", check="no_state_leak", cause="state-leak", link=f"{SOURCE}/_neurons/leaky.py#L209",
    reason="forward stores each step's reset signal as a plain tensor attribute (`self.reset = "
           "self.mem_reset(self.mem)`), which torch.export warns must be a buffer: after export the module still "
           "holds the tracer's FakeTensor in `neuron.reset`",
    reproducer="reproducers/snntorch/export_leaves_fake_tensor.py")
#: Opacus, for a layer whose learnable tensors sit next to its buffers.
OPACUS_BUFFERS: tuple[Known, ...] = (
    Known(transform="opacus_*", cause="opacus-failed", link=f"{NEURONS_SRC}#L131",
          reason="the learnable parameter lives in the same module as snntorch's buffers (threshold, beta, mem, "
                 "reset_mechanism_val, ...), and Opacus' GradSampleModule refuses trainable layers with buffers",
          reproducer="reproducers/snntorch/opacus_trainable_layer_with_buffers.py"),
)


_TENSOR_BRANCH = ("with reset_delay=False, forward branches on the tensor buffer `reset_mechanism_val` "
                  "(`if self.reset_mechanism_val == 0:`), a data-dependent branch that dynamo cannot trace (graph "
                  "break gb0170, inside the adapter's time loop, so the frame falls back to eager; fullgraph "
                  "compilation fails on it, which the suite's classifier files under data-dependent-item)")
_TENSOR_BRANCH_EXPORT = ("with reset_delay=False, forward branches on the tensor buffer `reset_mechanism_val` "
                         "(`if self.reset_mechanism_val == 0:`), a data-dependent guard torch.export cannot resolve")
_TENSOR_BRANCH_BREAK = "graph-break:Data-dependent branching"


def _failed_export_leaves_reset(link: str) -> Known:
    """What no_state_leak finds besides the failed export (issue 18, section 4)."""
    return Known(transform="export", check="no_state_leak", cause="data-dependent-item", also=("state-leak",),
                 link=link, reason=_TENSOR_BRANCH_EXPORT + "; before the branch, forward has stored the step's reset "
                 "signal as a plain tensor attribute (`self.reset = self.mem_reset(self.mem)`), so the failed "
                 "export leaves the tracer's FakeTensor in `neuron.reset`",
                 reproducer="reproducers/snntorch/export_leaves_fake_tensor.py")
NO_RESET_DELAY_KNOWN: tuple[Known, ...] = (
    Known(transform="compile_*", check="no_graph_breaks", cause=_TENSOR_BRANCH_BREAK, reason=_TENSOR_BRANCH,
          link=f"{SOURCE}/_neurons/leaky.py#L226",
          reproducer="reproducers/snntorch/compile_leaky_reset_delay_false_branch.py"),
    Known(transform="compile_*", cause="data-dependent-item", reason=_TENSOR_BRANCH,
          link=f"{SOURCE}/_neurons/leaky.py#L226",
          reproducer="reproducers/snntorch/compile_leaky_reset_delay_false_branch.py"),
    _failed_export_leaves_reset(f"{SOURCE}/_neurons/leaky.py#L209"),
    # torch.onnx.export(dynamo=True) runs torch.export first: the onnx column fails on the same branch
    *(Known(transform=column, cause="data-dependent-item", link=f"{SOURCE}/_neurons/leaky.py#L226",
            reason=_TENSOR_BRANCH_EXPORT, reproducer="reproducers/snntorch/export_leaky_reset_delay_false_branch.py")
      for column in ("export", "onnx")),
    Known(transform="checkpoint", check="state_matches_eager", cause="state-advanced-twice",
          link=f"{SOURCE}/_neurons/leaky.py#L222",
          reason="with reset_delay=False the last write to the state (`self.mem = self.mem - do_reset * "
                 "self.threshold`) comes after every tensor saved for backward, so checkpoint's recomputation, which "
                 "stops once those are rebuilt, leaves the module attribute `mem` at the un-reset value",
          reproducer="reproducers/snntorch/checkpoint_leaky_reset_delay_false_state.py"),
)


#: Findings of the call protocol (init_hidden: one time step per call, the layer keeping mem), on the CPU and CUDA.
_STEPPED_LINK = f"{SOURCE}/_neurons/leaky.py"
INIT_HIDDEN_STEPPED: tuple[Known, ...] = (
    Known(transform="jit_trace", check="preserves_grad", cause="transform-changed-grad", link=_STEPPED_LINK,
          reason="traced on a fresh layer, the graph records the re-initialisation of mem to zeros (its shape differs "
                 "from the input's then), so the traced layer starts every call from rest: fed one step per call it "
                 "forgets mem between the steps, which the gradients show on every example",
          reproducer="reproducers/snntorch/leaky_init_hidden_jit_trace_forgets_mem.py"),
    Known(transform="jit_trace", check="preserves_forward", cause="state-lost-between-calls", link=_STEPPED_LINK,
          reason="traced on a fresh layer, the graph records the re-initialisation of mem to zeros, so fed one step "
                 "per call it starts every call from rest: the spikes differ where the carried-over membrane decides "
                 "one (the edge examples, exactly at the threshold)",
          reproducer="reproducers/snntorch/leaky_init_hidden_jit_trace_forgets_mem.py"),
    Known(transform="export", check="preserves_forward", cause="state-lost-between-calls", link=_STEPPED_LINK,
          reason="exported on a fresh layer, the program records the re-initialisation of mem to zeros and mem is no "
                 "state of the program, so fed one step per call it starts every call from rest: the spikes differ "
                 "where the carried-over membrane decides one (the edge examples, exactly at the threshold)",
          reproducer="reproducers/snntorch/leaky_init_hidden_export_forgets_mem.py"),
    Known(transform="checkpoint", check="preserves_grad", cause="transform-changed-grad", link=_STEPPED_LINK,
          reason="checkpoint recomputes a step's forward during backward from the mem the later steps left (the "
                 "layer is not the side-effect-free function checkpoint asks for): the recomputed step is not the one "
                 "that ran, so the input gradient is wrong; nothing warns",
          reproducer="reproducers/snntorch/leaky_init_hidden_checkpoint_steps.py"),
    Known(transform="checkpoint", check="state_matches_eager", cause="state-advanced-twice", link=_STEPPED_LINK,
          reason="checkpoint's recomputation of a step runs the layer again, which overwrites mem with the recomputed "
                 "step's value: after backward the layer no longer holds the state its last call left",
          reproducer="reproducers/snntorch/leaky_init_hidden_checkpoint_steps.py"),
    Known(transform="state_dict", check="continues_mid_sequence", cause="copy-lost-state",
          link="https://github.com/jeshraghian/snntorch/pull/315",
          reason="the state the layer holds between calls (mem; Synaptic's syn too) is a non-persistent buffer, kept "
                 "out of state_dict since snntorch PR 315 (loading a state_dict failed on its shape): a state_dict "
                 "taken in the middle of a sequence restarts the rest of it from rest in the layer it is loaded into",
          reproducer="reproducers/snntorch/held_mem_not_in_state_dict.py"),
)


#: Leaky and Synaptic as constructed by default, called without their state: the layer holds it between calls, as
#: with init_hidden (the same findings, each shown on these layers by a held_state_* script), and returns the membrane
HELD_STATE: tuple[Known, ...] = (
    Known(transform="eager", check="returns_no_state", cause="output-aliases-state", link=_STEPPED_LINK,
          reason="called without its state, the layer returns its own state tensor as the membrane (`return spk, "
                 "self.mem`): an in-place op on the returned membrane changes what the next call starts from",
          reproducer="reproducers/snntorch/held_state_returns_its_state.py"),
    *(replace(k, reproducer=k.reproducer.replace("leaky_init_hidden_", "held_state_")) for k in INIT_HIDDEN_STEPPED),
)


_STALE_SPIKE = Known(
    transform="checkpoint", check="state_matches_eager", cause="state-advanced-twice",
    link=f"{SOURCE}/_neurons/rleaky.py#L342",
    reason="the last write to the state, `self.spk = self.fire(self.mem)` (the spike fed back at the next step), "
           "comes after the last tensor saved for backward, so checkpoint's recomputation, which stops once those "
           "are rebuilt, leaves the module attribute `spk` at the previous step's value",
    reproducer="reproducers/snntorch/checkpoint_recurrent_stale_spike.py")


_RSYNAPTIC_RESET = ("RSynaptic's reset_delay=False branch applies the reset to its `spk`/`mem` *arguments* in a "
                    "local variable (`mem = mem - do_reset * self.threshold`), never to the new state `self.mem`, so "
                    "the documented same-step reset never happens (with the empty state of a fresh init_rsynaptic() "
                    "it raises a shape error instead)")
_TIED_V = ("with all_to_all=False the recurrent weight V is one Parameter registered twice, on the neuron and on "
           "its `recurrent` submodule: the state_dict holds it under 'V' and 'recurrent.V' over one memory")
#: RSynaptic(all_to_all=False)'s V, tied between the neuron and its recurrent submodule, under the load columns
RSYNAPTIC_TIED_V: tuple[Known, ...] = (
    Known(transform="safetensors", cause="safetensors-refused",
          link=f"{SOURCE}/_neurons/rsynaptic.py",
          reason=_TIED_V + ", which safetensors.torch.save refuses ('Some tensors share memory'; "
                 "https://huggingface.co/docs/safetensors/torch_shared_tensors)",
          reproducer="reproducers/snntorch/rsynaptic_tied_v_safetensors.py"),
    Known(transform="load_assign", check="preserves_grad", cause="transform-changed-grad",
          link=f"{SOURCE}/_neurons/rsynaptic.py",
          reason=_TIED_V + "; load_state_dict(assign=True) gives each key its own new Parameter, so the loaded "
                 "neuron holds two Vs and the gradient reaches neuron.V through one of its two uses only "
                 "(https://github.com/pytorch/pytorch/issues/188346)",
          reproducer="reproducers/snntorch/rsynaptic_assign_unties_v.py"),
)
RSYNAPTIC_NO_RESET_DELAY: tuple[Known, ...] = (
    _STALE_SPIKE,
    # The gradient shows it for every example (the spec's same-step reset carries the surrogate gradient of the spike;
    # with atan that is never zero); the spikes only when a missed reset changes a later spike.
    # eager, and the neuron built in float32 then converted (conversions.py): the same missing reset
    *(Known(transform=column, check="grad_matches_spec", cause="grad-mismatch", also=("forward-mismatch",),
            link=f"{SOURCE}/_neurons/rsynaptic.py#L366", reason=_RSYNAPTIC_RESET + "; on a long drawn sequence (the "
            "dev and thorough profiles) a missed reset changes a later spike first, which the gradient check compares "
            "too", reproducer="reproducers/snntorch/rsynaptic_reset_delay_false_no_reset.py")
      for column in ("eager", "to_float64", "half")),
    *(Known(transform=column, check="forward_matches_spec", cause="forward-mismatch",
            link=f"{SOURCE}/_neurons/rsynaptic.py#L366", reason=_RSYNAPTIC_RESET + "; the spikes show it where a "
            "missed reset changes a later spike (the edge examples, membranes exactly at the threshold)",
            reproducer="reproducers/snntorch/rsynaptic_reset_delay_false_no_reset.py")
      for column in ("eager", "to_float64", "half")),
    Known(transform="compile_*", check="no_graph_breaks", cause=_TENSOR_BRANCH_BREAK, reason=_TENSOR_BRANCH,
          link=f"{SOURCE}/_neurons/rsynaptic.py#L371",
          reproducer="reproducers/snntorch/compile_rsynaptic_reset_delay_false_branch.py"),
    Known(transform="compile_*", cause="data-dependent-item", reason=_TENSOR_BRANCH,
          link=f"{SOURCE}/_neurons/rsynaptic.py#L371",
          reproducer="reproducers/snntorch/compile_rsynaptic_reset_delay_false_branch.py"),
    _failed_export_leaves_reset(f"{SOURCE}/_neurons/rsynaptic.py#L371"),
    *(Known(transform=column, cause="data-dependent-item", link=f"{SOURCE}/_neurons/rsynaptic.py#L371",
            reason=_TENSOR_BRANCH_EXPORT,
            reproducer="reproducers/snntorch/export_rsynaptic_reset_delay_false_branch.py")
      for column in ("export", "onnx")),
)


RLEAKY_KNOWN: tuple[Known, ...] = (
    _STALE_SPIKE,
    *(Known(transform="eager", dtype=dtype, cause="forward-raised", link=f"{ISSUES}/421",
            also=("dtype-mismatch", "grad-mismatch"),
            reason="the float32 spike of step t (`(input_ > 0).float()`) is fed back into the recurrent nn.Linear "
                   f"held in {dtype}, which raises `mat1 and mat2 must have the same dtype` from the second step on "
                   "(an example of one time step does not raise, and returns that float32 spike: dtype-mismatch, and "
                   "in float64 a float32-rounded gradient: grad-mismatch)",
            reproducer="reproducers/snntorch/rleaky_float64_recurrent_dtype.py")
      for dtype in ("float64", "bfloat16")),
    # the same, for the module built in float32 and converted (conversions.py)
    *(Known(transform=column, cause="conversion-failed", link=f"{ISSUES}/421",
            reason="the float32 spike of step t (`(input_ > 0).float()`) is fed back into the recurrent nn.Linear, "
                   f"which {column} converted: `mat1 and mat2 must have the same dtype` from the second step on",
            reproducer="reproducers/snntorch/rleaky_float64_recurrent_dtype.py")
      for column in ("to_float64", "half")),
)


def _surrogate_known(name: str) -> tuple[Known, ...]:
    return (
        *_float_spikes(),
        *_old_style_function("vmap", "grad", "jvp"),
        *(() if name in _SCRIPTABLE_SURROGATES else (
            Known(transform="jit_script", cause="jit-unsupported", link=f"{SURROGATE_SRC}#L210",
                  reason="the closure the factory returns reads the factory's Python number (alpha, slope, ...) "
                         "from its enclosing scope, which TorchScript cannot compile",
                  reproducer="reproducers/snntorch/jit_script_surrogate.py"),)),
    )


#: Factories whose closure holds no Python number: TorchScript compiles them (as calls of the autograd.Function).
_SCRIPTABLE_SURROGATES = ("heaviside", "straight_through")


SURROGATE_SPECIFIC: dict[str, tuple[Known, ...]] = {
    "heaviside": (
        Known(transform="forward_hooks", check="preserves_grad", cause="inplace-modified-saved-tensor",
              link=f"{SURROGATE_SRC}#L244",
              reason="Heaviside.forward saves its own output for backward (`ctx.save_for_backward(out)`), so an "
                     "in-place op on the spikes downstream (a ReLU(inplace=True)-style layer) makes backward raise",
              reproducer="reproducers/snntorch/heaviside_saves_output_inplace.py"),
        Known(transform="bdpy_features", check="preserves_grad", cause="inplace-modified-saved-tensor",
              link=f"{SURROGATE_SRC}#L244",
              reason="Heaviside.forward saves its own output for backward; bdpy's FeatureExtractor(detach=False) hands "
                     "back that very tensor after the in-place op downstream, so a loss on the feature cannot "
                     "back-propagate",
              reproducer="reproducers/snntorch/bdpy_heaviside_feature_backward.py"),
    ),
    "sigmoid": (
        Known(transform="eager", check="grad_matches_spec", cause="grad-mismatch", link=SURROGATE_SRC,
              reason="Sigmoid.backward computes slope * exp(-slope x) / (exp(-slope x) + 1)^2: for slope * x below "
                     "-88 (float32, -709 in float64) exp overflows and the gradient is inf / inf = NaN, where the "
                     "derivative is finite (about 0); found by the edge examples (x down to -1e4)",
              reproducer="reproducers/snntorch/sigmoid_surrogate_nan_gradient.py"),
        Known(transform="half", check="grad_matches_spec", cause="grad-mismatch", link=SURROGATE_SRC,
              reason="the same formula in float16 (built in float32, then .half()): (exp(-slope x) + 1)^2 overflows "
                     "float16's 65504 once slope x < -5.55, and the gradient is 0 (or NaN) where the derivative is a "
                     "normal float16 number (0.0148 at slope 6, x = -1)",
              reproducer="reproducers/snntorch/sigmoid_surrogate_float16_overflow.py"),
    ),
    "triangular": tuple(
        Known(transform=column, check="grad_matches_spec", cause="grad-mismatch", link=f"{SURROGATE_SRC}#L89",
              reason="Triangular.backward returns +threshold for x < 0 and -threshold for x >= 0 (a sign-flipping "
                     "constant, `grad[input_ >= 0] = -grad[input_ >= 0]`) although its docstring calls it the "
                     "gradient of a triangular function; the spec's is alpha * max(0, 1 - |x|)",
              reproducer="reproducers/snntorch/triangular_gradient_is_not_a_triangle.py")
        for column in ("eager", "to_float64", "half")),
}


# --------------------------------------------------------------------------------------------- subjects


#: Findings of the H200 run (CUDA, torch 2.11): they apply only there (CPU with torch 2.13 does not show them).
_NONE_COMPARE = ("forward tests the state argument with `if not mem == None:` (leaky.py L198, and the same in the "
                 "other neurons): Tensor.__eq__(None) returns NotImplemented, which torch 2.11's dynamo cannot put "
                 "in a graph (gb0208 'torch.* op returned non-Tensor'); torch 2.13 traces it. With init_hidden the "
                 "state is not passed and the comparison is None == None")
_GB_NONTENSOR = "graph-break:torch.  ops that return a non-Tensor cannot be traced into the Dynamo FX graph o"
NONE_COMPARE_211 = Known(
    transform="compile_*", cause=_GB_NONTENSOR, reason=_NONE_COMPARE, link=f"{SOURCE}/_neurons/leaky.py#L198",
    device="cuda", torch="2.11*", reproducer="reproducers/snntorch/compile_none_comparison_torch211.py",
    # the no_graph_breaks cells name the break by dynamo's short reason
    also=("graph-break:torch.  op returned non-Tensor",))


def _neuron(variant: str, spec: str, build, *, fixed: Mapping[str, Any], param_map: Mapping[str, str] | None = None,
            known: tuple[Known, ...] = (), returns_state: bool = True,
            protocol: CallProtocol | None = None) -> Subject:
    # snntorch's default surrogate, atan (spike_grad=None when surrogate_alpha is drawn as None), for every neuron: the
    # other surrogates are subjects of their own, and atan alone decides the compile_dynamic cells (see ATAN_DYNAMIC).
    return Subject(id=f"snntorch.{variant}", spec=spec, build=build,
                   fixed={"time_dim": 0, "surrogate": "atan", **fixed, **({"min_steps": 3} if protocol else {})},
                   protocol=protocol,
                   param_map=dict(param_map or {}), library=LIBRARY.name, requires=("snntorch",),
                   # with init_hidden, or called without mem, the state argument is None: `None == None` traces
                   known=(() if variant in ("Leaky[init_hidden]", "Leaky[default]", "Synaptic[default]")
                          else (NONE_COMPARE_211,))
                   + known + NEURON_KNOWN + (EXPORT_LEAK,) + (PARAM_KNOWN if param_map else ())
                   # the adapter steps the neuron over time; it returns (spk, mem) unless init_hidden
                   + bdpy_stepped(tuple_output=returns_state))


def _surrogate(name: str, known: tuple[Known, ...] = ()) -> Subject:
    return Subject(id=f"snntorch.surrogate.{SURROGATE_FACTORIES[name][0]}", spec=f"surrogate.{name}",
                   build=build_surrogate(name), fixed={"strict": True}, library=LIBRARY.name, requires=("snntorch",),
                   known=known + _surrogate_known(name))


def _run_network(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    reset_snntorch(net)
    return torch.stack([net(x_t) for x_t in x])


def build_network(layer_type: str, reset: str, *, conv: bool = False, **decays: float):
    """Linear(4, 3), or with ``conv`` the Conv2d of model.snn_conv_network, + the snntorch layer ``layer_type``
    (init_hidden, the ``decays`` (beta, alpha) and threshold 1 per neuron: the exporter's type inference needs
    per-neuron values); a recurrent layer (RLeaky, RSynaptic) gets an all-to-all recurrence Linear(3, 3) with weights
    from the example's seed."""
    def build(example: Example) -> nn.Module:
        import snntorch as snn

        from conformance.specs.models import CONV_NETWORK_CHANNELS, CONV_NETWORK_INPUT, NETWORK_NEURONS

        first = network_conv(example) if conv else network_linear(example)
        shape = (CONV_NETWORK_CHANNELS, *CONV_NETWORK_INPUT[1:]) if conv else (NETWORK_NEURONS,)
        recurrent = layer_type in ("RLeaky", "RSynaptic")
        layer = getattr(snn, layer_type)(**{name: torch.full(shape, value) for name, value in decays.items()},
                                         threshold=torch.ones(shape), init_hidden=True, reset_mechanism=reset,
                                         **({"linear_features": shape[0]} if recurrent else {}))
        if recurrent:
            _draw_recurrence(layer.recurrent, example)
        return Network(nn.Sequential(first, layer), _run_network)

    return build


def _draw_recurrence(recurrent: nn.Linear, example: Example) -> None:
    gen = torch.Generator().manual_seed(example.hyper["seed"] + 3)
    n = recurrent.out_features
    with torch.no_grad():
        recurrent.weight.copy_(torch.rand((n, n), generator=gen) - 0.5)
        recurrent.bias.copy_(torch.rand((n,), generator=gen) * 0.2 - 0.1)


#: findings of the NIR exchange (docs/nir.md)
_DROPS_SUBTRACT = Known(
    "nir_*", cause="transform-changed-forward", also=("nir-graph-changed-forward",), link=f"{SOURCE}/export_nir.py",
    reason="snntorch's exporter writes Leaky(reset_mechanism='subtract') as nir.LIF with v_reset = 0, NIR's reset "
           "to a value, and its importer builds reset_mechanism='zero': after the first spike the membrane is reset "
           "where the layer subtracts the threshold",
    reproducer="reproducers/snntorch/nir_export_drops_subtract_reset.py")
NIR_KNOWN: dict[str, tuple[Known, ...]] = {"subtract": (_DROPS_SUBTRACT,)}
_SYNAPTIC_ZERO_RESET = Known(
    "nir_*", cause="transform-changed-forward", also=("nir-graph-changed-forward",), link=f"{SOURCE}/export_nir.py",
    reason="Synaptic's zero reset (delayed, the default) subtracts the whole new membrane in the step after a spike "
           "(`mem -= base_fn_mem * reset`), dropping that step's synaptic current; the exported nir.CubaLIF resets at "
           "the spike and integrates the next step's current, as NIR declares, and so does every importer, "
           "snntorch's own included: the graph spikes where the layer does not",
    reproducer="reproducers/snntorch/nir_export_synaptic_zero_reset_drops_input.py")
_RSYNAPTIC_ZERO_RESET = replace(
    _SYNAPTIC_ZERO_RESET, link=f"{SOURCE}/_neurons/rsynaptic.py",
    reason="RSynaptic's zero reset (delayed, the default), as Synaptic's, subtracts the whole new membrane in the step "
           "after a spike (`mem -= mem2 * reset`), dropping that step's synaptic current; the exported recurrent "
           "nir.CubaLIF resets at the spike and integrates the next step's current, as NIR declares (the "
           "importers also feed no recurrent input at the first step, where RSynaptic adds the recurrent layer's "
           "bias: NIR leaves that value open)",
    reproducer="reproducers/snntorch/nir_export_rsynaptic_zero_reset_drops_input.py")
NIR_KNOWN_RLEAKY: tuple[Known, ...] = (
    Known("nir_graph", cause="nir-graph-changed-forward", link=f"{SOURCE}/_neurons/rleaky.py",
          reason="RLeaky's zero reset (delayed, the default) subtracts the whole new membrane in the step after a "
                 "spike (`base - reset * base`), dropping that step's input, where Leaky's keeps it; the exported "
                 "recurrent LIF resets at the spike and integrates the next step's input, as NIR declares: the graph "
                 "spikes where the layer does not",
          reproducer="reproducers/snntorch/nir_export_rleaky_zero_reset_drops_input.py"),
    Known("nir_to:spikingjelly", cause="transform-changed-forward", link=f"{SOURCE}/_neurons/rleaky.py",
          reason="as nir_graph: the recurrent LIF graph spikes where RLeaky, with its zero reset dropping the next "
                 "step's input, does not (spikingjelly's import also feeds no recurrent input at the first step, "
                 "where RLeaky adds the recurrent layer's bias: NIR leaves that value open)",
          reproducer="reproducers/snntorch/nir_export_rleaky_zero_reset_drops_input.py"),
    Known("nir_roundtrip", cause="nir-import-failed", link=f"{SOURCE}/import_nir.py",
          reason="snntorch's importer takes its recurrent graph in memory but not the same graph read back from a NIR "
                 "file (nirtorch: \"'GraphModule' object has no attribute 'items'\"): a recurrent network cannot be "
                 "saved and loaded back",
          reproducer="reproducers/snntorch/nir_import_recurrent_graph_from_file.py"),
)
NIR_KNOWN_RSYNAPTIC: tuple[Known, ...] = (
    replace(NIR_KNOWN_RLEAKY[-1], reproducer="reproducers/snntorch/nir_import_recurrent_synaptic_graph_from_file.py"),
    _RSYNAPTIC_ZERO_RESET,
)


def subjects() -> Iterator[Subject]:
    # a small network for the exchange columns (NIR): model.snn_network
    network = exchange_network(LIBRARY.name, ("snntorch",))
    for reset in ("subtract", "zero"):
        yield Subject(id=f"snntorch.LinearLeaky[{reset}]", spec="model.snn_network",
                      build=build_network("Leaky", reset, beta=0.8), **network, known=NIR_KNOWN.get(reset, ()))
    yield Subject(id="snntorch.LinearRSynaptic[zero]", spec="model.snn_network",
                  build=build_network("RSynaptic", "zero", alpha=0.5, beta=0.8), **network, known=NIR_KNOWN_RSYNAPTIC)
    yield Subject(id="snntorch.LinearSynaptic[zero]", spec="model.snn_network",
                  build=build_network("Synaptic", "zero", alpha=0.5, beta=0.8), **network, known=(_SYNAPTIC_ZERO_RESET,))
    yield Subject(id="snntorch.LinearRLeaky[zero]", spec="model.snn_network",
                  build=build_network("RLeaky", "zero", beta=0.8), **network, known=NIR_KNOWN_RLEAKY)
    yield Subject(id="snntorch.ConvLeaky[zero]", spec="model.snn_conv_network",
                  build=build_network("Leaky", "zero", conv=True, beta=0.8), **network)
    # reset_delay is fixed per subject (snntorch's default True, except one variant): with reset_delay=False snntorch
    # branches on a tensor buffer, which decides compile/export cells, so a drawn flag would make them flaky.
    yield _neuron("Leaky[subtract]", "neuron.leaky", build_leaky(),
                  fixed={"reset_mechanism": "subtract", "reset_delay": True}, known=FLOAT64_LEAKY)
    yield _neuron("Leaky[zero,reset_delay=False,learn_beta]", "neuron.leaky", build_leaky(learn_beta=True),
                  fixed={"reset_mechanism": "zero", "reset_delay": False}, param_map={"beta": "neuron.beta"},
                  known=NO_RESET_DELAY_KNOWN + OPACUS_BUFFERS + FLOAT64_LEAKY)
    yield _neuron("Leaky[none,learn_threshold]", "neuron.leaky", build_leaky(learn_threshold=True),
                  fixed={"reset_mechanism": "none", "reset_delay": True}, param_map={"threshold": "neuron.threshold"},
                  known=OPACUS_BUFFERS + FLOAT64_LEAKY)
    yield _neuron("Leaky[init_hidden]", "neuron.leaky", build_leaky(init_hidden=True),
                  fixed={"reset_mechanism": "subtract", "reset_delay": True}, returns_state=False,
                  known=INIT_HIDDEN_STEPPED + FLOAT64_LEAKY,
                  protocol=CallProtocol(build_leaky(init_hidden=True, persist=True), reset="reset"))
    yield _neuron("Synaptic", "neuron.synaptic", build_synaptic, fixed={"reset_delay": True}, known=(FLOAT64_GRAD,))
    # as constructed by default (threshold 1, atan(alpha=2), reset by subtraction, delayed) and driven as snntorch's
    # README does, the layer holding its membrane between calls
    defaults = {"threshold": 1.0, "reset_mechanism": "subtract", "reset_delay": True, "surrogate_alpha": None}
    for name, spec, fixed in (("Leaky", "neuron.leaky", dict(defaults, graded_spikes_factor=1.0)),
                              ("Synaptic", "neuron.synaptic", defaults)):
        yield _neuron(f"{name}[default]", spec, build_default(name), fixed=fixed, known=HELD_STATE + (FLOAT64_GRAD,),
                      protocol=CallProtocol(build_default(name, persist=True)))
    yield _neuron("Alpha", "neuron.alpha", build_alpha, fixed={}, known=(FLOAT64_GRAD,))
    yield _neuron("Lapicque", "neuron.lapicque", build_lapicque, fixed={},
                  known=(FLOAT64_GRAD, FLOAT64_GRAD_CONVERTED))
    yield _neuron("RLeaky", "neuron.rleaky", build_rleaky, fixed={"all_to_all": True, "reset_delay": True},
                  param_map={"V": "neuron.recurrent.weight", "recurrent_bias": "neuron.recurrent.bias"},
                  known=RLEAKY_KNOWN)
    # reset_delay=False: the spec documents what it should do; snntorch's RSynaptic code for it is a silent no-op.
    yield _neuron("RSynaptic[reset_delay=False]", "neuron.rsynaptic", build_rsynaptic,
                  fixed={"all_to_all": False, "reset_delay": False, "reset_mechanism": "subtract"},
                  param_map={"V": "neuron.V"}, known=RSYNAPTIC_NO_RESET_DELAY + OPACUS_BUFFERS + RSYNAPTIC_TIED_V)
    for name in SURROGATE_FACTORIES:
        # the float32 spikes round the gradient of every surrogate; sigmoid's and triangular's stay within the float64
        # tolerance on the examples drawn
        float64 = () if name in ("sigmoid", "triangular") else (FLOAT64_GRAD,)
        # built in float32 and converted by .double(), sigmoid's and spike_rate_escape's show it on the examples drawn
        converted = (FLOAT64_GRAD_CONVERTED,) if name in ("sigmoid", "spike_rate_escape") else ()
        yield _surrogate(name, SURROGATE_SPECIFIC.get(name, ()) + float64 + converted)
