"""The taxonomy of failure causes: a named class of failure instead of a raw traceback.

A check that detects a property violation raises :class:`CheckFailed` with its cause. Anything else a cell
raises (a library error inside a transform) is classified by :func:`classify` from its type and message; the
raw message always stays attached to the record.
"""

from __future__ import annotations

import re
from typing import Mapping

#: cause -> one-line explanation shown in the report legend.
CAUSES: dict[str, str] = {
    "forward-mismatch": "output differs from the spec beyond tolerance",
    "grad-mismatch": "a gradient (input or parameter) differs from the spec's formula beyond tolerance",
    "transform-changed-forward": "the transformed module's output differs from the eager module's",
    "transform-changed-grad": "the transformed module's gradients differ from the eager module's",
    "dtype-mismatch": "output dtype differs from the declared one",
    "nondeterministic": "the same input and reset state gave different outputs",
    "copy-shares-state": "a copy shares tensors with the original (mutating one changes the other)",
    "copy-lost-state": "a copy (deepcopy, pickle, state_dict) taken in the middle of a sequence does not continue it "
                       "as its original does: the state held then (a membrane) did not travel with it",
    "copy-changed-original": "taking a copy in the middle of a sequence changed what the original computes next",
    "state-leak": "a transform left foreign tensors (batched, tracer, fake, functional) or changed values in the module",
    "state-changed-in-eval": "a forward in eval mode changed a parameter or buffer (running statistics, an "
                             "observer's range) that eval mode leaves as it is",
    "mode-not-propagated": "eval(), train(False) or train() left a submodule in the other mode",
    "batch-coupled": "a sample's output depends on the other samples of its batch (batch statistics): the module on "
                     "the whole batch differs from each sample run alone, so vmap over samples and per-sample "
                     "gradients compute something else",
    "state-advanced-twice": "recomputation (checkpoint) advanced the module's state a second time",
    "state-lost-between-calls": "fed one time step per call, the module agrees on the first call and parts later: "
                                "the state it carries from call to call is lost, reset, frozen or not its own",
    "input-modified": "the module changed the caller's input in place (the previous layer's output, which a "
                      "residual connection or the caller may still read)",
    "output-aliases-state": "a tensor the module returned is its own state: an in-place op on it changes what the "
                            "next call computes",
    "reset-failed": "the method a user resets the module with between sequences raised",
    "hook-capture-mutated": "a tensor captured by a forward hook was overwritten in place later in the forward",
    "hook-capture-mislabelled": "a feature extractor returned, for a layer, a tensor that is not that layer's output "
                                "(e.g. hook outputs paired with layer names by position)",
    "hook-graph-cut": "a tensor captured by a forward hook is cut from the autograd graph",
    "inplace-modified-saved-tensor": "an in-place op downstream modified a tensor autograd saved for backward",
    "graph-break": "torch.compile broke the graph (fullgraph=True fails)",
    "autograd-function-without-setup_context": "a custom autograd.Function lacks setup_context, required by torch.func",
    "autograd-function-no-vmap-rule": "a custom autograd.Function has no vmap rule (generate_vmap_rule or vmap staticmethod)",
    "autograd-function-no-jvp": "a custom autograd.Function defines no jvp (forward-mode AD)",
    "data-dependent-item": "a .item()/Python bool on tensor data inside a traced or vmapped region",
    "deepcopy-failed": "copy.deepcopy raised",
    "deepcopy-getattr-recursion": "deepcopy/pickle recursed through a __getattr__ that delegates to a missing attribute",
    "deepcopy-non-leaf": "deepcopy of a module holding non-leaf tensors (state left by a forward pass)",
    "pickle-failed": "pickle raised (closures, lambdas, local classes or unpicklable state)",
    "module-method-returned-other": "a chaining nn.Module method (eval, train, to, float, ...) returned another "
                                    "object than the module itself",
    "module-method-failed": "a chaining nn.Module method (eval, train, to, float, ...) raised",
    "module-shared-between-builds": "two separately built modules hold one instance of a submodule: a hook, "
                                    "attribute or mode set on one reaches the other",
    "tensor-shared-between-builds": "two separately built modules hold the same memory under a parameter, buffer "
                                    "or tensor attribute: an in-place change to one (load_state_dict too) changes the "
                                    "other",
    "object-shared-between-builds": "two separately built modules hold one mutable object (not a module or tensor) "
                                    "as an attribute: setting a field on one changes the other",
    "state-dict-mismatch": "load_state_dict into a fresh instance failed or did not restore the outputs",
    "weights-only-load-failed": "torch.load(weights_only=True), torch's default, refused the saved state_dict (an "
                                "object outside its allowed globals)",
    "assign-not-loaded": "after load_state_dict(assign=True) a parameter or buffer is not the loaded tensor, or a "
                         "Parameter became a plain tensor or changed requires_grad",
    "safetensors-refused": "safetensors refused to save or load the state_dict (shared memory, a non-contiguous "
                           "tensor, a tensor subclass or a non-tensor entry)",
    "conversion-failed": "a dtype conversion of the module (.double(), .half()) raised",
    "conversion-incomplete": "after a dtype conversion (.double(), .half()) a floating-point tensor the module holds "
                             "(parameter, buffer, plain attribute, in a list or dict) kept its old dtype",
    "strided-input-failed": "the module raised on its input given as a strided (non-contiguous) view",
    "functional-call-failed": "torch.func.functional_call raised",
    "vmap-unsupported": "torch.func.vmap raised",
    "jvp-unsupported": "forward-mode AD raised",
    "per-sample-grad-failed": "per-sample gradients raised",
    "opacus-failed": "Opacus GradSampleModule raised",
    "jit-unsupported": "TorchScript could not script/trace the module",
    "onnx-export-failed": "torch.onnx.export (dynamo=True) raised on the module",
    "onnx-run-failed": "onnxruntime refused or raised on the exported model",
    "nir-export-failed": "the library's NIR exporter raised on the module",
    "nir-file-changed-graph": "nir.write + nir.read raised or gave back a graph other than the one written",
    "nir-import-failed": "the importing library's NIR importer raised on the graph",
    "nir-run-failed": "the network imported from NIR raised when run",
    "nir-graph-unsupported": "the exported graph holds a node or a shape the reference semantics do not define",
    "nir-reference-failed": "running the exported graph by NIR's declared semantics raised",
    "nir-graph-changed-forward": "the exported NIR graph, run by NIR's declared semantics at the exporter's dt, "
                                 "computes other than the module (a parameter in another unit, a dropped reset)",
    "export-failed": "torch.export raised",
    "compile-failed": "torch.compile raised (not a graph break)",
    "build-failed": "the subject could not be built for a drawn example",
    "parameter-not-trainable": "a parameter the subject declares trainable is a buffer, a plain attribute or missing "
                               "in the built module: the gradient the spec defines for it cannot flow",
    "forward-raised": "the forward pass raised",
    "backward-raised": "the backward pass raised",
    "raised-KeyboardInterrupt": "the subject's code raised KeyboardInterrupt though no interrupt signal came: it "
                                "would stop its user's program",
    "raised-SystemExit": "the subject's code raised SystemExit (sys.exit): it would end its user's program",
    "timeout": "the cell ran past its time limit",
    "crash": "the worker process died while running the cell",
    "harness-error": "a bug in the conformance framework itself (please report it), not a finding",
    "error": "an unclassified exception",
}


