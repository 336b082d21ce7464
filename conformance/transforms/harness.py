"""The harness every transform is written with: the context of one example, what a transform run produces
(``TransformRun``, with typed ``Findings`` for the checks that need more than tensors), stages that name what
raised, forward+backward, and the module-state helpers (what a module holds, what a transform left in it).

A transform is a function ``Context -> TransformRun`` declared as a :class:`Transform` in one module of this
package (see ``conformance/transforms/__init__.py``); it knows nothing about particular subjects.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import torch
from torch import nn

from ..core.causes import TransformFailed
from ..core.types import Example, Known, Spec, Subject

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
FORWARD_GRAD = ("preserves_forward", "preserves_grad")


# --------------------------------------------------------------------------------------------- context


@dataclass
class Context:
    """Everything a transform may use for one example of one cell."""

    subject: Subject
    spec: Spec
    example: Example  # float64 CPU, already rounded through the cell dtype
    dtype: torch.dtype
    device: torch.device
    #: drive the subject through its call protocol (set by the runner for a transform that yields a module, when
    #: the subject's state persists between calls): ``build`` makes the module a user holds, ``drive`` feeds it
    persistent: bool = False
    #: the modules a transform watches (``watch``) with their state before it: after the transform raises, the
    #: runner still reports what the failure left in them
    watched: list = field(default_factory=list)
    #: every module ``build`` makes has been used once (``after_use``: a forward and a backward), the transform's
    #: and its eager reference's alike (the ``*_used`` transforms)
    used: bool = False

    def watch(self, module: nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, bool]]:
        """The module's state before the transform (``watch_state``), remembered for the case that it raises."""
        before = watch_state(module)
        self.watched.append((module, before))
        return before

    def build(self, example: Example | None = None) -> nn.Module:
        """A fresh subject module for ``example`` on the cell's device and dtype (the one its users call step by
        step when the context is persistent)."""
        factory = self.subject.protocol.build if self.persistent else self.subject.build
        # The library imported first, at torch's float32 default, as a program imports it: tensors a library makes
        # at import time (default arguments) must not take the dtype of whichever cell happened to import it.
        for name in self.subject.requires:
            importlib.import_module(name)
        # Built under float64 as the default dtype for float64 cells, so parameters keep full precision.
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64 if self.dtype == torch.float64 else torch.float32)
        try:
            module = factory(example or self.example)
        finally:
            torch.set_default_dtype(previous)
        module = module.to(device=self.device, dtype=self.dtype)
        return after_use(self, module) if self.used else module

    def input(self, x: torch.Tensor | None = None) -> torch.Tensor:
        x = self.example.x if x is None else x
        return x.to(device=self.device, dtype=self.dtype)

    @property
    def batch_dim(self) -> int:
        return sequence_batch_dim(self.spec, self.example)

    @property
    def time_dim(self) -> int | None:
        """The time axis of ``example.x`` (None for a spec without one)."""
        return None if self.spec.time_dim is None else self.example.hyper.get("time_dim", self.spec.time_dim)

    def steps(self, x: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """``x`` (the input by default) as a persistent subject is fed it: one time step per call."""
        return (self.input() if x is None else x).split(1, dim=self.time_dim)

    @property
    def differentiable(self) -> bool:
        return self.spec.differentiable

    def cotangent(self, like: torch.Tensor, seed: int = 20240611) -> torch.Tensor:
        """A fixed pseudo-random output cotangent: the same for the subject, its transforms and the spec."""
        gen = torch.Generator().manual_seed(seed)
        return torch.randn(like.shape, generator=gen, dtype=torch.float64).to(like.device, like.dtype)

    def spec_params(self, module: nn.Module) -> dict[str, nn.Parameter]:
        """Spec parameter name -> the module's parameter holding it (only those the subject maps)."""
        return {name: declared_parameter(module, path) for name, path in self.subject.param_map.items()}


def declared_parameter(module: nn.Module, path: str) -> nn.Parameter:
    """The parameter at ``path`` that the subject declares trainable (its ``param_map``). A buffer, a plain tensor
    or nothing there fails the stage ``parameters`` (``parameter-not-trainable``): the gradient the spec defines for
    it has nowhere to flow."""
    found = dict(module.named_parameters())  # a ScriptModule has no get_parameter
    if path in found:
        return found[path]
    owner, _, name = path.rpartition(".")
    try:
        held = getattr(module.get_submodule(owner) if owner else module, name)
    except (AttributeError, RuntimeError):
        held = None
    what = ("nothing" if held is None else "a buffer" if path in dict(module.named_buffers())
            else f"a plain {type(held).__name__} attribute")
    raise TransformFailed("parameters", AttributeError(
        f"the subject declares {path!r} a trainable parameter; {type(module).__name__} holds {what} there, not an "
        "nn.Parameter"))


def sequence_batch_dim(spec: Spec, example: Example) -> int:
    """The batch axis of ``example.x``: for sequences it follows the layout the example chose."""
    time_dim = example.hyper.get("time_dim", spec.time_dim)
    if spec.time_dim is None or time_dim is None:
        return spec.batch_dim
    return 1 if time_dim == 0 else 0


@dataclass
class HookCapture:
    """Forward-hook captures: the layers captured, those whose capture was overwritten in place before it was read
    (``read_at``), and features handed back under another layer's name."""

    captured: list[str]
    mutated: list[str] = field(default_factory=list)
    mislabelled: list[str] = field(default_factory=list)
    read_at: str = "the subject returned"


@dataclass
class Findings:
    """What a transform found besides output and gradients, for the checks that need more than tensors. A field a
    transform does not fill stays empty; a check that needs it from a transform that never fills it is a harness
    error."""

    #: what the transform left in the module (foreign tensors, changed values, populated .grad), and, added by the
    #: runner, process-wide state it left behind
    leaks: list[str] = field(default_factory=list)
    #: the process-wide state (global hooks, grad mode, default dtype) the runner had to put back
    process_leaks: list[str] = field(default_factory=list)
    #: (original, copy) of a copying transform
    copy_pair: tuple[nn.Module, nn.Module] | None = None
    #: (eager twin, transformed module), both after forward+backward
    state_pair: tuple[nn.Module, nn.Module] | None = None
    hooks: HookCapture | None = None
    #: dynamo's graph breaks (count, reasons) of a transform that asks for them
    graph_breaks: tuple[int, list[str]] | None = None
    #: the output of a second call of the same module on the same input (of a second sequence after the reset)
    second_call: torch.Tensor | None = None
    #: a persistent subject's output for the whole sequence in one call (the run was fed one step per call)
    one_call: torch.Tensor | None = None
    #: what a persistent subject returned that was its own state ("call 2: ... changed the module's state v")
    aliased: list[str] | None = None
    #: what the module changed of an input it was given as another layer's output (None: not looked at)
    input_modified: list[str] | None = None
    #: (transformed, eager) outputs for a second batch size
    second_shape: tuple[torch.Tensor, torch.Tensor] | None = None
    #: the backward's failure: the forward is still judged (a forward-only layer is judged on its forward), the
    #: checks of gradients report this
    backward_failure: TransformFailed | None = None
    #: nn.Module methods that should return the module itself and returned something else: "eval() -> Linear"
    returned_other: list[str] | None = None
    #: submodules (by name) that two separately built modules hold as one instance: "surrogate_function (Sigmoid)"
    shared_between_builds: list[tuple[str, str]] | None = None  # (cause, part): transforms/contract.py
    #: the transform's own failure, kept while it still records findings for other checks (a failed fullgraph
    #: compile still counts graph breaks)
    failure: TransformFailed | None = None
    #: a copy taken in the middle of a sequence, continued beside its original (transforms/copies.py), or the
    #: failure of taking it; None: not looked at
    continuation: Any = None
    #: an exchange format's view of the module (transforms.nir.NirFindings: the graph and what it declares)
    nir: Any = None
    #: what a forward in eval mode changed of the module's parameters and buffers (transforms/modes.py)
    changed_in_eval: list[str] | None = None
    #: submodules a mode method left in the other mode: "eval() left inner (Sign) in training mode"
    modes_not_set: list[str] | None = None
    #: (the module's output for the whole batch, each sample's output run alone): the per-sample columns
    whole_batch: tuple[torch.Tensor, torch.Tensor] | None = None


@dataclass
class TransformRun:
    """What a transformed callable produced for one example, and the run it must agree with (``against``: the
    eager module, or a loop over samples)."""

    y: torch.Tensor | None = None
    grads: dict[str, torch.Tensor] | None = None
    against: "TransformRun | None" = None
    findings: Findings = field(default_factory=Findings)


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Attribute an exception to the transform stage that raised it."""
    try:
        yield
    except TransformFailed:
        raise
    except Exception as error:  # noqa: BLE001 - any library error is a finding to classify
        raise TransformFailed(name, error) from error


def drive(ctx: Context, call: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, module: nn.Module | None,
          *, name: str = "forward") -> torch.Tensor:
    """``call`` on the sequence ``x`` as the subject's users feed it: in one call, or, in a persistent context, one
    time step per call from the reset state (``module``'s reset method, where the transformed module still has it:
    a traced or exported graph has none and starts from the state it was made with), the outputs joined along the
    time axis. A call that returns no tensor fails the stage ``name``."""
    if ctx.persistent:
        reset(ctx, module)
    outputs = []
    for i, step in enumerate(ctx.steps(x) if ctx.persistent else (x,), start=1):
        with stage(name):
            y = call(step)
        if not isinstance(y, torch.Tensor):
            what = f"call {i}" if ctx.persistent else "forward"
            raise TransformFailed(name, TypeError(f"{what} returned {type(y).__name__}, expected a Tensor"))
        outputs.append(y)
    return torch.cat(outputs, dim=ctx.time_dim) if ctx.persistent else outputs[0]


def reset(ctx: Context, module: nn.Module | None) -> None:
    """Reset a persistent subject's state between sequences with its protocol's method, if ``module`` has it."""
    method = getattr(module, ctx.subject.protocol.reset, None) if module is not None else None
    if callable(method):
        with stage("reset"):
            method()


def _copy_keeping_layout(x: torch.Tensor) -> torch.Tensor:
    """A copy of ``x`` with its strides, gaps included (``clone`` makes a view with gaps contiguous); a tensor whose
    elements share memory (an expanded one) is copied contiguously."""
    if x.numel() > 1 and 0 in x.stride():
        return x.clone(memory_format=torch.contiguous_format)
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device).copy_(x)


def run_forward_backward(ctx: Context, call: Callable[[torch.Tensor], torch.Tensor], module: nn.Module | None,
                         x: torch.Tensor | None = None, *, name: str = "forward") -> TransformRun:
    """Output and gradients (input and every mapped parameter) of ``call`` for the context's cotangent, the input
    fed as ``drive`` feeds it."""
    x = ctx.input() if x is None else x
    want_grad = ctx.differentiable
    x = _copy_keeping_layout(x.detach()).requires_grad_(want_grad and x.is_floating_point())
    y = drive(ctx, call, x, module, name=name)
    grads = None
    if want_grad:
        params = ctx.spec_params(module) if module is not None else {}
        for p in params.values():
            p.grad = None
        failure = backward(ctx, y)
        if failure is not None:
            run = TransformRun(y=y.detach())
            run.findings.backward_failure = failure
            return run
        grads = {"x": grad_or_zeros(x)}
        grads.update({n: grad_or_zeros(p) for n, p in params.items()})
    return TransformRun(y=y.detach(), grads=grads)


def backward(ctx: Context, y: torch.Tensor) -> TransformFailed | None:
    """Back-propagate the context's cotangent through ``y``; the backward's failure is returned, not raised: a
    forward-only layer's forward is still judged, the checks of gradients report it."""
    try:
        with stage("backward"):
            if y.requires_grad:
                (y * ctx.cotangent(y)).sum().backward()
    except TransformFailed as failure:
        return failure
    return None


def grad_or_zeros(t: torch.Tensor) -> torch.Tensor:
    # A missing gradient means "no dependence" to autograd; the spec decides whether that is right.
    return torch.zeros_like(t) if t.grad is None else t.grad.detach().clone()


def eager(ctx: Context, module: nn.Module | None = None, x: torch.Tensor | None = None) -> TransformRun:
    module = module if module is not None else build(ctx)
    return run_forward_backward(ctx, module, module, x)


def build(ctx: Context, example: Example | None = None) -> nn.Module:
    """A fresh subject module; a failure is the ``build`` stage's."""
    with stage("build"):
        return ctx.build(example)


# --------------------------------------------------------------------------------------------- module state


#: attributes every nn.Module has (its registries, hooks, mode): torch's bookkeeping, not the module's own state
_MODULE_BOOKKEEPING = frozenset(vars(nn.Module()))
#: how far the state walker looks from a module's attribute (containers and plain objects within it) ...
STATE_DEPTH = 4
#: ... and how many containers and objects it opens per module tree (a logger or a registry can reach thousands)
STATE_BUDGET = 5000


def tensor_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor a module tree holds, by path: parameters, buffers, and the tensors reachable from its other
    attributes, private ones (``_v``, spikingjelly's ``_memories``) included, inside dicts, lists, tuples, sets and
    plain objects, and those its classes hold (``<Class>.attr``: shared by every instance). Bounded: STATE_DEPTH
    levels from an attribute, each container or object opened once (cycles), STATE_BUDGET of them in all; modules
    are walked as the tree's submodules only (a class's list of its instances is no state of one)."""
    found: dict[str, torch.Tensor] = {}
    walk = _StateWalk()
    for prefix, sub in module.named_modules(remove_duplicate=False):
        dot = f"{prefix}." if prefix else ""
        for registry in (sub._parameters, sub._buffers):
            for name, t in registry.items():
                if isinstance(t, torch.Tensor):
                    found[f"{dot}{name}"] = t
        for key, value in vars(sub).items():
            if key not in _MODULE_BOOKKEEPING:
                found.update(walk.tensors(value, f"{dot}{key}"))
        for cls in type(sub).__mro__:
            if cls in walk.classes or cls.__module__.split(".")[0] in ("torch", "builtins"):
                continue
            walk.classes.add(cls)
            for key, value in vars(cls).items():
                if not key.startswith("__"):
                    found.update(walk.tensors(value, f"<{cls.__qualname__}>.{key}"))
    return found


class _StateWalk:
    """One bounded walk over what a module tree holds (see tensor_state)."""

    def __init__(self) -> None:
        self.opened: set[int] = set()
        self.classes: set[type] = set()

    def tensors(self, value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, torch.Tensor]]:
        if isinstance(value, torch.Tensor):
            yield path, value
            return
        items = _contents(value)
        if items is None or depth >= STATE_DEPTH or id(value) in self.opened or len(self.opened) >= STATE_BUDGET:
            return
        self.opened.add(id(value))
        for key, item in items:
            yield from self.tensors(item, f"{path}{key}", depth + 1)


def _contents(value: Any) -> list[tuple[str, Any]] | None:
    """(path suffix, item) of a container or plain object that may hold state, or None for anything else (modules,
    classes, functions, Python modules, numbers, strings)."""
    if isinstance(value, (list, tuple)):
        return [(f"[{i}]", item) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return [(f"[{k!r}]", item) for k, item in list(value.items())]
    if isinstance(value, (set, frozenset)):
        return [(f"{{{i}}}", item) for i, item in enumerate(value)]
    if isinstance(value, (nn.Module, type)) or inspect.isroutine(value) or inspect.ismodule(value):
        return None
    attributes = getattr(value, "__dict__", None)
    if not isinstance(attributes, dict):
        return None
    return [(f".{k}", item) for k, item in list(attributes.items())]


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal elementwise, a NaN in the same place in both included (a NaN a layer computes twice is the same value;
    the spec's checks judge it)."""
    return torch.equal(a, b) or (a.is_floating_point() and bool(((a == b) | (a.isnan() & b.isnan())).all()))


def foreign_tensor(t: torch.Tensor) -> str | None:
    """Why ``t`` must not outlive a transform (batched, grad-tracking, fake, functional, proxy), or None."""
    if torch._C._functorch.is_functorch_wrapped_tensor(t):
        return "functorch-wrapped (vmap/grad/jvp) tensor"
    if type(t) not in (torch.Tensor, nn.Parameter, nn.Buffer if hasattr(nn, "Buffer") else torch.Tensor):
        name = type(t).__name__
        if "Fake" in name:
            return "FakeTensor from tracing"
        if not isinstance(t, nn.Parameter):  # a Parameter of a library's own subclass (quantized weights) is its state
            return f"tensor subclass {name}"
    if torch._is_functional_tensor(t) or torch._C._functorch.is_functionaltensor(t):
        return "functional tensor from tracing"
    return None


def snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    """Detached copies of the module's parameters and buffers (values a transform must leave untouched). Parameters of
    a library's own tensor subclass are left out: their clone is another type (quanto's dequantizes), so no comparison
    with it could tell a change."""
    out = {}
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        if foreign_tensor(t) is None and type(t) in (torch.Tensor, nn.Parameter):
            out[name] = t.detach().clone()
    return out


def snapshot_buffers(module: nn.Module) -> dict[str, torch.Tensor]:
    """Detached copies of the module's buffers."""
    return {name: t.detach().clone() for name, t in module.named_buffers() if foreign_tensor(t) is None}


def _memory(t: torch.Tensor) -> int | None:
    """Where ``t``'s elements live (its storage's address), or None for a tensor without one of its own (empty,
    sparse, meta)."""
    if not t.numel():
        return None
    try:
        return t.untyped_storage().data_ptr() or None
    except (RuntimeError, NotImplementedError):
        return None


def leaks(module: nn.Module, before: dict[str, torch.Tensor], grads_before: dict[str, bool],
          eager_buffers: dict[str, torch.Tensor] | None = None, given: dict[str, torch.Tensor] | None = None,
          ) -> list[str]:
    """What a transform left behind in ``module``: foreign tensors, changed parameters, populated .grad, changed
    buffers. ``eager_buffers``: a twin's buffers after the same computation in eager mode; a buffer left with
    exactly that value is the forward's own update (a neuron's membrane), which the transform is documented to let
    through, not a leak. ``given``: tensors the transform lent the module for the call (functional_call's, each in
    memory of its own); the module holding one, or a view of one, after the call is a leak."""
    eager_buffers = eager_buffers or {}
    lent = {memory: name for name, t in (given or {}).items() if (memory := _memory(t)) is not None}
    problems = []
    for path, t in tensor_state(module).items():
        why = foreign_tensor(t)
        if why:
            problems.append(f"{path}: {why}")
        elif lent and (name := lent.get(_memory(t))) is not None:
            problems.append(f"{path}: holds the tensor given for {name!r} after the call")
    current = dict(list(module.named_parameters()) + list(module.named_buffers()))
    for name, old in before.items():
        new = current.get(name)
        if new is None:
            problems.append(f"{name}: removed")
        elif foreign_tensor(new) is None and (new.shape != old.shape or not torch.equal(new.detach(), old)):
            twin = eager_buffers.get(name)
            if twin is not None and twin.shape == new.shape and torch.equal(new.detach(), twin):
                continue
            problems.append(f"{name}: value changed" + (" (not as an eager forward changes it)" if twin is not None
                                                        else ""))
    for name, p in module.named_parameters():
        if p.grad is not None and not grads_before.get(name, False):
            problems.append(f"{name}.grad: populated by a functional transform")
    return problems


def watch_state(module: nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, bool]]:
    return snapshot(module), {n: p.grad is not None for n, p in module.named_parameters()}


