"""Transforms: small functions that turn a freshly built module into something run, and say what to compare.

Each transform takes a :class:`Context` (how to build the subject, the drawn example, dtype, device) and
returns an :class:`Outcome`: the output and gradients of the transformed callable, the ``baseline`` it must
agree with (the eager module, or a Python loop for vmap/per-sample gradients), and findings in ``info`` for
the checks that need more than tensors (graph breaks, leaked state, hook captures, copies).

A transform knows nothing about particular subjects. When a stage raises, it raises ``TransformFailed`` naming
the stage, and every check of that transform fails with the classified cause.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import pickle
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from torch import nn

from .causes import TransformFailed
from .types import Example, Spec, Subject

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


# --------------------------------------------------------------------------------------------- context


@dataclass
class Context:
    """Everything a transform may use for one example of one cell."""

    subject: Subject
    spec: Spec
    example: Example  # float64 CPU, already rounded through the cell dtype
    dtype: torch.dtype
    device: torch.device

    def build(self, example: Example | None = None) -> nn.Module:
        """A fresh subject module for ``example`` on the cell's device and dtype."""
        # Built under float64 as the default dtype for float64 cells, so parameters keep full precision.
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64 if self.dtype == torch.float64 else torch.float32)
        try:
            module = self.subject.build(example or self.example)
        finally:
            torch.set_default_dtype(previous)
        return module.to(device=self.device, dtype=self.dtype)

    def input(self, x: torch.Tensor | None = None) -> torch.Tensor:
        x = self.example.x if x is None else x
        return x.to(device=self.device, dtype=self.dtype)

    @property
    def batch_dim(self) -> int:
        return sequence_batch_dim(self.spec, self.example)

    @property
    def differentiable(self) -> bool:
        return self.spec.differentiable

    def cotangent(self, like: torch.Tensor, seed: int = 20240611) -> torch.Tensor:
        """A fixed pseudo-random output cotangent: the same for the subject, its transforms and the spec."""
        gen = torch.Generator().manual_seed(seed)
        return torch.randn(like.shape, generator=gen, dtype=torch.float64).to(like.device, like.dtype)

    def spec_params(self, module: nn.Module) -> dict[str, nn.Parameter]:
        """Spec parameter name -> the module's parameter holding it (only those the subject maps)."""
        if isinstance(module, torch.jit.ScriptModule):  # which has no get_parameter
            found = dict(module.named_parameters())
            return {name: found[path] for name, path in self.subject.param_map.items()}
        return {name: module.get_parameter(path) for name, path in self.subject.param_map.items()}


def sequence_batch_dim(spec: Spec, example: Example) -> int:
    """The batch axis of ``example.x``: for sequences it follows the layout the example chose."""
    time_dim = example.hyper.get("time_dim", spec.time_dim)
    if spec.time_dim is None or time_dim is None:
        return spec.batch_dim
    return 1 if time_dim == 0 else 0


@dataclass
class Outcome:
    """What a transformed callable produced, and what it must agree with."""

    y: torch.Tensor | None = None
    grads: dict[str, torch.Tensor] | None = None
    baseline: "Outcome | None" = None
    info: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Attribute an exception to the transform stage that raised it."""
    try:
        yield
    except TransformFailed:
        raise
    except Exception as error:  # noqa: BLE001 - any library error is a finding to classify
        raise TransformFailed(name, error) from error


def run_forward_backward(ctx: Context, call: Callable[[torch.Tensor], torch.Tensor], module: nn.Module | None,
                         x: torch.Tensor | None = None, *, name: str = "forward") -> Outcome:
    """Output and gradients (input and every mapped parameter) of ``call`` for the context's cotangent."""
    x = ctx.input() if x is None else x
    want_grad = ctx.differentiable
    x = x.detach().clone().requires_grad_(want_grad and x.is_floating_point())
    with stage(name):
        y = call(x)
    if not isinstance(y, torch.Tensor):
        raise TransformFailed(name, TypeError(f"forward returned {type(y).__name__}, expected a Tensor"))
    grads = None
    if want_grad:
        params = ctx.spec_params(module) if module is not None else {}
        for p in params.values():
            p.grad = None
        with stage("backward"):
            if y.requires_grad:
                (y * ctx.cotangent(y)).sum().backward()
        grads = {"x": _grad_or_zeros(x)}
        grads.update({n: _grad_or_zeros(p) for n, p in params.items()})
    return Outcome(y=y.detach(), grads=grads)