class CheckFailed(AssertionError):
    """A check found its property violated. Carries the cause and the numbers the report shows."""

    def __init__(self, cause: str, message: str, *, max_abs_err: float | None = None,
                 max_rel_err: float | None = None, atol: float | None = None, rtol: float | None = None,
                 first_step: int | None = None):
        if cause not in CAUSES and not cause.startswith("graph-break:"):
            raise ValueError(f"unknown cause {cause!r}; add it to conformance.core.causes.CAUSES")
        super().__init__(f"[{cause}] {message}")
        self.cause = cause
        self.message = message
        self.max_abs_err = max_abs_err
        self.max_rel_err = max_rel_err
        self.atol = atol
        self.rtol = rtol
        #: the earliest time step (of a sequence) where the comparison failed, when it compared sequences
        self.first_step = first_step
        #: further findings of the same check on the same example (another gradient that differs too), recorded as
        #: the cell's ``also``
        self.also: list[CheckFailed] = []


class TransformFailed(Exception):
    """A transform raised; ``stage`` names the transform so classification has a fallback cause."""

    def __init__(self, stage: str, error: BaseException):
        super().__init__(f"{stage}: {type(error).__name__}: {error}")
        self.stage = stage
        self.error = error
        self.process_leaks: list[str] = []  # process-wide state it left behind (conformance.core.isolation)
        #: what it left in the module(s) it was transforming (foreign tensors, changed values), found after it raised
        self.left_in_module: list[str] = []