def after_use(ctx: Context, module: nn.Module) -> nn.Module:
    """Run one forward+backward so hidden state holds non-leaf tensors, as in a training loop."""
    x = ctx.input().clone().requires_grad_(ctx.differentiable)
    y = drive(ctx, module, x, module)
    if ctx.differentiable:
        backward(ctx, y)  # a forward-only layer is used as far as it goes; the gradient checks report it
    for p in module.parameters():
        p.grad = None
    return module


@dataclass(frozen=True)
class Transform:
    """One transform and the facts the matrix needs about it: which checks judge it, in which dtypes and on which
    devices it runs, what it needs, the cause when its own stage raises, and findings it shows on subjects."""

    id: str
    fn: Callable[[Context], TransformRun]
    checks: tuple[str, ...]
    #: the cause of a failure in a stage named after the transform that no classification rule names
    failure_cause: str = "error"
    #: dtypes of its cells (float32 everywhere; others where they add information)
    dtypes: tuple[str, ...] = ("float32",)
    #: per-sample gradients are about parameters: not applicable to a subject without any
    needs_params: bool = False
    #: nothing to run for a spec without a gradient
    needs_grad: bool = False
    #: importable modules it needs (its cells skip without them)
    requires: tuple[str, ...] = ()
    #: compiles or exports the module for every example: its cells take fewer examples and do not shrink
    compiles: bool = False
    #: each example costs seconds (code generation, an export): the profile's costly_examples (core/settings.py)
    costly: bool = False
    #: yields a module its users go on calling: a subject whose state persists between calls is driven through its
    #: call protocol (one step per call, CallProtocol); False for the batch transforms (vmap, per-sample, jvp)
    protocol: bool = False
    devices: tuple[str, ...] = ("cpu", "cuda")
    #: the device whose result its cells compare with (cpu_vs_cuda: "cpu"), or None
    compares_with: str | None = None
    #: the dtype its arithmetic runs in when not the cell's (autocast): the tie margin follows it
    compute_dtype: str | None = None
    #: causes of its other named stages (a stage named after the transform has ``failure_cause``)
    stage_causes: Mapping[str, str] = field(default_factory=dict)
    #: the findings it shows on a subject (a library's finding, the same on every subject it applies to); a
    #: subject's own entries come first
    known: Callable[[Subject, Spec], tuple[Known, ...]] | None = None
    #: why it does not apply to a subject (None: it does), e.g. a format the subject declares no export to
    applies: Callable[[Subject, Spec], str | None] | None = None

    def stage_causes_of(self) -> dict[str, str]:
        """The cause of a failure in each of its own stages (classification's fallback)."""
        return {self.id: self.failure_cause, **self.stage_causes}
