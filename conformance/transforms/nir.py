"""Across frameworks through NIR (the Neuromorphic Intermediate Representation): a network exported by its library,
written to a NIR file and read back (``nir.write`` / ``nir.read``, HDF5), imported by the same library
(``nir_roundtrip``) or by another (``nir_to:<library>``), run over the same input steps.

Judged against the exporting library's eager network (``preserves_forward``), and the exported graph itself against
what it declares: ``nir_graph_matches_module`` runs the graph with ``qsnn_reference.nir`` (NIR's node equations, forward
Euler at the exporter's dt) and compares with the eager network, so a wrong export is told apart from a wrong import.

Each library's exchange (docs/nir.md has the parameter mapping of each): the dt it exports at, its exporter and its
importer. NIR graphs are continuous-time: an importer is asked to simulate at the exporter's dt where it takes one.
Subjects opt in with ``"nir" in Subject.formats``; their module holds the library's own network as ``.net`` and runs
it over ``x`` of shape ``(T, B, N)``.
"""

from __future__ import annotations

import fnmatch
import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from ..core.causes import TransformFailed
from ..core.types import Known, Library, Spec, Subject
from .harness import Context, Transform, TransformRun, build, eager, stage

#: where these transforms stand in the table (and the report's columns)
ORDER = 80
FORMAT = "nir"
#: the releases every library's converter runs with (norse and sinabs import nir as they load): nir >= 1.0.6 has the
#: v_reset snntorch's exporter writes, nirtorch >= 2.0.5 the API spikingjelly's converter calls (docs/nir.md)
NIR = Library("nir", "nir", "1.0.8", no_deps=True, dependencies=("h5py", "numpy"))
NIRTORCH = Library("nirtorch", "nirtorch", "2.6", no_deps=True)


@dataclass(frozen=True)
class Exchange:
    """One library's NIR converter, as the harness calls it.

    dt:     the time step its exporter writes the graph for (its own default or fixed value; sinabs counts in steps).
    export: ``export(net, x) -> nir.NIRGraph`` for the library's network and the input ``(T, B, N)``.
    load:   ``load(graph, dt, x) -> run``: the graph imported (``dt`` is the exporter's; an importer without a dt
            parameter simulates at its own; ``x`` gives the batch size and dtype), as ``run(x) -> (T, B, M)``, the
            imported network over ``x``.
    """

    library: str
    dt: float
    export: Callable[[nn.Module, torch.Tensor], Any]
    load: Callable[[Any, float, torch.Tensor], Callable[[torch.Tensor], torch.Tensor]]


def _step_all(module: Callable, x: torch.Tensor) -> torch.Tensor:
    """An imported network (nirtorch's executor convention: ``module(x_t, state) -> (out, state)``) over ``x``."""
    state, outputs = None, []
    for x_t in x:
        result = module(x_t) if state is None else module(x_t, state)
        out, state = result if isinstance(result, tuple) else (result, None)
        outputs.append(out)
    return torch.stack(outputs)


# ------------------------------------------------------------------------------------------------ snntorch
def reset_snntorch(net: nn.Module) -> None:
    """Each of ``net``'s snntorch neurons back at rest. Not snntorch.utils.reset: that resets every neuron of the
    class ever built in the process (a class-level list), and raises on one a vmap left holding a batched tensor."""
    import snntorch

    for layer in net.modules():
        if isinstance(layer, snntorch.SpikingNeuron) and hasattr(layer, "reset_mem"):
            layer.reset_mem()


def _snntorch_export(net: nn.Module, x: torch.Tensor) -> Any:
    from snntorch.export_nir import export_to_nir

    reset_snntorch(net)
    # ignore_dims=[0]: the sample's batch axis is not part of the graph (without it nir >= 1.0.6's type inference
    # rejects the graph)
    return export_to_nir(net, x[0], ignore_dims=[0])


