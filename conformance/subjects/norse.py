"""norse 1.1 (``norse.torch``): ``LIFCell``, ``LIFBoxCell``, the ``LIF`` sequence module and the surrogate
``threshold`` functions that map onto :mod:`qsnn_reference.surrogate`.

Why ``param_map`` is empty for every norse subject (parameter gradients are not judged): norse 1.1 keeps its neuron
parameters in a ``LIFParameters``/``LIFBoxParameters`` named tuple (``module.p``, a ``pytree.StateTuple``), not as
registered parameters or buffers. ``LIFCell``/``LIF``/``LIFBoxCell`` rebuild ``p`` with ``torch.as_tensor``, which
keeps an ``nn.Parameter`` a user puts in the tuple (gradients do reach it), but the module never registers it:
``named_parameters()`` and ``state_dict()`` are empty (checked on 1.1.0 with ``tau_mem_inv``/``v_th`` as
``nn.Parameter``s), so ``functional_call``, per-sample gradients and Opacus cannot see it, and a ``param_map`` entry
(a dotted path to a registered parameter) has nothing to point at. ``LIF``'s docstring says the opposite ("p: The
neuron parameters as a torch Module, which allows the module to configure neuron parameters as optimizable"),
which no cell asks yet (it needs a subject holding ``nn.Parameter``s in ``p``); the ``state_dict`` transform leaves
such constructor values alone (only mapped parameters are changed in its target). The adapters load the spec's
parameters as plain tensors into ``p`` and judge the input gradient only. (Registering them on the adapter's wrapper instead would judge the wrapper,
not norse: ``functional_call`` would swap the wrapper's copies while norse computes with the tuple's.)

``LIFRecurrentCell`` has no subject: no spec describes norse's recurrent LIF (``neuron.rleaky``/``rsynaptic`` follow
snntorch's conventions, not norse's ``lif_step`` with input and recurrent weight matrices).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator

import torch
from torch import nn

from . import Network, exchange_network, network_conv, network_linear
from ..core.types import Example, Known, Library, Subject
from ..transforms.bdpy import known_stepped as bdpy_stepped
from ..transforms.bdpy import known_tuple_output as bdpy_tuple_output
from ..transforms.nir import LI_IMPORTED_BY_NORSE, conv_unwritable as _conv_unwritable

#: Installed without its declared dependencies: it declares torchvision (a CUDA torch) and imports it only for datasets;
#: nir and nirtorch, which it imports as it loads, are declared by transforms/nir.py.
LIBRARY = Library("norse", "norse", "1.1.0", no_deps=True, history=("1.0.0",))
REQUIRES = ("norse",)
_SRC = "https://github.com/norse/norse/blob/main/norse/torch"
_REPRO = "reproducers/norse"

#: spec surrogate name -> norse ``method``
_METHODS = {"fast_sigmoid": "super", "triangular": "triangle"}


def _tensor(value: Any) -> torch.Tensor:
    # The default dtype is the cell's (float64 cells build under float64): the tensors keep full precision.
    return torch.as_tensor(value, dtype=torch.get_default_dtype()).detach().clone()


def _method(hyper: dict[str, Any]) -> tuple[str, torch.Tensor]:
    alpha = hyper["surrogate_alpha"]
    return _METHODS[hyper["surrogate"]], _tensor(1.0 if alpha is None else alpha)


class CellOverTime(nn.Module):
    """A norse cell (one Euler step per call) run over ``x`` of shape ``(T, B, N)`` from its initial state."""

    def __init__(self, cell: nn.Module):
        super().__init__()
        self.cell = cell

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        state = None  # norse: state=None means the cell's initial_state
        spikes = []
        for t in range(x.shape[0]):
            z, state = self.cell(x[t], state)
            spikes.append(z)
        return torch.stack(spikes)


class Sequence(nn.Module):
    """A norse sequence module (``LIF``) on ``x`` of shape ``(T, B, N)``; returns the spikes of all steps."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z, _ = self.layer(x, None)
        return z


