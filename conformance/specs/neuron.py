"""Declarations of the surrogate-spike and spiking-neuron specs: ``SPECS``.

Surrogates (``surrogate.<name>``): ``x`` is ``membrane - threshold`` of any shape with a leading batch dimension; the
hyperparameters are the surrogate's own (``alpha``, ``width``, ...) and ``strict``; ``x`` is drawn away from 0 and
from the kinks of the derivative, so that float32/float64 comparisons of the gradient are not decided by a tie.

Neurons (``neuron.<name>``): ``x`` is ``(T, B, N)`` (``time_dim=0``) or ``(B, T, N)`` (``time_dim=1``, when a subject
fixes it), ``T`` 1..6 (``min_steps``..6 when a subject fixes ``min_steps``), ``B`` 1..3, ``N`` 1..4, scaled so
that neurons spike in a fair share of the steps; where the runner allows long draws, half the time ``T`` 7..33 with
``B`` and ``N`` 1..2. The size edges: 9, 16 and 33 steps of the edge example's setting.
``params`` hold every tensor a library may make learnable (as float64 tensors of shape ``()``, or the recurrent
weight matrix); ``hyper`` the plain values. Any name, parameter or hyperparameter, can be fixed by a subject (a value
or a strategy).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import torch
from hypothesis import strategies as st

from conformance.core import strategies as cs
from conformance.core.types import Example, Spec
from qsnn_reference import neurons as N
from qsnn_reference import surrogate as S

# --- surrogates -----------------------------------------------------------------------------------------------------

_SURROGATE_PARAMS: dict[str, dict[str, st.SearchStrategy]] = {
    "heaviside": {},
    "straight_through": {},
    "fast_sigmoid": {"alpha": st.floats(0.5, 100.0)},
    "atan": {"alpha": st.floats(0.5, 30.0)},
    "sigmoid": {"alpha": st.floats(0.5, 100.0)},
    "triangular": {"alpha": st.floats(0.1, 2.0)},
    "rectangular": {"alpha": st.floats(0.2, 4.0)},
    "piecewise_quadratic": {"alpha": st.floats(0.2, 4.0)},
    "spike_rate_escape": {"alpha": st.floats(0.5, 100.0), "beta": st.floats(0.2, 10.0)},
    "single_exponential": {"width": st.floats(0.1, 2.0), "scale": st.floats(0.2, 3.0)},
    "multi_gaussian": {"mu": st.floats(-0.5, 0.5), "sigma": st.floats(0.1, 1.0), "h": st.floats(0.0, 0.5),
                       "s": st.floats(1.5, 8.0), "scale": st.floats(0.2, 3.0)},
}


def surrogate_kinks(name: str, hyper: Mapping[str, Any]) -> tuple[float, ...]:
    """Where the forward step or the derivative of surrogate ``name`` is discontinuous or not differentiable."""
    alpha = hyper.get("alpha", 1.0)
    extra = {
        "triangular": (1.0, -1.0),
        "rectangular": (0.5 / alpha, -0.5 / alpha),
        "piecewise_quadratic": (1.0 / alpha, -1.0 / alpha),
        "spike_rate_escape": (1.0,),
    }.get(name, ())
    return (0.0, *extra)


def surrogate_examples(name: str, **fixed: Any) -> st.SearchStrategy[Example]:
    """Examples for ``surrogate.<name>``: ``x`` of shape ``(B, ...)`` in ``[-3, 3]``, away from the kinks, with some
    elements at magnitudes 10 to 1e4 in half the examples."""
    params = _SURROGATE_PARAMS[name]
    cs.check_fixed(fixed, ("strict", *params), f"surrogate.{name}")

    @st.composite
    def draw_example(draw):
        hyper = {key: draw(cs.hyper(fixed, key, strategy)) for key, strategy in params.items()}
        hyper["strict"] = draw(cs.hyper(fixed, "strict", st.booleans()))
        shape = draw(cs.shapes(min_dims=1, max_dims=3, max_side=3))
        x = draw(cs.tensors(shape, min_value=-3.0, max_value=3.0, away_from=surrogate_kinks(name, hyper)))
        return Example(draw(cs.magnified(x)), {}, hyper)  # past every kink (the farthest: 5)

    return draw_example()


#: Steep slopes and narrow windows, still valid: the second parameter set of the edge examples.
_SURROGATE_EXTREMES: dict[str, dict[str, float]] = {
    "fast_sigmoid": {"alpha": 100.0}, "atan": {"alpha": 100.0}, "sigmoid": {"alpha": 100.0},
    "triangular": {"alpha": 10.0}, "rectangular": {"alpha": 8.0}, "piecewise_quadratic": {"alpha": 8.0},
    "spike_rate_escape": {"alpha": 100.0, "beta": 10.0}, "single_exponential": {"width": 0.0625, "scale": 4.0},
    "multi_gaussian": {"mu": 0.5, "sigma": 0.0625, "h": 0.5, "s": 8.0, "scale": 4.0},
}
#: x of the edge examples: the threshold itself (0 and -0), the windows and kinks of the default and extreme
#: parameters (+-0.0625, 0.125, 0.5, 1), and magnitudes up to 1e4 (a surrogate is defined for any finite input).
#: All but 1e4 are exact in bfloat16, so every dtype sees the same point.
SURROGATE_EDGE_X = (0.0, -0.0, *(sign * v for v in (2.0 ** -10, 0.0625, 0.125, 0.5, 1.0, 2.0, 10.0, 100.0, 1e4)
                                 for sign in (1.0, -1.0)))


def surrogate_edges(name: str, **fixed: Any) -> list[Example]:
    """Edge examples for ``surrogate.<name>``: every value of ``SURROGATE_EDGE_X`` (batch of 2), once with the
    library defaults (strict) and once with extreme parameters (not strict); fixed hyperparameters as fixed."""
    x = torch.tensor(SURROGATE_EDGE_X, dtype=torch.float64).reshape(2, -1)
    examples = []
    for params, strict in ((S.DEFAULT_PARAMS[name], True), (_SURROGATE_EXTREMES.get(name, {}), False)):
        hyper = {key: cs.edge_hyper(fixed, key, params.get(key, S.DEFAULT_PARAMS[name][key]))
                 for key in _SURROGATE_PARAMS[name]}
        hyper["strict"] = cs.edge_hyper(fixed, "strict", strict)
        examples.append(Example(x.clone(), {}, hyper))
    return examples


def surrogate_margin(example: Example) -> torch.Tensor:
    """The spike decision is ``x > 0`` (or ``>=``): the margin is ``x`` itself."""
    return example.x


# --- neurons ----------------------------------------------------------------------------------------------------------

#: Smooth surrogates drawn by default (kinked ones make float32-vs-float64 gradient checks depend on ties).
SMOOTH_SURROGATES = ("atan", "fast_sigmoid", "sigmoid", "straight_through")
_SURROGATE_ALPHA = st.one_of(st.none(), st.floats(0.5, 5.0))
_RESET = st.sampled_from(N.RESET_MECHANISMS)

Draw = Callable[[dict], st.SearchStrategy]


def _common_snn() -> dict[str, Any]:
    return {"surrogate": st.sampled_from(SMOOTH_SURROGATES), "surrogate_alpha": _SURROGATE_ALPHA}


def _recurrent_weights(d: dict) -> st.SearchStrategy:
    n = d["N"]
    if d["all_to_all"]:
        return cs.tensors((n, n), min_value=-0.5, max_value=0.5, never_all_zero=False)
    return st.floats(-1.0, 1.0)


def _recurrent_bias(d: dict) -> st.SearchStrategy:
    return cs.tensors((d["N"],), min_value=-0.3, max_value=0.3, never_all_zero=False) if d["all_to_all"] else st.none()


#: spec name -> (fn, trace, params, hyper, (x_low, x_high), x_scale(drawn values) -> float).
#: ``params``/``hyper`` map a name to a strategy or to ``f(drawn so far) -> strategy`` (drawn after the shape, whose
#: feature size is ``drawn["N"]``: first ``hyper`` in order, then ``params`` in order).
#: A parameter drawn as ``None`` is left out of ``params``.
_NEURONS: dict[str, tuple] = {
    "leaky": (
        N.leaky, N.leaky_trace,
        {"beta": cs.unit_interval(), "threshold": cs.positive(0.25, 2.0),
         "graded_spikes_factor": st.one_of(st.just(1.0), st.floats(0.5, 2.0))},
        {"reset_mechanism": _RESET, "reset_delay": st.booleans(), **_common_snn()},
        (-1.0, 2.0), lambda d: d["threshold"]),
    "synaptic": (
        N.synaptic, N.synaptic_trace,
        {"alpha": cs.unit_interval(), "beta": cs.unit_interval(), "threshold": cs.positive(0.25, 2.0)},
        {"reset_mechanism": _RESET, "reset_delay": st.booleans(), **_common_snn()},
        (-1.0, 1.5), lambda d: d["threshold"]),
    "alpha": (
        N.alpha_neuron, N.alpha_trace,
        # alpha - beta >= 0.25: tau = log(a) / (log(b) - log(a)) + 1 is ill-conditioned as b -> a (bfloat16).
        {"alpha": cs.unit_interval(0.6, 0.95), "beta": lambda d: st.floats(0.05, d["alpha"] - 0.25),
         "threshold": cs.positive(0.25, 2.0)},
        {"reset_mechanism": _RESET, **_common_snn()},
        (-1.0, 3.0), lambda d: d["threshold"] / (d["alpha"] - d["beta"])),
    "lapicque": (
        N.lapicque, N.lapicque_trace,
        {"threshold": cs.positive(0.25, 2.0)},
        {"R": st.floats(0.5, 2.0), "C": st.floats(0.5, 2.0),
         "time_step": lambda d: st.floats(0.05, 1.0).map(lambda f: f * d["R"] * d["C"]),
         "reset_mechanism": _RESET, **_common_snn()},
        (-1.0, 2.0), lambda d: d["threshold"] * d["C"] / d["time_step"]),
    "rleaky": (
        N.rleaky, N.rleaky_trace,
        {"beta": cs.unit_interval(), "threshold": cs.positive(0.25, 2.0), "V": _recurrent_weights,
         "recurrent_bias": _recurrent_bias},
        {"all_to_all": st.booleans(), "reset_mechanism": _RESET, "reset_delay": st.booleans(), **_common_snn()},
        (-1.0, 2.0), lambda d: d["threshold"]),
    "rsynaptic": (
        N.rsynaptic, N.rsynaptic_trace,
        {"alpha": cs.unit_interval(), "beta": cs.unit_interval(), "threshold": cs.positive(0.25, 2.0),
         "V": _recurrent_weights, "recurrent_bias": _recurrent_bias},
        {"all_to_all": st.booleans(), "reset_mechanism": _RESET, "reset_delay": st.booleans(), **_common_snn()},
        (-1.0, 1.5), lambda d: d["threshold"]),
    "sj_if": (
        N.sj_if, N.sj_if_trace, {},
        {"v_threshold": cs.positive(0.25, 2.0), "v_reset": st.one_of(st.none(), st.just(0.0), st.floats(-0.5, 0.2)),
         "detach_reset": st.booleans(), "surrogate": st.sampled_from(("sigmoid", "atan")),
         "surrogate_alpha": _SURROGATE_ALPHA},
        (-1.0, 1.5), lambda d: d["v_threshold"]),
    "sj_lif": (
        N.sj_lif, N.sj_lif_trace, {},
        {"tau": st.floats(1.1, 5.0), "decay_input": st.booleans(), "v_threshold": cs.positive(0.25, 2.0),
         "v_reset": st.one_of(st.none(), st.just(0.0), st.floats(-0.5, 0.2)), "detach_reset": st.booleans(),
         "surrogate": st.sampled_from(("sigmoid", "atan")), "surrogate_alpha": _SURROGATE_ALPHA},
        (-1.0, 2.0), lambda d: d["v_threshold"] * (d["tau"] if d["decay_input"] else 1.0)),
    "sj_plif": (
        N.sj_plif, N.sj_plif_trace, {"w": st.floats(-2.0, 2.0)},
        {"decay_input": st.booleans(), "v_threshold": cs.positive(0.25, 2.0),
         "v_reset": st.one_of(st.none(), st.just(0.0), st.floats(-0.5, 0.2)), "detach_reset": st.booleans(),
         "surrogate": st.sampled_from(("sigmoid", "atan")), "surrogate_alpha": _SURROGATE_ALPHA},
        (-1.0, 2.0), lambda d: d["v_threshold"] * ((1.0 + torch.exp(torch.tensor(-d["w"])).item())
                                                  if d["decay_input"] else 1.0)),
    "norse_lif": (
        N.norse_lif, N.norse_lif_trace,
        {"tau_syn_inv": st.floats(100.0, 300.0), "tau_mem_inv": st.floats(50.0, 200.0),
         "v_leak": st.floats(-0.2, 0.2), "v_th": st.floats(0.3, 1.0), "v_reset": st.floats(-0.2, 0.2)},
        {"dt": st.just(1e-3), "detach_reset": st.booleans(),
         "surrogate": st.sampled_from(("fast_sigmoid", "triangular")),
         "surrogate_alpha": st.one_of(st.just(1.0), st.floats(0.3, 5.0))},
        (-0.5, 1.5), lambda d: d["v_th"] / (d["dt"] * d["tau_mem_inv"])),
    "norse_lif_box": (
        N.norse_lif_box, N.norse_lif_box_trace,
        {"tau_mem_inv": st.floats(50.0, 200.0), "v_leak": st.floats(-0.2, 0.2), "v_th": st.floats(0.3, 1.0),
         "v_reset": st.floats(-0.2, 0.2)},
        {"dt": st.just(1e-3), "reset": st.sampled_from(("value", "subtract")),
         "surrogate": st.sampled_from(("fast_sigmoid", "triangular")),
         "surrogate_alpha": st.one_of(st.just(1.0), st.floats(0.3, 5.0))},
        (-0.5, 1.5), lambda d: 2.0 * d["v_th"] / (d["dt"] * d["tau_mem_inv"])),
}

_SINABS_HYPER = {
    "spike_threshold": cs.positive(0.25, 2.0), "spike_fn": st.sampled_from(("multi", "single")),
    "reset": st.sampled_from(("subtract", "zero")), "min_v_mem": st.one_of(st.none(), st.floats(-2.0, -0.1)),
    "surrogate": st.sampled_from(N.SINABS_SURROGATES), "grad_width": st.floats(0.1, 1.0),
    "grad_scale": st.floats(0.5, 2.0),
}
_NEURONS["sinabs_iaf"] = (N.sinabs_iaf, N.sinabs_iaf_trace, {}, dict(_SINABS_HYPER), (-1.0, 2.0),
                          lambda d: d["spike_threshold"])
_NEURONS["sinabs_lif"] = (
    N.sinabs_lif, N.sinabs_lif_trace, {"tau_mem": st.floats(1.5, 10.0)},
    {"norm_input": st.booleans(), **_SINABS_HYPER}, (-1.0, 2.0),
    lambda d: d["spike_threshold"] / ((1.0 - torch.exp(torch.tensor(-1.0 / d["tau_mem"])).item())
                                      if d["norm_input"] else 1.0))


def _resolve(entry: Any, drawn: dict) -> st.SearchStrategy:
    return entry if isinstance(entry, st.SearchStrategy) else entry(drawn)


def neuron_examples(name: str, **fixed: Any) -> st.SearchStrategy[Example]:
    """Examples for ``neuron.<name>`` (see the module docstring)."""
    _, _, params, hyper, (low, high), scale = _NEURONS[name]
    cs.check_fixed(fixed, (*params, *hyper, "time_dim", "min_steps"), f"neuron.{name}")
    min_steps = fixed.get("min_steps", 1)

    @st.composite
    def draw_example(draw):
        time_dim = draw(cs.hyper(fixed, "time_dim", st.just(0)))
        steps = draw(cs.time_steps(min_steps, 6))
        long = steps > 6  # a long draw (strategies.long_draws): fewer samples and neurons, so it stays cheap
        batch, features = draw(st.integers(1, 2 if long else 3)), draw(st.integers(1, 2 if long else 4))
        drawn: dict[str, Any] = {"N": features}
        for key, entry in (*hyper.items(), *params.items()):
            drawn[key] = draw(cs.hyper(fixed, key, _resolve(entry, drawn)))
        shape = (steps, batch, features) if time_dim == 0 else (batch, steps, features)
        x = draw(cs.tensors(shape, min_value=low, max_value=high)) * float(scale(drawn))
        tensors = {key: value if isinstance(value, torch.Tensor) else torch.tensor(float(value), dtype=torch.float64)
                   for key in params if (value := drawn[key]) is not None}
        plain = {key: drawn[key] for key in hyper}
        plain["time_dim"] = time_dim
        return Example(x, tensors, plain)

    return draw_example()


#: Dyadic parameters of the neurons' edge examples: with inputs that are dyadic multiples of the threshold, every
#: membrane value is exact in bfloat16 too, and some land exactly on the threshold (margin 0: judged, never excused
#: as a tie), which the drawn examples never do.
_EXACT_EDGE_VALUES: dict[str, dict[str, Any]] = {
    "leaky": {"beta": 0.5, "threshold": 1.0, "graded_spikes_factor": 1.0},
    "synaptic": {"alpha": 0.5, "beta": 0.5, "threshold": 1.0},
    "lapicque": {"threshold": 1.0, "R": 1.0, "C": 1.0, "time_step": 0.5},
    "rleaky": {"beta": 0.5, "threshold": 1.0},  # V and the bias: their simplest values, 0
    "rsynaptic": {"alpha": 0.5, "beta": 0.5, "threshold": 1.0},
    "sj_if": {"v_threshold": 1.0, "v_reset": 0.0},
    "sj_lif": {"tau": 2.0, "v_threshold": 1.0, "v_reset": 0.0},
    "sj_plif": {"w": 0.0, "v_threshold": 1.0, "v_reset": 0.0},
    "sinabs_iaf": {"spike_threshold": 1.0, "min_v_mem": None},
}
#: Decays that are not dyadic (alpha's tau from two decays, norse's dt * tau_inv, sinabs' exp(-1/tau)): the
#: membranes are not exact and never exactly on the threshold (near it they are excused as ties); these edges bring
#: the libraries' default parameters (norse's LIFParameters, SuperSpike's alpha 100), zeros and the same input levels.
_INEXACT_EDGE_VALUES: dict[str, dict[str, Any]] = {
    "alpha": {"alpha": 0.75, "beta": 0.5, "threshold": 1.0},
    "norse_lif": {"tau_syn_inv": 200.0, "tau_mem_inv": 100.0, "v_leak": 0.0, "v_th": 1.0, "v_reset": 0.0,
                  "surrogate": "fast_sigmoid", "surrogate_alpha": 100.0},
    "norse_lif_box": {"tau_mem_inv": 100.0, "v_leak": 0.0, "v_th": 1.0, "v_reset": 0.0,
                      "surrogate": "fast_sigmoid", "surrogate_alpha": 100.0},
    "sinabs_lif": {"tau_mem": 2.0, "spike_threshold": 1.0, "min_v_mem": None},
}
_NEURON_EDGE_VALUES = {**_EXACT_EDGE_VALUES, **_INEXACT_EDGE_VALUES}
#: The neurons whose edge membranes are exact (dyadic decays), some exactly on the threshold.
EXACT_NEURON_EDGES = frozenset(_EXACT_EDGE_VALUES)
#: The input levels of the edge examples, in units of the spec's input scale (the threshold, or what reaches it).
_NEURON_EDGE_LEVELS = (0.0, 0.25, 0.5, 1.0, 2.0, -0.5, -1.0)


def _neuron_edge_setting(name: str, fixed: dict) -> tuple[dict, dict, float]:
    """The edge examples' parameters (``_NEURON_EDGE_VALUES``; other hyperparameters as the subject fixes them, else
    the simplest value of their strategy), as (params, hyper, input scale)."""
    _, _, params, hyper, _, scale = _NEURONS[name]
    chosen: dict[str, Any] = {"N": 4}
    for key, entry in (*hyper.items(), *params.items()):
        if key in _NEURON_EDGE_VALUES[name]:
            default = _NEURON_EDGE_VALUES[name][key]
        else:  # the simplest value of the spec's own strategy (None where it allows None)
            default = cs.edge_hyper({key: _resolve(entry, chosen)}, key, None)
        chosen[key] = cs.edge_hyper(fixed, key, default)
    tensors = {key: value if isinstance(value, torch.Tensor) else torch.tensor(float(value), dtype=torch.float64)
               for key in params if (value := chosen[key]) is not None}
    plain = {key: chosen[key] for key in hyper}
    plain["time_dim"] = cs.edge_hyper(fixed, "time_dim", 0)
    return tensors, plain, float(scale(chosen))


def _neuron_edge_examples(name: str, fixed: dict, sequences: tuple[tuple[int, int], ...], batch: int) -> list[Example]:
    """One example per (steps, seed) of ``sequences``: steps x ``batch`` x 4 neurons of inputs at dyadic multiples of
    the threshold scale drawn with that seed (the first step's first two neurons at the level that reaches the
    threshold from rest)."""
    tensors, plain, scale = _neuron_edge_setting(name, fixed)
    levels = torch.tensor(_NEURON_EDGE_LEVELS, dtype=torch.float64)
    examples = []
    for steps, seed in sequences:
        picks = torch.randint(len(levels), (steps, batch, 4), generator=torch.Generator().manual_seed(seed))
        picks[0, :, :2] = _NEURON_EDGE_LEVELS.index(1.0)  # from rest, one step of this input reaches the threshold
        x = levels[picks] * scale
        if plain["time_dim"] == 1:
            x = x.transpose(0, 1).contiguous()
        examples.append(Example(x, {k: v.clone() for k, v in tensors.items()}, dict(plain)))
    return examples


def neuron_edges(name: str, **fixed: Any) -> list[Example]:
    """One edge example for ``neuron.<name>``: 6 steps (or ``min_steps``) x batch 2 x 4 neurons of inputs at dyadic
    multiples of the threshold scale, with the parameters of ``_NEURON_EDGE_VALUES``; other hyperparameters as the
    subject fixes them, else the simplest value of their strategy."""
    return _neuron_edge_examples(name, fixed, ((max(6, fixed.get("min_steps", 1)), 20261205),), 2)


def neuron_size_edges(name: str, **fixed: Any) -> list[Example]:
    """The edge example's setting over ``LONG_SEQUENCE_STEPS`` (past the time tiles of a fused kernel, a step counter
    or an index that wraps) with a batch of one: a whole long sequence's spikes and gradients against the spec."""
    return _neuron_edge_examples(name, fixed, tuple((steps, 20261207 + steps) for steps in cs.LONG_SEQUENCE_STEPS), 1)


