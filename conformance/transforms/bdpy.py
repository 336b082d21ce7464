"""bdpy's ``FeatureExtractor`` (``bdpy.dl.torch``, bdpy 0.26) as a transform: feature extraction by forward hooks,
with an in-place op downstream of the subject (bdpy pull request 56, https://github.com/KamitaniLab/bdpy/pull/56, and
issue 16, https://github.com/KamitaniLab/bdpy/issues/16: hooks that keep a reference see the later in-place ReLU).

The encoder bdpy sees is a two-layer network, ``subject`` then an in-place op (``InplaceDownstream``, the
``ReLU(inplace=True)`` of that report); bdpy is asked for the features of the subject and of every submodule of it
that runs, listed in the order their forward hooks fire (bdpy pairs hook outputs with layer names by position, so
any other order would mislabel features by construction). Observer hooks registered before bdpy's record each
layer's output object and a copy of its value at capture time; after ``FeatureExtractor.run`` returns, each
feature bdpy hands back must be an output of the layer it is labelled with and still hold its capture-time value
(``hook_capture_intact``).

- ``detach=False`` (``FeatureExtractorHandle`` keeps ``module_out`` by reference): also judged by
  ``preserves_grad``, the gradient a user gets through the subject's feature (a loss on features, as feature
  inversion does) against the eager module's gradient.
- ``detach=True`` (``FeatureExtractorHandleDetach`` stores ``module_out.detach().clone()``, ``run`` returns NumPy
  arrays): the documented purpose is to cut the graph, so only the capture is judged.

bdpy is imported inside the transform; without it the cells are ``skip`` (``Transform.requires``).
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from ..core.causes import CheckFailed, TransformFailed
from ..core.types import Known, Library, Spec, Subject
from .harness import Context, HookCapture, Transform, TransformRun, build, eager, grad_or_zeros, stage
from .hooks import InplaceDownstream

#: where these transforms stand in the table (and the report's columns)
ORDER = 60
#: Installed without its declared dependencies (pandas, scikit-learn, hdf5storage, and torchvision for its torch
#: extra): ``import bdpy.dl.torch`` needs only these. Python < 3.12 only, so not on the GPU image.
BDPY = Library("bdpy", "bdpy", "0.26", no_deps=True, dependencies=("h5py", "pillow", "pyyaml", "scipy"), gpu=False)

#: bdpy has no 0.26 tag on GitHub; this commit's torch.py is byte-identical to the one in the 0.26 wheel.
SOURCE = "https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py"
SUBJECT_LAYER = "subject"

POSITIONAL_LINK = f"{SOURCE}#L89"  # features[layer] = outputs[i]
TUPLE_OUTPUT_LINK = f"{SOURCE}#L138"  # outputs.append(module_out.detach().clone())
BY_REFERENCE = ("FeatureExtractor(detach=False) keeps each hooked module_out by reference "
                "(FeatureExtractorHandle.outputs.append(module_out)); the in-place op after the subject (bdpy issue "
                "16's ReLU(inplace=True)) overwrites the subject's feature before run() returns")
GRAD_THROUGH_OVERWRITTEN = ("FeatureExtractor(detach=False) returns the subject's output tensor itself, which the "
                            "in-place op downstream has turned into 2*y+1: a loss on that feature back-propagates "
                            "through the in-place op, giving twice the eager gradient")
TUPLE_OUTPUT = ("FeatureExtractorHandleDetach calls module_out.detach().clone() on every hooked output; a submodule "
                "returning a tuple (a norse cell's (spikes, state)) makes the hook raise AttributeError inside forward")
POSITIONAL = ("run() pairs hook outputs with layer names by position (features[layer] = outputs[i]), so a layer that "
              "runs more than once per forward (a cell stepped over T > 1 time steps) shifts every later feature: the "
              "subject's feature is then the cell's second output. With T = 1 the by-reference finding "
              "shows instead (the subject's feature overwritten in place, twice the gradient): which one a cell "
              "reports depends on the drawn T")


#: bdpy's findings on every subject with a floating-point output (they are bdpy's, not the subject's): ``detach=False``
#: hands back the subject's output by reference, and the in-place op downstream overwrites it.
BY_REFERENCE_KNOWN = (
    Known("bdpy_features", "hook_capture_intact", cause="hook-capture-mutated", reason=BY_REFERENCE,
          link=f"{SOURCE}#L123", reproducer="reproducers/bdpy/feature_extractor_keeps_output_by_reference.py"),
    Known("bdpy_features", "preserves_grad", cause="transform-changed-grad", reason=GRAD_THROUGH_OVERWRITTEN,
          link=f"{SOURCE}#L123",
          reproducer="reproducers/bdpy/feature_extractor_grad_through_overwritten_feature.py"),
)


def known_failures(subject: Subject, spec: Spec) -> tuple[Known, ...]:
    """The by-reference finding, on every subject of a spec with a gradient: their outputs are floating point. Of the
    specs without one, bit packing returns integer words, which the in-place op downstream leaves alone; one declared
    with a floating-point output (a quantized inference layer) has its feature overwritten all the same. A subject
    whose features bdpy handles otherwise (tuple outputs, a cell stepped over time) declares its own entries, which
    come first."""
    if spec.differentiable:
        return BY_REFERENCE_KNOWN
    floating = spec.output_dtype is not None and spec.output_dtype.is_floating_point
    return BY_REFERENCE_KNOWN[:1] if floating else ()


def known_tuple_output() -> tuple[Known, ...]:
    """bdpy on a subject one of whose submodules returns a tuple: the detaching hook raises inside forward."""
    return (Known("bdpy_features_detach", "hook_capture_intact", cause="forward-raised", reason=TUPLE_OUTPUT,
                  link=TUPLE_OUTPUT_LINK, reproducer="reproducers/bdpy/feature_extractor_detach_tuple_output.py"),)


def known_stepped(*, tuple_output: bool) -> tuple[Known, ...]:
    """bdpy on a subject that steps a neuron module over time (called T times per forward): positional pairing
    mislabels features when T > 1, and ``detach=False`` overwrites the subject's feature when T = 1, so the cause of
    a ``bdpy_features`` cell depends on the drawn T (no cause is pinned)."""
    detached = known_tuple_output() if tuple_output else (
        Known("bdpy_features_detach", "hook_capture_intact", cause="hook-capture-mislabelled", reason=POSITIONAL,
              link=POSITIONAL_LINK, reproducer="reproducers/bdpy/feature_extractor_positional_pairing.py"),)
    return (Known("bdpy_features", "*", reason=POSITIONAL, link=POSITIONAL_LINK,
                  reproducer="reproducers/bdpy/feature_extractor_positional_pairing.py"), *detached)


class FeatureNetwork(nn.Module):
    """The encoder handed to bdpy: the subject, then an in-place op on its output (the next layer of a network)."""

    def __init__(self, subject: nn.Module):
        super().__init__()
        self.subject = subject
        self.downstream = InplaceDownstream()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.downstream(self.subject(x))


def _copy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return tuple(_copy(v) for v in value)
    return value


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        a, b = a.detach().cpu(), b.detach().cpu()
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, rtol=0, atol=0,
                                                                                   equal_nan=True)))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return a is b or a == b


def _as_tensor(feature: Any) -> Any:
    """bdpy's ``detach=True`` returns NumPy arrays: back to tensors for comparison."""
    if type(feature).__module__ == "numpy":
        return torch.from_numpy(feature)
    return feature


