"""What the benchmark times: sizes per spec family, the cases of a profile, and a subject/spec pair built on one input.

The input comes from the spec's own example strategy (with the subject's ``fixed`` conventions, so both sides
compute the same thing), drawn small by hypothesis and then grown to a benchmark size by tiling every tensor:
the values keep the distribution the strategy chose (spiking neurons spike at a fair rate, quantizers see every
level), only the shapes change. A grown example is never judged for correctness: the matrix does that.

>>> [size.name for size in sizes_for("layer.binary_linear", "full")]
['linear-256', 'linear-1024']
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import torch

from .. import registry
from ..core.strategies import stable_draws
from ..core.types import Example, Spec, Subject

MODES = ("forward", "forward+backward")
PROFILES = ("quick", "full")
#: Specs whose compiled (inductor) graph is timed against eager in the full profile: one per family, the cheap
#: ones (inductor takes 5-35 s per graph on a CPU).
COMPILED_SPECS = ("quant.sign_clipped_ste", "surrogate.atan", "layer.binary_linear", "neuron.leaky")
COMPILED_SUFFIX = "@inductor"


class Skip(Exception):
    """A case that cannot be measured here; the message is the reason shown in the table."""


@dataclass(frozen=True)
class Size:
    """One benchmark shape of a family. ``name`` is part of the entry id, so it never changes meaning."""

    name: str
    dims: Mapping[str, int]
    quick: bool = False


@dataclass(frozen=True)
class Family:
    """How the examples of a group of specs grow to a size, and the hyperparameters a benchmark prefers.

    ``hints`` are passed to the spec's example strategy under the subject's own ``fixed`` (which wins): a 3x3
    stride-1 convolution is what people run, a dilated 2x2 one with groups is what conformance needs.
    """

    grow: Callable[[Example, Mapping[str, int]], Example]
    sizes: tuple[Size, ...]
    hints: Mapping[str, object] = None  # type: ignore[assignment]


def tile(t: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """``t`` repeated along every axis and cut to ``shape``; extra leading axes are flattened, missing ones added.

    >>> tile(torch.tensor([[1., 2.], [3., 4.]]), (3, 3)).tolist()
    [[1.0, 2.0, 1.0], [3.0, 4.0, 3.0], [1.0, 2.0, 1.0]]
    """
    t = t.detach()
    if t.dim() == 0:
        return t.expand(shape).clone()
    while t.dim() > len(shape):
        t = t.flatten(0, 1)
    while t.dim() < len(shape):
        t = t.unsqueeze(0)
    reps = [math.ceil(want / have) for want, have in zip(shape, t.shape)]
    return t.repeat(reps)[tuple(slice(0, want) for want in shape)].clone()


def _grow_elementwise(ex: Example, d: Mapping[str, int]) -> Example:
    return Example(tile(ex.x, (d["B"], d["F"])), dict(ex.params), dict(ex.hyper))


def _grow_linear(ex: Example, d: Mapping[str, int]) -> Example:
    params = {"weight": tile(ex.params["weight"], (d["OUT"], d["IN"]))}
    if "bias" in ex.params:
        params["bias"] = tile(ex.params["bias"], (d["OUT"],))
    return Example(tile(ex.x, (d["B"], d["IN"])), params, dict(ex.hyper))


def _grow_conv(ex: Example, d: Mapping[str, int]) -> Example:
    c, k = d["C"], d["K"]
    params = dict(ex.params)
    params["weight"] = tile(ex.params["weight"], (c, c // ex.hyper.get("groups", 1), k, k))
    for name in ("bias", "bias_a"):
        if name in ex.params:
            params[name] = tile(ex.params[name], (c,))
    return Example(tile(ex.x, (d["B"], c, d["H"], d["H"])), params, dict(ex.hyper))


def _grow_matmul(ex: Example, d: Mapping[str, int]) -> Example:
    return Example(tile(ex.x, (d["B"], d["K"])), {"w": tile(ex.params["w"], (d["N"], d["K"]))}, dict(ex.hyper))


def _grow_pack(ex: Example, d: Mapping[str, int]) -> Example:
    shape = (d["B"], d["O"], d["L"]) if ex.hyper["dim"] == -1 else (d["B"], d["L"], d["O"])
    return Example(tile(ex.x, shape), {}, dict(ex.hyper))


def _grow_neuron(ex: Example, d: Mapping[str, int]) -> Example:
    shape = (d["T"], d["B"], d["N"]) if ex.hyper.get("time_dim", 0) == 0 else (d["B"], d["T"], d["N"])
    params = {name: tile(p, (d["N"],) * p.dim()) for name, p in ex.params.items()}
    return Example(tile(ex.x, shape), params, dict(ex.hyper))


_CONV_HINTS = {"stride": 1, "padding": 1, "dilation": 1}
FAMILIES: dict[str, Family] = {
    "elementwise": Family(_grow_elementwise, (
        Size("32x4096", {"B": 32, "F": 4096}, quick=True),
        Size("32x65536", {"B": 32, "F": 65536}))),
    "linear": Family(_grow_linear, (
        Size("linear-256", {"B": 32, "IN": 256, "OUT": 256}, quick=True),
        Size("linear-1024", {"B": 32, "IN": 1024, "OUT": 1024}))),
    "conv": Family(_grow_conv, (
        Size("conv-64ch-16x16-b8", {"B": 8, "C": 64, "H": 16, "K": 3}, quick=True),
        Size("conv-64ch-32x32", {"B": 32, "C": 64, "H": 32, "K": 3})), hints={**_CONV_HINTS, "groups": 1}),
    "bie_conv": Family(_grow_conv, (
        Size("conv-64ch-32x32", {"B": 32, "C": 64, "H": 32, "K": 3}),), hints=_CONV_HINTS),
    "matmul": Family(_grow_matmul, (
        Size("matmul-32x1024x1024", {"B": 32, "K": 1024, "N": 1024}),)),
    "pack": Family(_grow_pack, (
        Size("pack-32x64x1024", {"B": 32, "O": 64, "L": 1024}),)),
    "neuron": Family(_grow_neuron, (
        Size("lif-1024x50-b8", {"T": 50, "B": 8, "N": 1024}, quick=True),
        Size("lif-4096x50", {"T": 50, "B": 32, "N": 4096}))),
    # An all-to-all recurrence is an N x N matmul per step: 4096 neurons would time the matmul, not the neuron.
    "recurrent": Family(_grow_neuron, (
        Size("rlif-512x50-b8", {"T": 50, "B": 8, "N": 512}, quick=True),
        Size("rlif-1024x50", {"T": 50, "B": 32, "N": 1024}))),
}


def family_of(spec_id: str) -> str | None:
    """The size family of a spec, or None when no benchmark size is defined for it (e.g. opaque models)."""
    exact = {"layer.binary_linear": "linear", "layer.binary_conv2d": "conv", "layer.bie_binary_conv2d": "bie_conv",
             "packing.binary_matmul": "matmul", "packing.pack_signs": "pack",
             "neuron.rleaky": "recurrent", "neuron.rsynaptic": "recurrent"}
    if spec_id in exact:
        return exact[spec_id]
    if spec_id.startswith("neuron."):
        return "neuron"
    if spec_id.startswith(("quant.", "surrogate.")):
        return "elementwise"
    return None


def sizes_for(spec_id: str, profile: str) -> tuple[Size, ...]:
    family = family_of(spec_id)
    if family is None:
        return ()
    return tuple(s for s in FAMILIES[family].sizes if profile == "full" or s.quick)


# ----------------------------------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case:
    """One gated figure: ``subject`` timed against ``against`` ("spec" or "eager") at ``size`` in ``mode``."""

    subject: str
    size: str
    mode: str
    against: str = "spec"

    @property
    def id(self) -> str:
        return f"{self.subject}|{self.size}|{self.mode}"

    @property
    def compiled(self) -> bool:
        return self.subject.endswith(COMPILED_SUFFIX)

    @property
    def base_subject(self) -> str:
        return self.subject[: -len(COMPILED_SUFFIX)] if self.compiled else self.subject


def parse_id(case_id: str) -> Case:
    subject, size, mode = case_id.split("|")
    return Case(subject, size, mode, "eager" if subject.endswith(COMPILED_SUFFIX) else "spec")


def selected(subject_id: str, patterns: Iterable[str] | None) -> bool:
    """No patterns, or one equal to the id (ids hold brackets, which fnmatch reads as a set), or an fnmatch glob."""
    pats = list(patterns or ())
    return not pats or any(subject_id == p or fnmatch.fnmatchcase(subject_id, p) for p in pats)


def not_timed(subject: Subject, device: str) -> str | None:
    """Why ``subject`` is not timed on ``device`` (its ``not_applicable["benchmark:<device>"]``), or None. The
    kernels declare it for cpu, where they run in Triton's interpreter: a correctness path, not a speed."""
    return subject.not_applicable.get(f"benchmark:{device}")