def _lif_parameters(example: Example):
    from norse.torch import LIFParameters

    method, alpha = _method(example.hyper)
    p = example.params
    return LIFParameters(tau_syn_inv=_tensor(p["tau_syn_inv"]), tau_mem_inv=_tensor(p["tau_mem_inv"]),
                         v_leak=_tensor(p["v_leak"]), v_th=_tensor(p["v_th"]), v_reset=_tensor(p["v_reset"]),
                         method=method, alpha=alpha)


def build_lif_cell(example: Example) -> nn.Module:
    from norse.torch import LIFCell

    return CellOverTime(LIFCell(_lif_parameters(example), dt=float(example.hyper["dt"])))


def build_lif(example: Example) -> nn.Module:
    from norse.torch import LIF

    return Sequence(LIF(_lif_parameters(example), dt=float(example.hyper["dt"])))


def build_lif_box_cell(example: Example) -> nn.Module:
    from norse.torch import LIFBoxCell
    from norse.torch.functional.lif_box import LIFBoxParameters
    from norse.torch.functional.reset import reset_subtract, reset_value

    method, alpha = _method(example.hyper)
    p = example.params
    params = LIFBoxParameters(tau_mem_inv=_tensor(p["tau_mem_inv"]), v_leak=_tensor(p["v_leak"]),
                              v_th=_tensor(p["v_th"]), v_reset=_tensor(p["v_reset"]), method=method, alpha=alpha,
                              reset_method=reset_value if example.hyper["reset"] == "value" else reset_subtract)
    return CellOverTime(LIFBoxCell(params, dt=float(example.hyper["dt"])))


def build_default(class_name: str):
    """``LIFCell()`` or ``LIF()`` as users construct them: norse's default ``LIFParameters()`` and ``dt``."""
    def build(example: Example) -> nn.Module:
        from norse import torch as norse

        module = getattr(norse, class_name)()
        return CellOverTime(module) if class_name == "LIFCell" else Sequence(module)

    return build


class Threshold(nn.Module):
    """norse's ``threshold(x, method, alpha)``: the spike function its neurons call on ``v - v_th``."""

    def __init__(self, threshold, method: str, alpha: float):
        super().__init__()
        self.threshold = threshold  # a module-level function: pickles by reference
        self.method = method
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.threshold(x, self.method, self.alpha)


def build_superspike(example: Example) -> nn.Module:
    from norse.torch.functional.threshold import threshold

    return Threshold(threshold, "super", 100.0)  # norse's default alpha, which SuperSpike ignores (alpha 1 here)


def build_triangle(example: Example) -> nn.Module:
    from norse.torch.functional.threshold import threshold

    return Threshold(threshold, "triangle", float(example.hyper["alpha"]))


# --- known failures --------------------------------------------------------------------------------------------

_GB_NO_BREAKS = "graph-break:setattr() on Tensor.requires_grad"
_GB_FULLGRAPH = "graph-break:setattr() on Tensor.requires_grad not supported. Mutating requires_grad can intr"
_INIT_STATE = ("initial_state() sets state.v.requires_grad = True on a fresh tensor inside forward (state=None), "
               "which dynamo cannot trace")


def _known_compile(module: str) -> tuple[Known, ...]:
    link = f"{_SRC}/module/{module}.py"
    script = f"{_REPRO}/compile_{'lif_cell' if module == 'lif' else 'lif_box_cell'}_initial_state.py"
    return (
        Known("compile_aot_eager", "no_graph_breaks", cause=_GB_NO_BREAKS, reason=_INIT_STATE, link=link,
              reproducer=script),
        Known("compile_aot_eager", "preserves_*", cause=_GB_FULLGRAPH, reason=_INIT_STATE, link=link,
              reproducer=script),
        Known("compile_dynamic", "no_graph_breaks", cause=_GB_NO_BREAKS, reason=_INIT_STATE, link=link,
              reproducer=script),
        Known("compile_dynamic", "preserves_forward", cause=_GB_FULLGRAPH, reason=_INIT_STATE, link=link,
              reproducer=script),
        Known("compile_inductor", "preserves_*", cause=_GB_FULLGRAPH, reason=_INIT_STATE, link=link,
              reproducer=script),
    )