def _observe(layers: dict[str, nn.Module], record: Callable[[str, Any], None]) -> list:
    def hook(name: str):
        return lambda _module, _inputs, output: record(name, output)

    return [module.register_forward_hook(hook(name)) for name, module in layers.items()]


def _remove_hooks_added(before: dict[nn.Module, set[int]]) -> None:
    """Remove the forward hooks added since ``before`` (module -> hook ids). bdpy removes its hooks only in
    ``FeatureExtractor.__del__``, which a forward that raised delays while the traceback keeps the extractor alive;
    a hook left on a submodule another module shares (brevitas shares its stateless quantizer parts between layers)
    would otherwise run inside later cells and keep their tensors."""
    for module, ids in before.items():
        for key in set(module._forward_hooks) - ids:
            for table in (module._forward_hooks, getattr(module, "_forward_hooks_with_kwargs", {}),
                          getattr(module, "_forward_hooks_always_called", {})):
                table.pop(key, None)


def layers_in_hook_order(ctx: Context) -> list[str]:
    """Names (in the FeatureNetwork) of the subject and its submodules, in the order their forward hooks first fire
    during one forward of a fresh subject; modules that never run are left out (no user extracts them)."""
    network = FeatureNetwork(build(ctx))
    modules = {f"{SUBJECT_LAYER}.{n}" if n else SUBJECT_LAYER: m for n, m in network.subject.named_modules()}
    order: list[str] = []
    handles = _observe(modules, lambda name, _out: order.append(name) if name not in order else None)
    try:
        with stage("forward"), torch.no_grad():
            network(ctx.input())
    finally:
        for h in handles:
            h.remove()
    return order