def _grad_or_zeros(t: torch.Tensor) -> torch.Tensor:
    # A missing gradient means "no dependence" to autograd; the spec decides whether that is right.
    return torch.zeros_like(t) if t.grad is None else t.grad.detach().clone()


def eager(ctx: Context, module: nn.Module | None = None, x: torch.Tensor | None = None) -> Outcome:
    module = module if module is not None else _build(ctx)
    return run_forward_backward(ctx, module, module, x)


def _build(ctx: Context, example: Example | None = None) -> nn.Module:
    with stage("build"):
        return ctx.build(example)


# --------------------------------------------------------------------------------------------- module state


def tensor_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor a module tree holds: parameters, buffers and plain tensor attributes (hidden state)."""
    found: dict[str, torch.Tensor] = {}
    for prefix, sub in module.named_modules(remove_duplicate=False):
        for key, value in vars(sub).items():
            if key in ("_parameters", "_buffers"):
                for name, t in value.items():
                    if isinstance(t, torch.Tensor):
                        found[f"{prefix}.{name}" if prefix else name] = t
                continue
            for path, t in _tensors_in(value, key):
                found[f"{prefix}.{path}" if prefix else path] = t
    return found


def _tensors_in(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield path, value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _tensors_in(item, f"{path}[{i}]", depth + 1)
    elif depth < 2 and isinstance(value, dict) and not path.startswith("_"):
        for k, item in value.items():
            yield from _tensors_in(item, f"{path}[{k!r}]", depth + 1)


def foreign_tensor(t: torch.Tensor) -> str | None:
    """Why ``t`` must not outlive a transform (batched, grad-tracking, fake, functional, proxy), or None."""
    if torch._C._functorch.is_functorch_wrapped_tensor(t):
        return "functorch-wrapped (vmap/grad/jvp) tensor"
    if type(t) not in (torch.Tensor, nn.Parameter, nn.Buffer if hasattr(nn, "Buffer") else torch.Tensor):
        name = type(t).__name__
        return f"tensor subclass {name}" if "Fake" not in name else "FakeTensor from tracing"
    if torch._is_functional_tensor(t) or torch._C._functorch.is_functionaltensor(t):
        return "functional tensor from tracing"
    return None


def snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    """Detached copies of the module's parameters and buffers (values a transform must leave untouched)."""
    out = {}
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        if foreign_tensor(t) is None:
            out[name] = t.detach().clone()
    return out


def leaks(module: nn.Module, before: dict[str, torch.Tensor], grads_before: dict[str, bool]) -> list[str]:
    """What a transform left behind in ``module``: foreign tensors, changed parameters, populated .grad."""
    problems = []
    for path, t in tensor_state(module).items():
        why = foreign_tensor(t)
        if why:
            problems.append(f"{path}: {why}")
    current = dict(list(module.named_parameters()) + list(module.named_buffers()))
    for name, old in before.items():
        new = current.get(name)
        if new is None:
            problems.append(f"{name}: removed")
        elif foreign_tensor(new) is None and (new.shape != old.shape or not torch.equal(new.detach(), old)):
            problems.append(f"{name}: value changed")
    for name, p in module.named_parameters():
        if p.grad is not None and not grads_before.get(name, False):
            problems.append(f"{name}.grad: populated by a functional transform")
    return problems


def watch_state(module: nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, bool]]:
    return snapshot(module), {n: p.grad is not None for n, p in module.named_parameters()}


def after_use(ctx: Context, module: nn.Module) -> nn.Module:
    """Run one forward+backward so hidden state holds non-leaf tensors, as in a training loop."""
    x = ctx.input().clone().requires_grad_(ctx.differentiable)
    with stage("forward"):
        y = module(x)
    if ctx.differentiable and isinstance(y, torch.Tensor) and y.requires_grad:
        with stage("backward"):
            (y * ctx.cotangent(y)).sum().backward()
    for p in module.parameters():
        p.grad = None
    return module


# --------------------------------------------------------------------------------------------- round trips