def cases(profile: str, patterns: Iterable[str] | None = None, device: str = "cpu") -> list[Case]:
    """Every case of ``profile`` on ``device``: each library subject with a spec against its spec; in the full
    profile also the compiled specs against eager. The specs' own rows are not timed against themselves (the
    ratio is 1), nor subjects that declare they are not timed on ``device`` (:func:`not_timed`)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    out = []
    for sid, subject in registry.subjects().items():
        spec = registry.specs()[subject.spec]
        if subject.library == "reference" or spec.fn is None or not selected(sid, patterns) \
                or not_timed(subject, device):
            continue
        for size in sizes_for(subject.spec, profile):
            out += [Case(sid, size.name, mode) for mode in MODES if mode == "forward" or spec.differentiable]
    if profile == "full":
        for spec_id in COMPILED_SPECS:
            sid = f"reference.{spec_id}{COMPILED_SUFFIX}"
            if selected(sid, patterns):
                size = sizes_for(spec_id, profile)[0]
                out += [Case(sid, size.name, mode, "eager") for mode in MODES]
    return out


def describe(case: Case) -> dict:
    """The labels of a case for tables and the report: library, spec, against."""
    subject = registry.subjects().get(case.base_subject)
    library = "compiled" if case.compiled else (subject.library if subject else "unknown")
    return {"subject": case.subject, "library": library, "spec": subject.spec if subject else "unknown",
            "size": case.size, "mode": case.mode, "against": case.against}


# ----------------------------------------------------------------------------------------------------- building
def runnable(case: Case, device: str = "cpu") -> tuple[Subject, Spec]:
    """The subject and spec of ``case``, or :class:`Skip` with the reason it cannot run here (unknown subject,
    missing library, no CUDA, a device it does not claim)."""
    subject = registry.subjects().get(case.base_subject)
    if subject is None:
        raise Skip(f"unknown subject {case.base_subject!r}")
    spec = registry.specs()[subject.spec]
    missing = registry.missing_requirement(subject.requires)
    if missing:
        raise Skip(f"optional library {missing!r} is not installed")
    if device == "cuda" and not torch.cuda.is_available():
        raise Skip("no CUDA device on this machine")
    if device not in subject.devices:
        raise Skip(f"{subject.id} does not claim {device} support")
    return subject, spec


def draw_small_example(spec: Spec, fixed: Mapping[str, object]) -> Example:
    """A deterministic example of ``spec`` under ``fixed``: of the first few hypothesis draws, the largest (the
    very first draw is the simplest one hypothesis can make, often all zeros). The same in every process and on
    every commit: see :func:`conformance.core.strategies.stable_draws`."""
    from hypothesis import HealthCheck, given, settings

    found: list[Example] = []

    @settings(settings.get_profile("default"), max_examples=8, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(spec.examples(**fixed))
    def draw(example):
        found.append(example)

    with stable_draws():
        draw()
    return max(found, key=lambda ex: ex.x.numel())


def small_example(subject: Subject, spec: Spec) -> Example:
    """The example a case of ``subject`` grows: drawn once per process (the family's ``hints`` under the subject's
    ``fixed``), unless :func:`keep_small_example` gave it one; a re-registered subject draws again."""
    key = (subject.id, spec.id)
    if _SMALL.get(key, (None,))[0] is not subject:
        family = FAMILIES[family_of(spec.id)]
        hints = {k: v for k, v in (family.hints or {}).items() if k not in subject.fixed}
        _SMALL[key] = (subject, draw_small_example(spec, {**hints, **subject.fixed}))
    return _SMALL[key][1]


def keep_small_example(subject: Subject, spec: Spec, example: Example) -> None:
    """Use ``example`` as ``subject``'s small example in this process (one the session's first round drew,
    :mod:`conformance.bench.examples`)."""
    _SMALL[(subject.id, spec.id)] = (subject, example)


def example_for(subject: Subject, spec: Spec, size_name: str) -> Example:
    """The grown example of a case: fresh tensors on every call, grown from the same small example."""
    family_name = family_of(spec.id)
    if family_name is None:
        raise Skip(f"no benchmark size is defined for spec {spec.id}")
    family = FAMILIES[family_name]
    size = next((s for s in family.sizes if s.name == size_name), None)
    if size is None:
        raise Skip(f"size {size_name!r} is not defined for spec {spec.id}")
    return family.grow(small_example(subject, spec), size.dims)


_SMALL: dict[tuple[str, str], tuple[Subject, Example]] = {}


@dataclass
class Pair:
    """The two sides of a case as zero-argument steps: ``subject`` is measured, ``reference`` divides it."""

    subject: Callable[[], None]
    reference: Callable[[], None]


def build_pair(case: Case, device: str = "cpu", dtype: torch.dtype = torch.float32) -> Pair:
    """Build both modules on one grown example and return their steps; raises :class:`Skip` with the reason when
    the subject cannot be built or run here (missing library, no CUDA, a failure of its own)."""
    from ..subjects.reference import SpecModule
    from ..transforms import Context

    subject, spec = runnable(case, device)
    example = example_for(subject, spec, case.size)
    torch.manual_seed(0)
    try:
        reference = SpecModule(spec.fn, example.params, example.hyper).to(device=device, dtype=dtype)
        if case.compiled:
            measured: torch.nn.Module = torch.compile(SpecModule(spec.fn, example.params, example.hyper)
                                                      .to(device=device, dtype=dtype), backend="inductor")
            grad_names = tuple(example.params)
        else:
            measured = Context(subject, spec, example, dtype, torch.device(device)).build()
            grad_names = tuple(subject.param_map)
    except Exception as error:  # noqa: BLE001 - a library that cannot build is reported, not raised
        raise Skip(f"build failed: {type(error).__name__}: {error}"[:300]) from error
    x = example.x.to(device=device, dtype=dtype)
    subject_params = [measured.get_parameter(subject.param_map[n]) for n in grad_names] if not case.compiled \
        else [getattr(measured, n) for n in grad_names]
    spec_params = [getattr(reference, n) for n in grad_names]
    steps = [_step(module, x, params, case.mode)
             for module, params in ((measured, subject_params), (reference, spec_params))]
    try:
        shapes = [warm_up() for _, warm_up in steps]  # and compilation for a compiled case
    except Skip:
        raise
    except Exception as error:  # noqa: BLE001
        raise Skip(f"{case.mode} failed: {type(error).__name__}: {error}"[:300]) from error
    if shapes[0] != shapes[1]:
        raise Skip(f"output shape {shapes[0]} differs from the spec's {shapes[1]} on the grown example")
    return Pair(*(step for step, _ in steps))


def _step(module: torch.nn.Module, x: torch.Tensor, params: list[torch.Tensor],
          mode: str) -> tuple[Callable[[], None], Callable[[], tuple[int, ...]]]:
    """The timed call of one side, and its warm-up: the same computation once, returning the output's shape (the
    case's shape check; a forward+backward's cotangent is made to that shape on its first call)."""
    if mode == "forward":
        def forward() -> None:
            with torch.no_grad():
                module(x)

        def warm_up_forward() -> tuple[int, ...]:
            with torch.no_grad():
                return tuple(module(x).shape)

        return forward, warm_up_forward
    x = x.detach().clone().requires_grad_(True)
    inputs = [x] + [p for p in params if p.requires_grad]
    cotangent: list[torch.Tensor] = []

    def forward_backward() -> None:
        y = module(x)
        if not y.requires_grad:
            raise Skip("the output does not require grad: nothing to differentiate")
        if not cotangent:  # a fixed pseudo-random cotangent, made once, the same for both sides
            gen = torch.Generator().manual_seed(20240611)
            cotangent.append(torch.randn(y.shape, generator=gen).to(y.device, y.dtype))
        torch.autograd.grad(y, inputs, cotangent[0], allow_unused=True)

    def warm_up_forward_backward() -> tuple[int, ...]:
        forward_backward()
        return tuple(cotangent[0].shape)

    return forward_backward, warm_up_forward_backward