def _known_pickle(params: str) -> tuple[Known, ...]:
    reason = (f"{params} is built by pytree.MultipleInheritanceNamedTupleMeta, which creates the class under "
              f"norse.torch.utils.pytree with a mangled base; pickle cannot find it by name")
    link = f"{_SRC}/utils/pytree.py"
    script = f"{_REPRO}/pickle_{'lif_parameters' if params == 'LIFParameters' else 'lif_box_parameters'}.py"
    return (Known("pickle", cause="pickle-failed", reason=reason, link=link, reproducer=script),
            Known("pickle_used", cause="pickle-failed", reason=reason, link=link, reproducer=script))


_DTYPE = Known("eager", "output_dtype", dtype="bfloat16", cause="dtype-mismatch", link=f"{_SRC}/module/lif.py",
               reason="initial_state creates the synaptic current i (and LIF's v) in float32 whatever the input "
                      "dtype, so a bfloat16 input gives float32 spikes",
               reproducer=f"{_REPRO}/lif_bfloat16_input_gives_float32_spikes.py")
_JIT = ("the cell's forward calls activation functions stored as attributes (and autograd.Functions), which "
        "TorchScript cannot compile")
_SUPER = f"{_SRC}/functional/superspike.py"
_TRIANGLE = f"{_SRC}/functional/threshold.py"


def _known_superspike() -> tuple[Known, ...]:
    return (
        Known("vmap", cause="autograd-function-no-vmap-rule", link=_SUPER,
              reason="SuperSpike defines setup_context but neither generate_vmap_rule nor a vmap staticmethod",
              reproducer=f"{_REPRO}/superspike_vmap.py"),
        Known("jvp", cause="jvp-unsupported", link=_SUPER,
              reason="SuperSpike defines no jvp, so forward-mode AD raises", reproducer=f"{_REPRO}/superspike_jvp.py"),
    )


def _known_triangle() -> tuple[Known, ...]:
    reason = "Triangle is an old-style autograd.Function (forward(ctx, ...), no setup_context): torch.func refuses it"
    return tuple(Known(t, cause="autograd-function-without-setup_context", reason=reason, link=_TRIANGLE,
                       reproducer=f"{_REPRO}/triangle_{t}.py")
                 for t in ("vmap", "grad", "jvp"))


#: bdpy's entries (declared by transforms/bdpy.py's helpers) -> the scripts that show them on a norse cell
_BDPY_SCRIPTS = {"bdpy_features": f"{_REPRO}/bdpy_stepped_cell_mislabelled.py",
                 "bdpy_features_detach": f"{_REPRO}/bdpy_detach_tuple_output.py"}


def _bdpy(entries: tuple[Known, ...]) -> tuple[Known, ...]:
    return tuple(replace(k, reproducer=_BDPY_SCRIPTS[k.transform]) for k in entries)