def _copy_transform(name: str, copier: Callable[[nn.Module], nn.Module], used: bool) -> Callable[[Context], Outcome]:
    def transform(ctx: Context) -> Outcome:
        original = _build(ctx)
        if used:
            after_use(ctx, original)
        with stage(name):
            clone = copier(original)
        result = run_forward_backward(ctx, clone, clone, name=name)
        result.baseline = eager(ctx)
        result.info["copy_pair"] = (original, clone)
        return result

    transform.__name__ = name
    transform.__doc__ = f"{name}: the copy computes what a fresh module computes, and shares no tensor with it."
    return transform


def _pickle_copy(module: nn.Module) -> nn.Module:
    buffer = io.BytesIO()
    pickle.dump(module, buffer)
    buffer.seek(0)
    return pickle.load(buffer)


deepcopy = _copy_transform("deepcopy", copy.deepcopy, used=False)
deepcopy_used = _copy_transform("deepcopy_used", copy.deepcopy, used=True)
pickle_roundtrip = _copy_transform("pickle", _pickle_copy, used=False)
pickle_used = _copy_transform("pickle_used", _pickle_copy, used=True)


def perturbed(example: Example, factor: float = 0.9) -> Example:
    """The same example with every parameter scaled by ``factor`` (stays inside decay/positivity domains)."""
    return example._replace(params={k: v * factor for k, v in example.params.items()})


def state_dict_roundtrip(ctx: Context) -> Outcome:
    """load_state_dict of a trained-looking module into a fresh one built with other values restores its outputs."""
    source = _build(ctx)
    after_use(ctx, source)
    target = _build(ctx, perturbed(ctx.example))
    with stage("state_dict"):
        state = source.state_dict()
        target.load_state_dict(state)
    result = run_forward_backward(ctx, target, target, name="state_dict")
    result.baseline = eager(ctx)
    return result


def functional_call(ctx: Context) -> Outcome:
    """torch.func.functional_call with other parameter values computes what a module holding them computes,
    and leaves the module's own parameters, buffers and .grad untouched."""
    module = _build(ctx)
    before = watch_state(module)
    other = dict(module.named_parameters())
    factor = 0.9
    new_params = {n: (p.detach() * factor).requires_grad_(p.requires_grad) for n, p in other.items()}
    inverse = {path: name for name, path in ctx.subject.param_map.items()}

    def call(x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(module, new_params, (x,))

    x = ctx.input().clone().requires_grad_(ctx.differentiable)
    with stage("functional_call"):
        y = call(x)
    grads = None
    if ctx.differentiable:
        with stage("backward"):
            if y.requires_grad:
                (y * ctx.cotangent(y)).sum().backward()
        grads = {"x": _grad_or_zeros(x)}
        grads.update({inverse[n]: _grad_or_zeros(p) for n, p in new_params.items() if n in inverse})
    result = Outcome(y=y.detach(), grads=grads)
    twin = _build(ctx)
    with torch.no_grad():  # exactly the values passed to functional_call, so only the mechanism differs
        for name, value in new_params.items():
            twin.get_parameter(name).copy_(value)
    result.baseline = eager(ctx, twin)
    result.info["leaks"] = leaks(module, *before)
    return result


# --------------------------------------------------------------------------------------------- torch.func


def _per_sample_call(module: nn.Module, bd: int) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda xi: module(xi.unsqueeze(bd)).squeeze(bd)


def _loop(ctx: Context, module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    bd = ctx.batch_dim
    with stage("forward"):
        return torch.cat([module(x.narrow(bd, i, 1)) for i in range(x.shape[bd])], dim=bd).detach()


def vmap(ctx: Context) -> Outcome:
    """torch.func.vmap over the batch equals a Python loop over samples, and leaves no batched state behind."""
    module = _build(ctx)
    before = watch_state(module)
    x, bd = ctx.input(), ctx.batch_dim
    with stage("vmap"):
        y = torch.func.vmap(_per_sample_call(module, bd), in_dims=bd, out_dims=bd)(x)
    result = Outcome(y=y.detach(), baseline=Outcome(y=_loop(ctx, _build(ctx), x)))
    result.info["leaks"] = leaks(module, *before)
    return result


def func_grad(ctx: Context) -> Outcome:
    """torch.func.grad (input and parameters, through functional_call) equals autograd's backward."""
    module = _build(ctx)
    before = watch_state(module)
    x = ctx.input()
    params = {n: p.detach() for n, p in module.named_parameters()}
    cot = None

    def loss(p: dict, xi: torch.Tensor) -> torch.Tensor:
        nonlocal cot
        y = torch.func.functional_call(module, p, (xi,))
        cot = ctx.cotangent(y) if cot is None else cot
        return (y * cot).sum()

    with stage("grad"):
        g_params, g_x = torch.func.grad(loss, argnums=(0, 1))(params, x)
    inverse = {path: name for name, path in ctx.subject.param_map.items()}
    grads = {"x": g_x.detach()}
    grads.update({inverse[n]: g.detach() for n, g in g_params.items() if n in inverse})
    result = Outcome(grads=grads, baseline=eager(ctx))
    result.info["leaks"] = leaks(module, *before)
    return result


def per_sample_grad(ctx: Context) -> Outcome:
    """vmap(grad(functional_call)) per-sample parameter gradients equal a loop of single-sample backward passes."""
    module = _build(ctx)
    before = watch_state(module)
    x, bd = ctx.input(), ctx.batch_dim
    names = dict(ctx.subject.param_map)
    params = {path: module.get_parameter(path).detach() for path in names.values()}
    full_cot = ctx.cotangent(_loop(ctx, _build(ctx), x))

    def loss(p: dict, xi: torch.Tensor, ci: torch.Tensor) -> torch.Tensor:
        y = torch.func.functional_call(module, p, (xi.unsqueeze(bd),)).squeeze(bd)
        return (y * ci).sum()

    with stage("per_sample_grad"):
        per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, bd, bd))(params, x, full_cot)
    grads = {spec_name: per_sample[path].detach() for spec_name, path in names.items()}
    result = Outcome(grads=grads, baseline=Outcome(grads=_loop_param_grads(ctx, x, full_cot)))
    result.info["leaks"] = leaks(module, *before)
    return result


