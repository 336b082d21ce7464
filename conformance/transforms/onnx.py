"""Across frameworks through ONNX: the module exported and run in onnxruntime computes what the module computes.

- ``onnx``: torch's exporter (``torch.onnx.export(..., dynamo=True)``, through torch.export), for the quantized ops,
  layers and models and the spiking neurons and spike functions (the specs ``quant.*``, ``layer.*``, ``packing.*``,
  ``model.*``, ``neuron.*``, ``surrogate.*``). A neuron is exported as one call over the whole sequence from rest:
  an ONNX graph keeps no state between runs, so a neuron its users step one call at a time is exported through the
  one-call view (its own steps in a loop), which torch.export unrolls.
- ``brevitas_qcdq``: brevitas' own export to ONNX's QuantizeLinear/Clip/DequantizeLinear form
  (``brevitas.export.export_onnx_qcdq``), for brevitas' layers.
- ``brevitas_qonnx``: brevitas' export to QONNX (``brevitas.export.export_qonnx``: Quant, BipolarQuant, Trunc), run
  by qonnx's executor (``qonnx.core.onnx_exec.execute_onnx``), for brevitas' layers.

float32 on the CPU, inference only (``preserves_forward``), with the tolerance of onnxruntime's own summation order
(core/tolerance.py). An export costs about a second, so the cells take the compiling transforms' fewer examples.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import tempfile
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from ..core.types import Known, Library, Spec, Subject
from .harness import Context, Transform, TransformRun, build, eager, stage

#: where these transforms stand in the table (and the report's columns)
ORDER = 85
#: the spec families whose subjects are exported (spiking networks also go through NIR, transforms/nir.py)
FAMILIES = ("quant.", "layer.", "packing.", "model.", "neuron.", "surrogate.")

#: installed without dependencies (onnx would pull a newer protobuf, onnxscript a newer onnx-ir); what they import is
#: listed and pinned in constraints.txt
ONNX = Library("onnx", "onnx", "1.23.2", no_deps=True, dependencies=("protobuf", "ml_dtypes"), gpu=False)
ONNXRUNTIME = Library("onnxruntime", "onnxruntime", "1.31.1", no_deps=True,
                      dependencies=("flatbuffers", "protobuf", "packaging"), gpu=False)
ONNXSCRIPT = Library("onnxscript", "onnxscript", "0.7.2", no_deps=True, dependencies=("onnx-ir", "ml_dtypes"),
                     gpu=False)
#: brevitas' export manager refuses to run without it
ONNXOPTIMIZER = Library("onnxoptimizer", "onnxoptimizer", "0.4.2", no_deps=True, gpu=False)
#: runs QONNX graphs (its Quant/BipolarQuant/Trunc ops in Python, every standard node in onnxruntime); without
#: dependencies (it would pull another onnx), what it imports pinned in constraints.txt
QONNX = Library("qonnx", "qonnx", "1.0.0", no_deps=True,
                dependencies=("attrs", "bitstring", "clize", "sigtools", "toposort"), gpu=False)


def session(model: bytes):
    """An onnxruntime session on the CPU with one thread (the matrix's workers each hold one core)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def run_session(model: bytes, x: torch.Tensor) -> torch.Tensor:
    runner = session(model)
    (out, *_) = runner.run(None, {runner.get_inputs()[0].name: x.detach().cpu().numpy()})
    return torch.from_numpy(out)


def run_qonnx(model: bytes, x: torch.Tensor) -> torch.Tensor:
    """A QONNX model run by qonnx's executor (node by node: its own ops in Python, standard ones in onnxruntime)."""
    import onnx
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    wrapper = ModelWrapper(onnx.load_from_string(model))
    outputs = execute_onnx(wrapper, {wrapper.graph.input[0].name: x.detach().cpu().numpy()})
    return torch.from_numpy(outputs[wrapper.graph.output[0].name])


def exported_run(ctx: Context, export: Callable[[nn.Module, torch.Tensor], bytes],
                 run: Callable[[bytes, torch.Tensor], torch.Tensor] = run_session) -> TransformRun:
    """The subject (in evaluation mode) exported by ``export(module, x) -> serialized model`` and run by ``run``
    (onnxruntime by default), against the eager module."""
    module = build(ctx).eval()
    x = ctx.input().detach()
    with stage("onnx_export"), torch.no_grad():
        model = export(module, x)
    with stage("onnx_run"):
        y = run(model, x)
    result = TransformRun(y=y.to(x.dtype))
    # an export is of the evaluation-mode module: judged against the eager module in evaluation mode (a layer whose
    # training-mode forward differs, e.g. brevitas' scales from the batch's statistics, is not the export's subject)
    result.against = eager(ctx, build(ctx).eval())
    return result


def keep_torchlib_ops() -> None:
    """Remember onnxscript's list of torchlib functions for the life of the process.

    ``torch.onnx.export(dynamo=True)`` builds its op registry on every call from ``get_torchlib_ops()``, which parses
    the source of each of onnxscript's ~500 functions again (0.7-1.9 s of every export here). The list depends only on
    onnxscript's code, imported once per process; each export still builds its own registry from it. Where torch or
    onnxscript lay this out differently, nothing is changed."""
    try:
        from torch.onnx._internal._lazy_import import onnxscript_apis

        module = importlib.import_module(onnxscript_apis._name)
        original = module.get_torchlib_ops
    except (ImportError, AttributeError):
        return
    if getattr(original, "kept_by_conformance", False):
        return
    remembered = functools.cache(original)

    def get_torchlib_ops():
        return list(remembered())

    get_torchlib_ops.kept_by_conformance = True
    get_torchlib_ops.original = original
    module.get_torchlib_ops = get_torchlib_ops


def onnx(ctx: Context) -> TransformRun:
    """Exported with torch.onnx.export(dynamo=True) and run in onnxruntime: the output equals the module's."""
    keep_torchlib_ops()
    return exported_run(ctx, lambda module, x: torch.onnx.export(module, (x,), dynamo=True, verbose=False)
                        .model_proto.SerializeToString())


def _through_file(write: Callable[[str], None]) -> bytes:
    """The model ``write(path)`` writes (brevitas' exporters write files), as bytes."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.onnx"
        write(str(path))
        return path.read_bytes()


def _qcdq_export(module: nn.Module, x: torch.Tensor) -> bytes:
    from brevitas.export import export_onnx_qcdq

    return _through_file(lambda path: export_onnx_qcdq(module, args=x, export_path=path, optimize=True))


def brevitas_qcdq(ctx: Context) -> TransformRun:
    """Exported by brevitas' export_onnx_qcdq (QuantizeLinear/Clip/DequantizeLinear) and run in onnxruntime: the
    output equals the layer's."""
    return exported_run(ctx, _qcdq_export)


def _qonnx_export(module: nn.Module, x: torch.Tensor) -> bytes:
    from brevitas.export import export_qonnx

    return _through_file(lambda path: export_qonnx(module, args=x, export_path=path))


def brevitas_qonnx(ctx: Context) -> TransformRun:
    """Exported by brevitas' export_qonnx (QONNX's Quant/BipolarQuant operators) and run by qonnx's executor: the
    output equals the layer's."""
    return exported_run(ctx, _qonnx_export, run_qonnx)


def _applies(subject: Subject, spec: Spec) -> str | None:
    if not spec.id.startswith(FAMILIES):
        return f"{spec.id} is in none of the exported spec families ({', '.join(f + '*' for f in FAMILIES)})"
    return None


def _brevitas_only(subject: Subject, spec: Spec) -> str | None:
    return None if subject.library == "brevitas" else "brevitas' own exporter: brevitas' layers only"


#: qonnx's finding, on the brevitas layers whose QONNX graphs hold a standard node (QuantReLU's Relu, the layers'
#: MatMul/Conv); graphs of QONNX's own operators alone run
QONNX_STANDARD_NODES = Known(
    "brevitas_qonnx", cause="onnx-run-failed",
    link="https://github.com/fastmachinelearning/qonnx/blob/main/src/qonnx/util/basic.py",
    reason="qonnx's executor runs each standard ONNX node in onnxruntime through a one-node model made at onnx's own "
           "IR version (14 with onnx 1.23), which onnxruntime 1.31 refuses ('Unsupported model IR version: 14, max "
           "supported IR version: 13'), whatever IR the exported model has (brevitas writes 10)",
    reproducer="reproducers/qonnx/executor_node_model_ir_version.py")
_WITH_STANDARD_NODES = ("brevitas.QuantReLU*", "brevitas.QuantLinear*", "brevitas.QuantConv2d*")


def _qonnx_findings(subject: Subject, spec: Spec) -> tuple[Known, ...]:
    return (QONNX_STANDARD_NODES,) if any(fnmatch.fnmatchcase(subject.id, p) for p in _WITH_STANDARD_NODES) else ()


_CAUSES = {"onnx_export": "onnx-export-failed", "onnx_run": "onnx-run-failed"}
TRANSFORMS = (
    Transform("onnx", onnx, ("preserves_forward",), failure_cause="onnx-run-failed", devices=("cpu",),
              requires=("onnx", "onnxruntime", "onnxscript"), compiles=True, costly=True, applies=_applies,
              stage_causes=_CAUSES),
    Transform("brevitas_qcdq", brevitas_qcdq, ("preserves_forward",), failure_cause="onnx-run-failed",
              devices=("cpu",), requires=("brevitas", "onnx", "onnxruntime", "onnxscript", "onnxoptimizer"),
              compiles=True, costly=True, applies=_brevitas_only, stage_causes=_CAUSES),
    Transform("brevitas_qonnx", brevitas_qonnx, ("preserves_forward",), failure_cause="onnx-run-failed",
              devices=("cpu",), requires=("brevitas", "onnx", "onnxruntime", "onnxscript", "onnxoptimizer", "qonnx"),
              compiles=True, costly=True, applies=_brevitas_only, stage_causes=_CAUSES, known=_qonnx_findings),
)