def _snntorch_load(graph: Any, dt: float, x: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    from snntorch.import_nir import import_from_nir

    module = import_from_nir(graph)  # simulates at snntorch's fixed dt (1e-4)
    reset_snntorch(module)
    return functools.partial(_step_all, module)


# ------------------------------------------------------------------------------------------------ norse
def _norse_export(net: nn.Module, x: torch.Tensor) -> Any:
    from norse.torch.utils.export_nir import to_nir

    return to_nir(net, x[0, 0], dt=NORSE_DT)  # an unbatched sample: a batched one leaves its batch axis in the graph


def _norse_load(graph: Any, dt: float, x: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    from norse.torch.utils.import_nir import from_nir

    return functools.partial(_step_all, from_nir(graph, dt=dt))


# ------------------------------------------------------------------------------------------------ sinabs
def _sinabs_export(net: nn.Module, x: torch.Tensor) -> Any:
    from sinabs.nir import to_nir

    return to_nir(net, x[0])


def run_squeezed(module: Callable, x: torch.Tensor) -> torch.Tensor:
    """A sinabs network of Squeeze layers over ``x`` of shape ``(T, B, N)``: fed as ``(B*T, N)``, batch-major, as
    those layers take it (an executor's ``(out, state)`` gives ``out``), returned as ``(T, B, M)``."""
    steps, batch = x.shape[:2]
    out = module(x.transpose(0, 1).flatten(0, 1))
    out = out[0] if isinstance(out, tuple) else out
    return out.reshape(batch, steps, *out.shape[1:]).transpose(0, 1)


def _sinabs_load(graph: Any, dt: float, x: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    from sinabs.nir import from_nir

    # sinabs steps in units of one time step: no dt to pass
    return functools.partial(run_squeezed, from_nir(graph, batch_size=x.shape[1]))


# ------------------------------------------------------------------------------------------------ spikingjelly
def _spikingjelly_export(net: nn.Module, x: torch.Tensor) -> Any:
    from spikingjelly.activation_based import functional
    from spikingjelly.activation_based.nir_exchange import export_to_nir

    functional.reset_net(net)
    graph = export_to_nir(net, x[0], dt=SPIKINGJELLY_DT)
    functional.reset_net(net)
    return graph


def _spikingjelly_load(graph: Any, dt: float, x: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    from spikingjelly.activation_based.nir_exchange import import_from_nir

    return functools.partial(_step_all, import_from_nir(graph, dt=dt, dtype=x.dtype))


#: the dt each exporter uses: snntorch's is fixed in its exporter, spikingjelly's and norse's are their defaults
SNNTORCH_DT, NORSE_DT, SPIKINGJELLY_DT, SINABS_DT = 1e-4, 1e-3, 1e-4, 1.0
#: the libraries whose importers have a column (nir_to:<library>)
IMPORTERS: dict[str, Exchange] = {e.library: e for e in (
    Exchange("snntorch", SNNTORCH_DT, _snntorch_export, _snntorch_load),
    Exchange("norse", NORSE_DT, _norse_export, _norse_load),
    Exchange("sinabs", SINABS_DT, _sinabs_export, _sinabs_load),
    Exchange("spikingjelly", SPIKINGJELLY_DT, _spikingjelly_export, _spikingjelly_load),
)}
#: every library whose subjects can be exported: those above and any registered (a plugin's own library, mutants)
EXCHANGES: dict[str, Exchange] = dict(IMPORTERS)


def register_exchange(exchange: Exchange) -> None:
    """Make a library's subjects with ``"nir" in formats`` exportable (nir_graph, nir_roundtrip, nir_to:<B>)."""
    EXCHANGES[exchange.library] = exchange


# ------------------------------------------------------------------------------------------------ transforms
def through_file(graph: Any) -> tuple[Any, list[str]]:
    """The graph written with ``nir.write`` and read back with ``nir.read``, and what changed on the way (node
    types, parameter values)."""
    import nir

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "graph.nir"
        nir.write(path, graph)
        read = nir.read(path)
    return read, graph_differences(graph, read)


def graph_differences(before: Any, after: Any) -> list[str]:
    changed = []
    if set(before.nodes) != set(after.nodes):
        return [f"nodes {sorted(before.nodes)} became {sorted(after.nodes)}"]
    for name, node in before.nodes.items():
        other = after.nodes[name]
        if type(node).__name__ != type(other).__name__:
            changed.append(f"{name}: {type(node).__name__} became {type(other).__name__}")
            continue
        read_back = parameters(other)
        for key, value in parameters(node).items():
            read = read_back.get(key)
            if read is None or read.shape != value.shape or not torch.equal(read, value):
                changed.append(f"{name}.{key}: {describe_value(value)} became {describe_value(read)}")
    return changed


def parameters(node: Any) -> dict[str, torch.Tensor]:
    """A node's numeric parameters (tau, r, weight, ...) as float64 tensors."""
    import numpy as np

    found = {}
    for key, value in vars(node).items():
        if key.startswith("_") or key in ("input_type", "output_type", "metadata"):
            continue
        # numbers of every kind: nir.read gives numpy scalars and arrays where a graph was built with ints and tuples
        # (a Conv2d's groups, stride); equal values compare equal whatever their container
        if isinstance(value, (np.ndarray, np.number, torch.Tensor, float, int, tuple, list)) and \
                not isinstance(value, bool):
            try:
                found[key] = torch.as_tensor(np.asarray(value, dtype=np.float64))
            except (TypeError, ValueError):  # not numbers (e.g. a padding of "same")
                continue
    return found


def describe_value(value: torch.Tensor | None) -> str:
    if value is None:
        return "nothing"
    flat = value.flatten()
    shown = ", ".join(f"{v:.6g}" for v in flat[:4].tolist()) + (", ..." if flat.numel() > 4 else "")
    return f"[{shown}]" if value.dim() else shown


def describe_graph(graph: Any) -> str:
    """One line per neuron/weight node: its type and parameters (what a reader checks against the mapping)."""
    parts = []
    for name, node in graph.nodes.items():
        params = parameters(node)
        if params:
            shown = ", ".join(f"{k}={describe_value(v)}" for k, v in params.items() if k not in ("weight", "bias"))
            parts.append(f"{name}: {type(node).__name__}({shown})")
    return "; ".join(parts)


def export_through_file(ctx: Context, module: nn.Module, x: torch.Tensor) -> Any:
    """The subject's network exported by its library and read back from a NIR file; a value nir.write + nir.read
    changed fails the stage ``nir_file``."""
    with stage("nir_export"):
        graph = EXCHANGES[ctx.subject.library].export(module.net, x)
    with stage("nir_file"):
        read, changes = through_file(graph)
        if changes:
            raise FileChangedGraph("nir.write + nir.read changed the graph: " + "; ".join(changes[:4]))
    return read


class FileChangedGraph(ValueError):
    """What a NIR file gave back differs from what was written."""


@dataclass
class NirFindings:
    graph: str                          # describe_graph of the graph read back
    dt: float                           # the exporter's


def nir_graph(ctx: Context) -> TransformRun:
    """The exported graph (through a NIR file) run by qsnn_reference.nir, NIR's node equations at the exporter's dt:
    what the graph declares equals what the module computes."""
    from qsnn_reference.nir import UnsupportedGraph, simulate

    module = build(ctx)
    x = ctx.input().detach()
    graph = export_through_file(ctx, module, x)
    dt = EXCHANGES[ctx.subject.library].dt
    with stage("nir_reference"):
        try:
            meaning = simulate(graph, x.double(), dt).to(x.dtype)
        except UnsupportedGraph as unsupported:  # what NIR leaves undefined, told from the reference raising
            raise TransformFailed("nir_unsupported", unsupported) from unsupported
    result = TransformRun(y=meaning)  # what the graph declares, judged against the module
    result.findings.nir = NirFindings(graph=describe_graph(graph), dt=dt)
    result.against = eager(ctx)
    return result


def _import_transform(name: str, target: str | None) -> Callable[[Context], TransformRun]:
    def transform(ctx: Context) -> TransformRun:
        exporter = EXCHANGES[ctx.subject.library]
        module = build(ctx)
        x = ctx.input().detach()
        graph = export_through_file(ctx, module, x)
        with stage("nir_import"):
            run = EXCHANGES[target or exporter.library].load(graph, exporter.dt, x)
        with stage("nir_run"):
            imported = run(x)
        result = TransformRun(y=imported.detach())
        result.against = eager(ctx)
        return result

    transform.__name__ = name.replace(":", "_")
    transform.__doc__ = (f"Exported by the subject's library to NIR, through a NIR file, imported by "
                         f"{target or 'the same library'}: the imported network computes what the module computes.")
    return transform


def _applies(target: str | None) -> Callable[[Subject, Spec], str | None]:
    def applies(subject: Subject, spec: Spec) -> str | None:
        if FORMAT not in subject.formats or subject.library not in EXCHANGES:
            return f"{subject.id} declares no NIR export"
        if target == subject.library:
            return f"{subject.library} to itself is nir_roundtrip"
        return None

    return applies


# ------------------------------------------------------------------------------------------------ importers' findings
# An importer's finding shows on the networks whose graphs hold what it mishandles: (subject id glob, entry) per
# importing column; the exporting library's own findings are its subjects' entries, which come first.
_SINABS_NIR = "https://github.com/synsense/sinabs/blob/develop/sinabs/nir.py"
_SNNTORCH_IMPORT = "https://github.com/jeshraghian/snntorch/blob/master/snntorch/import_nir.py"
_NORSE_IMPORT = "https://github.com/norse/norse/blob/main/norse/torch/utils/import_nir.py"
_CONV_WRITE = "https://github.com/neuromorphs/NIR/blob/main/nir/serialization.py"
_SPIKINGJELLY_NIR = "https://github.com/fangwei123456/spikingjelly/tree/master/spikingjelly/activation_based/nir_exchange"

IMPORTED_BY_SINABS = Known(
    "nir_to:sinabs", cause="transform-changed-forward", link=_SINABS_NIR,
    reason="sinabs' importer builds NIR's IF and LIF as IAFSqueeze/LIFSqueeze with sinabs' defaults: multi-spike "
           "output and a subtractive reset where NIR declares one spike and a reset to v_reset, r and v_reset "
           "ignored, tau read in time steps: the imported layer spikes otherwise",
    reproducer="reproducers/sinabs/nir_import_multispike_subtract.py")
IF_IMPORTED_BY_SNNTORCH = Known(
    "nir_to:snntorch", cause="nir-run-failed", link=_SNNTORCH_IMPORT,
    reason="snntorch's importer maps nir.IF to snn.Leaky(beta=0.9, init_hidden=False): a leaky neuron returning "
           "(spk, mem), which the next node of the imported graph cannot take, so running it raises",
    reproducer="reproducers/snntorch/nir_import_if_builds_leaky.py")
IF_WITH_R_IMPORTED_BY_SNNTORCH = Known(
    "nir_to:snntorch", cause="nir-import-failed", link=_SNNTORCH_IMPORT,
    reason="snntorch's importer asserts r == 1 for nir.IF (`r != 1 not supported`): an IF exported at dt as "
           "r = 1 / dt (spikingjelly's IFNode) cannot be imported",
    reproducer="reproducers/snntorch/nir_import_if_refuses_r.py")
LIF_WITH_R_IMPORTED_BY_NORSE = Known(
    "nir_to:norse", cause="transform-changed-forward", link=_NORSE_IMPORT,
    reason="norse's importer builds a LIFBoxCell from tau, v_leak and v_threshold and drops r (a warning): a graph "
           "with r != 1 (snntorch writes r = 1 / (1 - beta)) integrates its input r times too weakly",
    reproducer="reproducers/norse/nir_import_ignores_r.py")

CUBA_LIF_R_IMPORTED_BY_SNNTORCH = Known(
    "nir_to:snntorch", cause="nir-import-failed", link=_SNNTORCH_IMPORT,
    reason="snntorch's importer asserts r == tau_mem / 1e-4 for nir.CubaLIF (its own exporter's convention at its "
           "fixed dt): a current-based LIF written otherwise (norse writes r = 1) cannot be imported",
    reproducer="reproducers/snntorch/nir_import_cubalif_refuses_r.py")
LI_IMPORTED_BY_NORSE = Known(
    "nir_to:norse", cause="transform-changed-forward", link=_NORSE_IMPORT,
    reason="norse's importer has no mapping for nir.LI and leaves the leaky integrator out without a word: the "
           "imported network returns the current into the readout, not its membrane",
    reproducer="reproducers/norse/nir_import_drops_li.py")
LI_IMPORTED_BY_SNNTORCH = Known(
    "nir_to:snntorch", cause="nir-import-failed", link=_SNNTORCH_IMPORT,
    reason="snntorch's importer has no mapping for nir.LI, NIR's readout layer: it raises on any graph holding one",
    reproducer="reproducers/snntorch/nir_import_no_li.py")
LI_IMPORTED_BY_SPIKINGJELLY = Known(
    "nir_to:spikingjelly", cause="nir-import-failed", link=_SPIKINGJELLY_NIR,
    reason="spikingjelly's importer has no mapping for nir.LI, NIR's readout layer: it raises on any graph holding "
           "one",
    reproducer="reproducers/spikingjelly/nir_import_no_li.py")
LIF_WITH_DIMENSIONS_IMPORTED_BY_SINABS = Known(
    "nir_to:sinabs", cause="nir-import-failed", link=_SINABS_NIR,
    reason="sinabs' importer checks a LIF's v_leak with Python's any() (`if any(node.v_leak) != 0`), which raises "
           "('The truth value of an array with more than one element is ambiguous') on parameters of more than one "
           "dimension, as every convolutional layer's neurons have",
    reproducer="reproducers/sinabs/nir_import_lif_multidimensional.py")


def conv_unwritable(library: str, reproducer: str) -> Known:
    """A library whose exporter writes nir.Conv2d without its input shape, which nir.write cannot store."""
    return Known("nir_*", cause="nir-file-changed-graph", link=_CONV_WRITE,
                 reason=f"{library}'s exporter writes nir.Conv2d with input_shape=None, which nir.write (nir 1.0.8) "
                        "cannot store in the HDF5 file (h5py: 'One of data, shape or dtype must be specified'): the "
                        "graph of any convolutional network cannot be saved",
                 reproducer=reproducer)


#: the networks whose graphs hold a leaky-integrator readout (nir.LI)
LI_READOUTS = ("norse.LinearLIBoxCell", "sinabs.LinearExpLeakSqueeze")

IMPORTER_FINDINGS: dict[str, tuple[tuple[str, Known], ...]] = {
    "nir_to:sinabs": (("snntorch.ConvLeaky[[]*", LIF_WITH_DIMENSIONS_IMPORTED_BY_SINABS), ("*", IMPORTED_BY_SINABS)),
    "nir_to:snntorch": (("norse.LinearIAFCell", IF_IMPORTED_BY_SNNTORCH),
                        ("sinabs.LinearIAFSqueeze", IF_IMPORTED_BY_SNNTORCH),
                        ("spikingjelly.LinearIFNode", IF_WITH_R_IMPORTED_BY_SNNTORCH),
                        ("spikingjelly.ConvIFNode", IF_WITH_R_IMPORTED_BY_SNNTORCH),
                        ("norse.LinearLIFCell", CUBA_LIF_R_IMPORTED_BY_SNNTORCH),
                        *((readout, LI_IMPORTED_BY_SNNTORCH) for readout in LI_READOUTS)),
    "nir_to:norse": (("snntorch.LinearLeaky[[]*", LIF_WITH_R_IMPORTED_BY_NORSE),
                     ("snntorch.LinearRLeaky[[]*", LIF_WITH_R_IMPORTED_BY_NORSE),
                     ("snntorch.ConvLeaky[[]*", LIF_WITH_R_IMPORTED_BY_NORSE),
                     *((readout, LI_IMPORTED_BY_NORSE) for readout in LI_READOUTS)),
    "nir_to:spikingjelly": tuple((readout, LI_IMPORTED_BY_SPIKINGJELLY) for readout in LI_READOUTS),
}


def _importer_findings(column: str) -> Callable[[Subject, Spec], tuple[Known, ...]]:
    def known(subject: Subject, spec: Spec) -> tuple[Known, ...]:
        return tuple(entry for pattern, entry in IMPORTER_FINDINGS.get(column, ())
                     if fnmatch.fnmatchcase(subject.id, pattern))

    return known


_CAUSES = {"nir_export": "nir-export-failed", "nir_file": "nir-file-changed-graph",
           "nir_import": "nir-import-failed", "nir_run": "nir-run-failed", "nir_unsupported": "nir-graph-unsupported",
           "nir_reference": "nir-reference-failed"}


def _transform(name: str, fn: Callable[[Context], TransformRun], checks: tuple[str, ...], target: str | None,
               failure_cause: str) -> Transform:
    requires = ("nir", "nirtorch") + ((target,) if target else ())
    return Transform(name, fn, checks, failure_cause=failure_cause, devices=("cpu",), requires=requires,
                     stage_causes=_CAUSES, applies=_applies(target), known=_importer_findings(name))


TRANSFORMS = (
    _transform("nir_graph", nir_graph, ("nir_graph_matches_module",), None, "nir-reference-failed"),
    _transform("nir_roundtrip", _import_transform("nir_roundtrip", None), ("preserves_forward",), None,
               "nir-run-failed"),
    *(_transform(f"nir_to:{library}", _import_transform(f"nir_to:{library}", library), ("preserves_forward",),
                 library, "nir-run-failed") for library in IMPORTERS),
)