def _loop_param_grads(ctx: Context, x: torch.Tensor, full_cot: torch.Tensor) -> dict[str, torch.Tensor]:
    """Reference per-sample gradients: one eager backward per sample on a fresh module."""
    bd = ctx.batch_dim
    rows: dict[str, list[torch.Tensor]] = {n: [] for n in ctx.subject.param_map}
    for i in range(x.shape[bd]):
        module = _build(ctx)
        params = ctx.spec_params(module)
        with stage("forward"):
            y = module(x.narrow(bd, i, 1))
        with stage("backward"):
            (y * full_cot.narrow(bd, i, 1)).sum().backward()
        for n, p in params.items():
            rows[n].append(_grad_or_zeros(p))
    return {n: torch.stack(r) for n, r in rows.items()}


def _opacus_transform(mode: str) -> Callable[[Context], Outcome]:
    name = f"opacus_{mode}"

    def transform(ctx: Context) -> Outcome:
        from opacus import GradSampleModule

        module = _build(ctx)
        x, bd = ctx.input(), ctx.batch_dim
        full_cot = ctx.cotangent(_loop(ctx, _build(ctx), x))
        with stage(name):
            wrapped = GradSampleModule(module, batch_first=(bd == 0), loss_reduction="sum",
                                       force_functorch=(mode == "functorch"))
            y = wrapped(x)
            (y * full_cot).sum().backward()
            grads = {}
            for spec_name, path in ctx.subject.param_map.items():
                p = module.get_parameter(path)
                sample = getattr(p, "grad_sample", None)
                if sample is None:
                    raise RuntimeError(f"Opacus computed no grad_sample for parameter {path!r}")
                grads[spec_name] = sample.detach()
            wrapped._close() if hasattr(wrapped, "_close") else None
        return Outcome(grads=grads, baseline=Outcome(grads=_loop_param_grads(ctx, x, full_cot)))

    transform.__name__ = name
    transform.__doc__ = f"Opacus GradSampleModule ({mode} mode) per-sample gradients equal the loop."
    return transform


opacus_hooks = _opacus_transform("hooks")
opacus_functorch = _opacus_transform("functorch")


def jvp(ctx: Context) -> Outcome:
    """Forward-mode AD agrees with reverse mode: <v, J u> from torch.func.jvp equals <J^T v, u> from backward."""
    module = _build(ctx)
    before = watch_state(module)
    x = ctx.input()
    reverse = eager(ctx)
    gen = torch.Generator().manual_seed(7)
    tangents = [torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x) for _ in range(2)]
    forward_products, reverse_products = [], []
    cot = ctx.cotangent(reverse.y)
    for u in tangents:
        with stage("jvp"):
            _, ju = torch.func.jvp(module, (x,), (u,))
        forward_products.append((cot.double() * ju.double()).sum())
        reverse_products.append((reverse.grads["x"].double() * u.double()).sum())
    result = Outcome(grads={"<v,Ju>": torch.stack(forward_products)},
                     baseline=Outcome(grads={"<v,Ju>": torch.stack(reverse_products)}))
    result.info["leaks"] = leaks(module, *before)
    return result