class ProgramStopRaised(Exception):
    """The subject's code raised KeyboardInterrupt (with no SIGINT received) or SystemExit: an ordinary exception
    carrying it, so neither hypothesis nor pytest takes it as a request to stop (conformance.runner)."""

    def __init__(self, raised: KeyboardInterrupt | SystemExit):
        kind = "KeyboardInterrupt" if isinstance(raised, KeyboardInterrupt) else "SystemExit"
        super().__init__(f"the subject's code raised {type(raised).__name__}({str(raised)!r})")
        self.cause = f"raised-{kind}"
        self.raised = raised
        self.__cause__ = raised  # the record's trace shows where it was raised


# (pattern over "ExceptionType: message", cause), first match wins.
_RULES: list[tuple[re.Pattern, str]] = [
    (re.compile(r"must override the setup_context staticmethod"), "autograd-function-without-setup_context"),
    (re.compile(r"vmap.*autograd\.Function|generate_vmap_rule|vmap staticmethod"), "autograd-function-no-vmap-rule"),
    (re.compile(r"jvp.*(not implemented|must override)|forward AD.*autograd\.Function", re.I),
     "autograd-function-no-jvp"),
    (re.compile(r"Trying to call aten::_local_scalar_dense|item\(\)|Tensor\.item|data-dependent|"
                r"Data dependent|GuardOnDataDependentSymNode|vmap: It looks like you're calling \.item",
                re.I), "data-dependent-item"),
    (re.compile(r"RecursionError.*__getattr__|KeyError: '_layer_implementation'|maximum recursion depth", re.S),
     "deepcopy-getattr-recursion"),
    (re.compile(r"Only Tensors created explicitly by the user .* support the deepcopy protocol"),
     "deepcopy-non-leaf"),
    (re.compile(r"modified by an inplace operation"), "inplace-modified-saved-tensor"),
    (re.compile(r"Can't (pickle|get local object)|cannot pickle|PicklingError|Can't get attribute"),
     "pickle-failed"),
    (re.compile(r"Unsupported: |graph break|torch\._dynamo\.exc\.Unsupported", re.I), "graph-break"),
    (re.compile(r"torch\.jit\.frontend|NotSupportedError|torch\.jit|TorchScript|Module 'SpecModule'|"
                r"Python builtin .* is currently not supported in Torchscript|Tried to trace"),
     "jit-unsupported"),
]

#: The cause of a failure in one of the generic stages every transform has, when no rule names it; a transform
#: declares the causes of its own stages (``Transform.failure_cause``, ``Transform.stage_causes``).
GENERIC_STAGE_CAUSES = {"build": "build-failed", "forward": "forward-raised", "backward": "backward-raised",
                       "reset": "reset-failed", "parameters": "parameter-not-trainable"}


def classify(error: BaseException, stage_causes: Mapping[str, str] | None = None, *, stage: str | None = None) -> str:
    """The cause of an exception raised inside a cell: a check's own cause, a rule over the message, else the cause
    of the stage that raised (``stage_causes``, then the generic stages), else ``error``."""
    if isinstance(error, CheckFailed):
        return error.cause
    if isinstance(error, TransformFailed):
        return classify(error.error, stage_causes, stage=error.stage)
    if isinstance(error, ProgramStopRaised):
        return error.cause
    text = _flatten(error)
    for pattern, cause in _RULES:
        if pattern.search(text):
            if cause == "graph-break":
                return "graph-break:" + graph_break_reason(text)
            if cause == "jit-unsupported" and stage not in (None, "jit_script", "jit_trace"):
                continue
            return cause
    return {**GENERIC_STAGE_CAUSES, **(stage_causes or {})}.get(stage or "", "error")


def _flatten(error: BaseException) -> str:
    """Type and message of the exception and its causes/contexts (libraries often re-raise)."""
    parts, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        parts.append(f"{type(error).__name__}: {error}")
        error = error.__cause__ or error.__context__
    return "\n".join(parts)


def graph_break_reason(text: str) -> str:
    """A short, stable reason slug from dynamo's message (the full message stays in the record)."""
    for pattern in (r"Explanation: ([^\n]+)", r"Unsupported: ([^\n]+)", r"graph break[^:]*: ([^\n]+)"):
        found = re.search(pattern, text)
        if found:
            reason = found.group(1)
            break
    else:
        reason = text.splitlines()[0]
    reason = re.sub(r"0x[0-9a-f]+|\d+", "N", reason)
    reason = re.sub(r"[^A-Za-z0-9_.()<> -]+", " ", reason).strip()
    return reason[:80].strip() or "unknown"