def _run_network(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    state, spikes = None, []
    for x_t in x:
        z, state = net(x_t, state)
        spikes.append(z)
    return torch.stack(spikes)


def build_lif_box_network(example: Example) -> nn.Module:
    """Linear(4, 3) + LIFBoxCell (per-neuron parameters, dt 1e-3)."""
    from norse.torch import LIFBoxCell, SequentialState
    from norse.torch.functional.lif_box import LIFBoxParameters

    linear = network_linear(example)
    ones = torch.ones(linear.out_features)
    params = LIFBoxParameters(tau_mem_inv=100 * ones, v_leak=0 * ones, v_th=ones, v_reset=0 * ones)
    return Network(SequentialState(linear, LIFBoxCell(params, dt=1e-3)), _run_network)


def build_li_box_network(example: Example) -> nn.Module:
    """Linear(4, 3) + LIBoxCell, a leaky-integrator readout (per-neuron parameters, dt 1e-3): the output is its
    membrane potential."""
    from norse.torch import LIBoxCell, SequentialState
    from norse.torch.functional.leaky_integrator_box import LIBoxParameters

    linear = network_linear(example)
    ones = torch.ones(linear.out_features)
    return Network(SequentialState(linear, LIBoxCell(LIBoxParameters(tau_mem_inv=100 * ones, v_leak=0 * ones),
                                                     dt=1e-3)), _run_network)


def build_lif_network(example: Example) -> nn.Module:
    """Linear(4, 3) + LIFCell, norse's current-based LIF (its default parameters per neuron: tau_syn_inv 200,
    tau_mem_inv 100, v_th 1, v_leak = v_reset = 0; dt 1e-3)."""
    from norse.torch import LIFCell, SequentialState
    from norse.torch.functional.lif import LIFParameters

    linear = network_linear(example)
    ones = torch.ones(linear.out_features)
    params = LIFParameters(tau_syn_inv=200 * ones, tau_mem_inv=100 * ones, v_leak=0 * ones, v_th=ones,
                           v_reset=0 * ones)
    return Network(SequentialState(linear, LIFCell(params, dt=1e-3)), _run_network)


def build_conv_iaf_network(example: Example) -> nn.Module:
    """Conv2d(1, 2, 3, padding=1) + IAFCell (per-neuron parameters)."""
    from norse.torch import IAFCell, SequentialState
    from norse.torch.functional.iaf import IAFParameters

    from conformance.specs.models import CONV_NETWORK_CHANNELS, CONV_NETWORK_INPUT

    ones = torch.ones(CONV_NETWORK_CHANNELS, *CONV_NETWORK_INPUT[1:])
    return Network(SequentialState(network_conv(example), IAFCell(IAFParameters(v_th=ones, v_reset=0 * ones))),
                   _run_network)


def build_iaf_network(example: Example) -> nn.Module:
    """Linear(4, 3) + IAFCell (per-neuron parameters)."""
    from norse.torch import IAFCell, SequentialState
    from norse.torch.functional.iaf import IAFParameters

    linear = network_linear(example)
    ones = torch.ones(linear.out_features)
    return Network(SequentialState(linear, IAFCell(IAFParameters(v_th=ones, v_reset=0 * ones))), _run_network)


#: findings of the NIR exchange (docs/nir.md)
_NIR_EXPORT = f"{_SRC}/utils/export_nir.py"
NIR_KNOWN_LIF: tuple[Known, ...] = (
    Known("nir_*", cause="transform-changed-forward", also=("nir-graph-changed-forward", "nir-import-failed"),
          link=_NIR_EXPORT,
          reason="norse's exporter writes LIFBoxCell's time constant as tau = dt / tau_mem_inv (dt times the "
                 "time constant: 1e-5 s for 10 ms at dt = 1e-3): the graph's membrane is 1000 times too fast, norse's "
                 "importer inverts it to another tau_mem_inv, and spikingjelly refuses it (tau / dt < 1)",
          reproducer="reproducers/norse/nir_export_lif_tau_times_dt.py"),
)
_IAF_R = Known("nir_*", cause="nir-graph-changed-forward", also=("nir-import-failed",), link=_NIR_EXPORT,
               reason="norse's exporter writes IAFCell (v += I each step, dt unused) as nir.IF with r = 1: at the "
                      "exporter's dt NIR's IF adds only dt * I per step (spikingjelly refuses it: r must be 1 / dt); "
                      "norse's importer ignores r, so only its own round trip hides it",
               reproducer="reproducers/norse/nir_export_iaf_r_without_dt.py")
NIR_KNOWN_IAF: tuple[Known, ...] = (
    replace(_IAF_R, transform="nir_graph"), replace(_IAF_R, transform="nir_to:spikingjelly"),
)


_LIF_CELL_TAU = Known(
    "nir_graph", cause="nir-graph-changed-forward", link=_NIR_EXPORT,
    reason="norse's exporter writes LIFCell's time constants as tau_syn = dt / tau_syn_inv and tau_mem = dt / "
           "tau_mem_inv (dt times each, as for LIFBoxCell): the graph's neuron is 1000 times too fast, norse's "
           "importer inverts it to other time constants, and spikingjelly refuses it (time constants below dt)",
    reproducer="reproducers/norse/nir_export_lif_cell_tau_times_dt.py")
NIR_KNOWN_LIF_CELL: tuple[Known, ...] = (
    _LIF_CELL_TAU, *(replace(_LIF_CELL_TAU, transform=column, cause="transform-changed-forward")
                     for column in ("nir_roundtrip", "nir_to:sinabs")),
    replace(_LIF_CELL_TAU, transform="nir_to:spikingjelly", cause="nir-import-failed"),
)
_LI_TAU = Known("nir_graph", cause="nir-graph-changed-forward", link=_NIR_EXPORT,
                reason="norse's exporter writes LIBoxCell's time constant as tau = dt / tau_mem_inv (dt times the "
                       "time constant, as for LIFBoxCell): the graph's readout integrates 1000 times too fast",
                reproducer="reproducers/norse/nir_export_li_tau_times_dt.py")
NIR_KNOWN_LI: tuple[Known, ...] = (
    _LI_TAU, replace(_LI_TAU, transform="nir_to:sinabs", cause="transform-changed-forward"),
    # its own round trip: the importer leaves the readout out (transforms/nir.py)
    replace(LI_IMPORTED_BY_NORSE, transform="nir_roundtrip"),
)


#: the modules' default argument, evaluated once: every module built without its own p computes with its tensors
_SHARED_PARAMETERS = Known(
    "module_contract", "independent_builds", cause="tensor-shared-between-builds", link=f"{_SRC}/module/lif.py",
    reason="LIFCell and LIF declare p=LIFParameters() as a default argument, evaluated once, and keep its tensors: "
           "every module built without its own p computes with the same tensors, so an in-place change to one "
           "module's p.v_th (or any field) changes every other such module's spikes",
    reproducer=f"{_REPRO}/default_parameters_shared.py")
#: the same default argument's tensors are made at import, in torch's default dtype then (float32)
_FLOAT32_PARAMETERS = Known(
    "eager", "*_matches_spec", dtype="float64", cause="forward-mismatch", link=f"{_SRC}/module/lif.py",
    also=("grad-mismatch",),
    reason="the default LIFParameters() tensors are made when norse is imported, float32 at torch's default, and p is "
           "not registered, so .double() leaves them float32: the float64 membrane decays by dt * tau_mem_inv rounded "
           "to float32 (0.1 -> 0.10000000149), and where one step brings it exactly to v_th = 1 the cell spikes "
           "(and its gradients are float32-accurate: grad-mismatch on an example that spikes as the spec does)",
    reproducer=f"{_REPRO}/default_parameters_stay_float32.py")

#: the neuron modules' parameters (a NamedTuple attribute ``p``) under the conversion columns
_CONVERSIONS = tuple(
    Known(transform, cause="conversion-incomplete", link="https://github.com/norse/norse/pull/106",
          reason="the neuron parameters are a NamedTuple of plain tensors held as the attribute p, which nn.Module "
                 "conversions (.double(), .half()) do not reach: they stay float32 (under .half() the cell computes "
                 "in float32); norse chose NamedTuples over buffers knowing that .to of the module does not move them",
          reproducer=f"{_REPRO}/parameters_do_not_follow_conversions.py")
    for transform in ("to_float64", "half"))


def subjects() -> Iterator[Subject]:
    # a small network for the exchange columns (NIR): model.snn_network
    network = exchange_network(LIBRARY.name, REQUIRES)
    yield Subject(id="norse.LinearLIFBoxCell", spec="model.snn_network", build=build_lif_box_network, **network,
                  known=NIR_KNOWN_LIF)
    yield Subject(id="norse.LinearIAFCell", spec="model.snn_network", build=build_iaf_network, **network,
                  known=NIR_KNOWN_IAF)
    yield Subject(id="norse.LinearLIFCell", spec="model.snn_network", build=build_lif_network, **network,
                  known=NIR_KNOWN_LIF_CELL)
    yield Subject(id="norse.ConvIAFCell", spec="model.snn_conv_network", build=build_conv_iaf_network, **network,
                  known=(_conv_unwritable("norse", "reproducers/norse/nir_conv_without_input_shape.py"),))
    yield Subject(id="norse.LinearLIBoxCell", spec="model.snn_network", build=build_li_box_network, **network,
                  known=NIR_KNOWN_LI)
    common = dict(library=LIBRARY.name, requires=REQUIRES)
    # lif_feed_forward_step does not detach the reset spike; method "super" ignores alpha (SuperSpike is alpha=1).
    super_fixed = {"surrogate": "fast_sigmoid", "surrogate_alpha": 1.0}
    yield Subject(id="norse.LIFCell", spec="neuron.norse_lif", build=build_lif_cell,
                  fixed={**super_fixed, "detach_reset": False},
                  known=(_DTYPE, *_known_compile("lif"), *_known_pickle("LIFParameters"),
                         Known("jit_script", cause="jit-unsupported", reason=_JIT, link=f"{_SRC}/module/snn.py",
                               reproducer=f"{_REPRO}/jit_script_lif_cell.py"),
                         *_known_superspike(), *_bdpy(bdpy_stepped(tuple_output=True)), *_CONVERSIONS),
                  **common)
    yield Subject(id="norse.LIF[triangle]", spec="neuron.norse_lif", build=build_lif,
                  fixed={"surrogate": "triangular", "detach_reset": False},
                  known=(_DTYPE, *_known_compile("lif"), *_known_pickle("LIFParameters"),
                         *_known_triangle(),
                         Known("jit_script", cause="jit-unsupported", reason=_JIT, link=f"{_SRC}/module/snn.py",
                               reproducer=f"{_REPRO}/jit_script_lif.py"),
                         *_bdpy(bdpy_tuple_output()), *_CONVERSIONS),
                  **common)
    yield Subject(id="norse.LIFBoxCell", spec="neuron.norse_lif_box", build=build_lif_box_cell,
                  fixed=super_fixed,
                  known=(*_known_compile("lif_box"), *_known_pickle("LIFBoxParameters"),
                         Known("jit_script", cause="jit-unsupported", reason=_JIT, link=f"{_SRC}/module/snn.py",
                               reproducer=f"{_REPRO}/jit_script_lif_cell.py"),
                         *_known_superspike(), *_bdpy(bdpy_stepped(tuple_output=True)), *_CONVERSIONS),
                  **common)
    # the modules as constructed by default: LIFParameters() (tau_syn_inv 200, tau_mem_inv 100, v_leak 0, v_th 1,
    # v_reset 0, SuperSpike), dt 1e-3
    defaults = {**super_fixed, "detach_reset": False, "tau_syn_inv": 200.0, "tau_mem_inv": 100.0, "v_leak": 0.0,
                "v_th": 1.0, "v_reset": 0.0, "dt": 1e-3}
    for name, script, bdpy in (("LIFCell", "jit_script_lif_cell.py", _bdpy(bdpy_stepped(tuple_output=True))),
                               ("LIF", "jit_script_lif.py", _bdpy(bdpy_tuple_output()))):
        yield Subject(id=f"norse.{name}[default]", spec="neuron.norse_lif", build=build_default(name), fixed=defaults,
                      known=(_DTYPE, *_known_compile("lif"), *_known_pickle("LIFParameters"),
                             Known("jit_script", cause="jit-unsupported", reason=_JIT, link=f"{_SRC}/module/snn.py",
                                   reproducer=f"{_REPRO}/{script}"),
                             *_known_superspike(), _SHARED_PARAMETERS, _FLOAT32_PARAMETERS, *bdpy,
                             *_CONVERSIONS),
                      **common)
    # norse's heaviside fires at x > 0 (strict)
    yield Subject(id="norse.threshold[super]", spec="surrogate.fast_sigmoid", build=build_superspike,
                  fixed={"alpha": 1.0, "strict": True}, known=_known_superspike(), **common)
    yield Subject(id="norse.threshold[triangle]", spec="surrogate.triangular", build=build_triangle,
                  fixed={"strict": True}, known=_known_triangle(), **common)