# --------------------------------------------------------------------------------------------- compilers


def graph_breaks(module: nn.Module, x: torch.Tensor) -> tuple[int, list[str]]:
    """dynamo's graph breaks for one call (count and reasons), from its own counters.

    ``torch._dynamo.explain`` is not used: on torch 2.13 it reports 0 breaks for a ``Tensor.item()`` break that the
    counters (and fullgraph=True) do see.
    """
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch.compile(module, backend="eager")(x)
    # A break dynamo resumes after is counted under "graph_break"; one it cannot resume after (a break inside a
    # loop: gb7000 "graph break in loop", the whole frame falls back to eager) only under "unimplemented".
    found = dict(counters["graph_break"])
    for reason, n in counters["unimplemented"].items():
        found[reason] = found.get(reason, 0) + n
    torch._dynamo.reset()
    reasons = [_first_lines(reason) for reason in found]
    return sum(found.values()), reasons


def _first_lines(reason: str) -> str:
    """dynamo's headline of a break, and of the break it caused while being handled (a skipped frame)."""
    lines = reason.splitlines()
    headline = lines[0].strip()
    marker = "another graph break occurred"
    for i, line in enumerate(lines):
        if marker in line:
            follow = next((ln.strip() for ln in lines[i + 1:] if ln.strip()), "")
            headline += f" (then: {follow})"
            break
    return headline[:300]


def _compile_transform(name: str, backend: str, dynamic: bool | None, *, explain: bool) -> Callable[[Context], Outcome]:
    def transform(ctx: Context) -> Outcome:
        import torch._dynamo

        module = _build(ctx)
        before = watch_state(module)
        torch._dynamo.reset()
        try:
            with stage(name):
                compiled = torch.compile(module, fullgraph=True, backend=backend, dynamic=dynamic)
            result = run_forward_backward(ctx, compiled, module, name=name)
            if dynamic:
                # A second batch size must run through the same dynamic graph (after a batch of 1, which dynamo
                # always specializes, it is compiled here). The input is given the first call's requires_grad: a
                # mismatch is a guard failure of its own, which made every example compile a second graph.
                x2 = torch.cat([ctx.input(), ctx.input()], dim=ctx.batch_dim)
                x2 = x2.requires_grad_(ctx.differentiable and x2.is_floating_point())
                with stage(name):
                    y2 = compiled(x2).detach()
                result.info["second_shape"] = (y2, eager(ctx, x=x2).y)
            # fullgraph=True captured the whole forward in one graph: dynamo found no break to count.
            breaks = (0, [])
        except TransformFailed as failure:
            if not explain:
                raise
            # dynamo's own account of the failure (count and reasons of every break) for no_graph_breaks, from a
            # fresh instance: only asked when fullgraph failed, since a fullgraph success means no break.
            with stage("explain"):
                breaks = graph_breaks(_build(ctx), ctx.input())
            result = Outcome(info={"failure": failure})
        result.baseline = eager(ctx)
        result.info["leaks"] = leaks(module, *before)
        result.info["graph_breaks"] = breaks if explain else None
        return result

    transform.__name__ = name
    transform.__doc__ = f"torch.compile(fullgraph=True, backend={backend!r}, dynamic={dynamic}) forward+backward."
    return transform


compile_aot_eager = _compile_transform("compile_aot_eager", "aot_eager", None, explain=True)
compile_inductor = _compile_transform("compile_inductor", "inductor", None, explain=False)
# Dynamic shapes are a capture question (dynamo + AOT autograd with symbolic sizes); inductor's code generation is
# covered by compile_inductor, and inductor with dynamic=True costs ~20 s per subject on CPU.
compile_dynamic = _compile_transform("compile_dynamic", "aot_eager", True, explain=True)


def other_input(ctx: Context) -> torch.Tensor:
    """A second input of the same shape, different values: exposes data-dependent branches frozen by tracing."""
    return (ctx.input() * -1.3).flip(ctx.batch_dim)