def neuron_margin(trace: Callable, example: Example) -> torch.Tensor:
    """The trace's margin: the compared membrane minus the threshold, per output element."""
    return trace(example.x, **example.params, **example.hyper)[1]


def _surrogate_spec(name: str) -> Spec:
    fn = getattr(S, name)
    return Spec(id=f"surrogate.{name}", fn=fn, examples=functools.partial(surrogate_examples, name),
                margin=surrogate_margin, time_dim=None, batch_dim=0, doc=(fn.__doc__ or "").strip().splitlines()[0],
                edges=functools.partial(surrogate_edges, name))


def _neuron_spec(name: str) -> Spec:
    fn, trace = _NEURONS[name][:2]
    return Spec(id=f"neuron.{name}", fn=fn, examples=functools.partial(neuron_examples, name),
                margin=functools.partial(neuron_margin, trace), time_dim=0, batch_dim=1,
                doc=(fn.__doc__ or "").strip().splitlines()[0],
                edges=functools.partial(neuron_edges, name) if name in _NEURON_EDGE_VALUES else None,
                size_edges=functools.partial(neuron_size_edges, name) if name in _NEURON_EDGE_VALUES else None)


SPECS: tuple[Spec, ...] = (*(_surrogate_spec(name) for name in S.SURROGATES),
                           *(_neuron_spec(name) for name in _NEURONS))