def judge_features(features: dict[str, Any], observed: dict[str, list[tuple[Any, Any]]], *,
                   by_reference: bool) -> dict[str, list[str]]:
    """What is wrong with the features bdpy returned, per layer: ``mislabelled`` when the feature is not an output of
    that layer (not the same object when kept by reference, equal to none of its capture-time values when
    detached), ``mutated`` when it is, but no longer holds its capture-time value."""
    found: dict[str, list[str]] = {"mutated": [], "mislabelled": []}
    for name, calls in observed.items():
        feature = _as_tensor(features.get(name))
        if by_reference:
            match = next(((ref, value) for ref, value in calls if feature is ref), None)
            if match is None:
                found["mislabelled"].append(name)
            elif not _same_value(match[0], match[1]):
                found["mutated"].append(name)
        elif not any(_same_value(feature, value) for _ref, value in calls):
            found["mislabelled"].append(name)
    return found


def _features_transform(detach: bool) -> Callable[[Context], TransformRun]:
    name = "bdpy_features_detach" if detach else "bdpy_features"

    def transform(ctx: Context) -> TransformRun:
        from bdpy.dl.torch import FeatureExtractor

        layers = layers_in_hook_order(ctx)
        module = build(ctx)
        network = FeatureNetwork(module)
        observed: dict[str, list[tuple[Any, Any]]] = {n: [] for n in layers}
        handles = _observe({n: network.get_submodule(n) for n in layers},
                           lambda n, out: observed[n].append((out, _copy(out))))
        want_grad = ctx.differentiable and not detach
        x = ctx.input().detach().clone().requires_grad_(want_grad)
        hooks_before = {m: set(m._forward_hooks) for m in network.modules()}
        try:
            with stage("bdpy"):
                extractor = FeatureExtractor(network, layers, device=str(ctx.device), detach=detach)
            with stage("forward"):
                features = extractor(x)
            del extractor  # bdpy's __del__ removes its hooks
        finally:
            for h in handles:
                h.remove()
            _remove_hooks_added(hooks_before)
        capture = HookCapture(captured=list(layers), read_at="FeatureExtractor.run returned",
                              **judge_features(features, observed, by_reference=not detach))
        result = TransformRun()
        result.findings.hooks = capture
        if want_grad:
            try:
                result = _gradient_through(ctx, module, x, features, capture)
            except TransformFailed as failure:
                result.findings.failure = failure
        return result

    transform.__name__ = name
    transform.__doc__ = (f"bdpy FeatureExtractor(detach={detach}) with an in-place op downstream: every feature it "
                         "returns is its layer's output at capture time"
                         + ("." if detach else ", and gradients through the subject's feature are the eager ones."))
    return transform


def _gradient_through(ctx: Context, module: nn.Module, x: torch.Tensor, features: dict[str, Any],
                      capture: HookCapture) -> TransformRun:
    """Input and parameter gradients of <cotangent, subject's feature>, as a loss on features gives them."""
    feature = features.get(SUBJECT_LAYER)
    if SUBJECT_LAYER in capture.mislabelled or not isinstance(feature, torch.Tensor):
        raise TransformFailed("forward", CheckFailed(
            "hook-capture-mislabelled", f"the feature bdpy returned for {SUBJECT_LAYER!r} is not the subject's "
            f"output ({type(feature).__name__}): no gradient through it to compare"))
    params = ctx.spec_params(module)
    for p in params.values():
        p.grad = None
    with stage("backward"):
        if feature.requires_grad:
            (feature * ctx.cotangent(feature)).sum().backward()
    grads = {"x": grad_or_zeros(x), **{n: grad_or_zeros(p) for n, p in params.items()}}
    result = TransformRun(y=feature.detach(), grads=grads, against=eager(ctx))
    result.findings.hooks = capture
    return result


bdpy_features = _features_transform(detach=False)
bdpy_features_detach = _features_transform(detach=True)

TRANSFORMS = (
    Transform("bdpy_features", bdpy_features, ("hook_capture_intact", "preserves_grad"), requires=(BDPY.name,),
              known=known_failures),
    Transform("bdpy_features_detach", bdpy_features_detach, ("hook_capture_intact",), requires=(BDPY.name,)),
)