def jit_script(ctx: Context) -> Outcome:
    """torch.jit.script(module) computes and differentiates like the eager module."""
    module = _build(ctx)
    with stage("jit_script"):
        scripted = torch.jit.script(module)
    result = run_forward_backward(ctx, scripted, scripted, name="jit_script")
    result.baseline = eager(ctx)
    return result


def jit_trace(ctx: Context) -> Outcome:
    """torch.jit.trace on one input computes like the eager module on another input of the same shape."""
    module = _build(ctx)
    with stage("jit_trace"):
        traced = torch.jit.trace(module, (ctx.input(),), check_trace=False)
    x2 = other_input(ctx)
    result = run_forward_backward(ctx, traced, traced, x2, name="jit_trace")
    result.baseline = eager(ctx, x=x2)
    return result


def export(ctx: Context) -> Outcome:
    """torch.export.export(module) runs like the eager module on another input, leaving the module untouched."""
    module = _build(ctx)
    before = watch_state(module)
    with stage("export"):
        program = torch.export.export(module, (ctx.input(),))
        exported = program.module()
    x2 = other_input(ctx)
    with stage("export"):
        y = exported(x2)
    result = Outcome(y=y.detach(), baseline=Outcome(y=eager(ctx, x=x2).y))
    result.info["leaks"] = leaks(module, *before)
    return result


# --------------------------------------------------------------------------------------------- hooks, checkpoint


class InplaceDownstream(nn.Module):
    """The next layer of a real network: an in-place op on the subject's output (as the ReLU(inplace=True) of
    KamitaniLab/bdpy#16)."""

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y.mul_(2.0).add_(1.0) if y.is_floating_point() else y


def forward_hooks(ctx: Context) -> Outcome:
    """Feature extraction by forward hooks (capture by reference, as extractors without clone do), with an
    in-place op downstream: every captured tensor must still hold the value it had at capture time when the
    subject returns, and gradients through the network must be those of the eager module."""
    module = _build(ctx)
    captured: list[tuple[str, torch.Tensor, torch.Tensor]] = []

    def hook(name: str):
        def capture(_mod, _inp, out):
            if isinstance(out, torch.Tensor):
                captured.append((name, out, out.detach().clone()))

        return capture

    handles = [m.register_forward_hook(hook(n or "<subject>")) for n, m in module.named_modules()]
    mutated: list[str] = []

    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            self.subject, self.downstream = module, InplaceDownstream()

        def forward(self, x):
            y = self.subject(x)
            for name, ref, value in captured:
                if ref.shape != value.shape or not torch.equal(ref.detach(), value):
                    mutated.append(name)
            out = self.downstream(y)
            return (out - 1.0) / 2.0 if out.is_floating_point() else out

    try:
        result = run_forward_backward(ctx, Network(), module, name="forward_hooks")
    finally:
        for h in handles:
            h.remove()
    result.baseline = eager(ctx)
    result.info["hooks"] = {"captured": [n for n, _, _ in captured], "mutated": mutated}
    return result


def checkpoint(ctx: Context) -> Outcome:
    """torch.utils.checkpoint recomputes the forward in backward: gradients and the module state after
    forward+backward equal eager (a stateful module must not advance twice)."""
    from torch.utils.checkpoint import checkpoint as run_checkpointed

    module = _build(ctx)
    result = run_forward_backward(ctx, lambda x: run_checkpointed(module, x, use_reentrant=False), module,
                                  name="checkpoint")
    twin = _build(ctx)
    result.baseline = eager(ctx, twin)
    result.info["state_pair"] = (twin, module)
    return result


# --------------------------------------------------------------------------------------------- devices


def cpu_vs_cuda(ctx: Context) -> Outcome:
    """The subject on CUDA computes what the same subject computes on the CPU (same input, same parameters, same
    cotangent): forward and gradients of the two devices must agree."""
    result = eager(ctx)
    with stage("cpu_baseline"):
        result.baseline = eager(dataclasses.replace(ctx, device=torch.device("cpu")))
    return result


#: Autocast transforms and the dtype their matmuls/convolutions run in (used for tolerances and the tie margin).
AUTOCAST = {"autocast_bf16": torch.bfloat16, "autocast_fp16": torch.float16}


def _autocast_transform(name: str) -> Callable[[Context], Outcome]:
    amp_dtype = AUTOCAST[name]

    def transform(ctx: Context) -> Outcome:
        module = _build(ctx)

        def call(x: torch.Tensor) -> torch.Tensor:
            with torch.autocast(ctx.device.type, dtype=amp_dtype):
                return module(x)

        result = run_forward_backward(ctx, call, module, name=name)
        result.baseline = eager(ctx)
        return result

    transform.__name__ = name
    transform.__doc__ = (f"Forward under torch.autocast({amp_dtype}) (mixed precision), backward outside it: output "
                         f"and gradients agree with the float32 module within {amp_dtype}'s rounding.")
    return transform


autocast_bf16 = _autocast_transform("autocast_bf16")
autocast_fp16 = _autocast_transform("autocast_fp16")


# --------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Transform:
    """A registered transform: its function, the checks that apply to it, and what it needs."""

    id: str
    fn: Callable[[Context], Outcome]
    checks: tuple[str, ...]
    needs_params: bool = False
    requires: tuple[str, ...] = ()
    compiles: bool = False
    devices: tuple[str, ...] = ("cpu", "cuda")
    #: the device whose result this transform's cells compare with (cpu_vs_cuda: "cpu"), or None
    compares_with: str | None = None

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip().splitlines()[0] if self.fn.__doc__ else ""


def eager_transform(ctx: Context) -> Outcome:
    """The module as built, called directly; run twice to check determinism."""
    module = _build(ctx)
    first = eager(ctx, module)
    second = eager(ctx, module)
    first.info["second_y"] = second.y
    return first


FORWARD_GRAD = ("preserves_forward", "preserves_grad")
from .transforms_bdpy import bdpy_features, bdpy_features_detach  # noqa: E402 - it builds on this module's helpers

TRANSFORMS: tuple[Transform, ...] = (
    Transform("eager", eager_transform, ("forward_matches_spec", "grad_matches_spec", "output_dtype", "deterministic")),
    Transform("deepcopy", deepcopy, FORWARD_GRAD + ("copy_independent",)),
    Transform("deepcopy_used", deepcopy_used, FORWARD_GRAD + ("copy_independent",)),
    Transform("pickle", pickle_roundtrip, FORWARD_GRAD + ("copy_independent",)),
    Transform("pickle_used", pickle_used, FORWARD_GRAD + ("copy_independent",)),
    Transform("state_dict", state_dict_roundtrip, FORWARD_GRAD),
    Transform("functional_call", functional_call, FORWARD_GRAD + ("no_state_leak",)),
    Transform("vmap", vmap, ("preserves_forward", "no_state_leak")),
    Transform("grad", func_grad, ("preserves_grad", "no_state_leak")),
    Transform("per_sample_grad", per_sample_grad, ("preserves_grad", "no_state_leak"), needs_params=True),
    Transform("opacus_hooks", opacus_hooks, ("preserves_grad",), needs_params=True, requires=("opacus",)),
    Transform("opacus_functorch", opacus_functorch, ("preserves_grad",), needs_params=True, requires=("opacus",)),
    Transform("jvp", jvp, ("preserves_grad", "no_state_leak")),
    Transform("compile_aot_eager", compile_aot_eager, FORWARD_GRAD + ("no_graph_breaks",), compiles=True),
    Transform("compile_inductor", compile_inductor, FORWARD_GRAD, compiles=True),
    Transform("compile_dynamic", compile_dynamic, ("preserves_forward", "no_graph_breaks"), compiles=True),
    Transform("jit_script", jit_script, FORWARD_GRAD),
    Transform("jit_trace", jit_trace, FORWARD_GRAD),
    Transform("export", export, ("preserves_forward", "no_state_leak")),
    Transform("forward_hooks", forward_hooks, ("hook_capture_intact", "preserves_grad")),
    Transform("checkpoint", checkpoint, ("preserves_grad", "state_matches_eager")),
    Transform("bdpy_features", bdpy_features, ("hook_capture_intact", "preserves_grad"), requires=("bdpy",)),
    Transform("bdpy_features_detach", bdpy_features_detach, ("hook_capture_intact",), requires=("bdpy",)),
    Transform("cpu_vs_cuda", cpu_vs_cuda, FORWARD_GRAD, devices=("cuda",), compares_with="cpu"),
    Transform("autocast_bf16", autocast_bf16, FORWARD_GRAD, devices=("cuda",)),
    Transform("autocast_fp16", autocast_fp16, FORWARD_GRAD, devices=("cuda",)),
)
