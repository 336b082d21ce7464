"""torch.func and friends: functional_call, vmap, grad, per-sample gradients (torch.func and Opacus), jvp."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from ..core.types import Library
from .harness import (
    FORWARD_GRAD,
    Context,
    Transform,
    TransformRun,
    backward,
    build,
    declared_parameter,
    drive,
    eager,
    grad_or_zeros,
    leaks,
    snapshot_buffers,
    stage,
)

#: where these transforms stand in the table (and the report's columns)
ORDER = 20
#: Opacus drives the per-sample gradients of two transforms.
OPACUS = Library("opacus", "opacus", "1.6.0", dependencies=("opt_einsum",))


def _lent(p: torch.Tensor, *, factor: float) -> torch.Tensor:
    """The value functional_call is given for parameter ``p``: ``p * factor``; a library's quantized weight that has
    no arithmetic (torchao's Int8Tensor raises NotImplementedError on aten.mul) is given as it is, a value of its own
    type that users pass; so is an integer one (a quantized layer's codes, which no factor scales into other codes)."""
    if not p.is_floating_point():
        return p
    try:
        value = p.detach() * factor
    except NotImplementedError:
        value = p.detach()
    return value.requires_grad_(p.requires_grad)


def functional_call(ctx: Context) -> TransformRun:
    """torch.func.functional_call with other parameter values computes what a module holding them computes,
    leaves the module's own parameters, buffers and .grad untouched, and the module keeps none of the lent tensors."""
    module = build(ctx)
    before = ctx.watch(module)
    other = dict(module.named_parameters())
    new_params = {n: _lent(p, factor=0.9) for n, p in other.items()}
    inverse = {path: name for name, path in ctx.subject.param_map.items()}

    def call(x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(module, new_params, (x,))

    x = ctx.input().clone().requires_grad_(ctx.differentiable)
    y = drive(ctx, call, x, module, name="functional_call")
    grads, backward_failure = None, None
    if ctx.differentiable:
        backward_failure = backward(ctx, y)  # kept for the gradient checks; the forward's are still judged
        if backward_failure is None:
            grads = {"x": grad_or_zeros(x)}
            grads.update({inverse[n]: grad_or_zeros(p) for n, p in new_params.items() if n in inverse})
    result = TransformRun(y=y.detach(), grads=grads)
    result.findings.backward_failure = backward_failure
    twin = build(ctx)
    # exactly the values passed to functional_call, so only the mechanism differs; each in memory of its own (not
    # copied in place: a library's default argument can put one tensor's memory under both builds' parameter)
    for name, value in new_params.items():
        if value is other[name]:
            continue  # lent as it is (integer codes): the twin, built from the same example, holds the same
        held = twin.get_parameter(name)
        if type(held) is nn.Parameter and type(value) is torch.Tensor:
            held.data = value.detach().clone()
        else:  # a tensor subclass (quanto's, torchao's quantized weight) ignores .data: hold the value itself
            owner, _, attribute = name.rpartition(".")
            setattr(twin.get_submodule(owner), attribute,
                    nn.Parameter(value.detach().clone(), requires_grad=held.requires_grad))
    result.against = eager(ctx, twin)
    # torch.func.functional_call documents that buffers it is not given are the module's own: a forward that
    # updates them (a neuron's membrane) updates them as an eager forward does, which is no leak
    lent = {n: v for n, v in new_params.items() if v is not other[n]}  # a parameter lent as it is stays the module's
    result.findings.leaks = leaks(module, *before, eager_buffers=dict(snapshot_buffers(twin)), given=lent)
    return result


def _per_sample_call(module: nn.Module, bd: int) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda xi: module(xi.unsqueeze(bd)).squeeze(bd)


def _loop(ctx: Context, module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    bd = ctx.batch_dim
    with stage("forward"):
        return torch.cat([module(x.narrow(bd, i, 1)) for i in range(x.shape[bd])], dim=bd).detach()


def _whole_batch(ctx: Context, x: torch.Tensor) -> torch.Tensor:
    """A fresh module's output for the whole batch in one call, to set beside each sample's run alone (the loop)."""
    module = build(ctx)
    with stage("forward"), torch.no_grad():
        return module(x).detach()


def vmap(ctx: Context) -> TransformRun:
    """torch.func.vmap over the batch equals a Python loop over samples, and leaves no batched state behind."""
    module = build(ctx)
    before = ctx.watch(module)
    x, bd = ctx.input(), ctx.batch_dim
    with stage("vmap"):
        y = torch.func.vmap(_per_sample_call(module, bd), in_dims=bd, out_dims=bd)(x)
    left = leaks(module, *before)  # before the reference runs: state held on the class is the reference's too
    alone = _loop(ctx, build(ctx), x)
    result = TransformRun(y=y.detach(), against=TransformRun(y=alone))
    result.findings.leaks = left
    result.findings.whole_batch = (_whole_batch(ctx, x), alone)
    return result


def func_grad(ctx: Context) -> TransformRun:
    """torch.func.grad (input and parameters, through functional_call) equals autograd's backward."""
    module = build(ctx)
    before = ctx.watch(module)
    x = ctx.input()
    params = {n: p.detach() for n, p in module.named_parameters() if p.is_floating_point()}
    codes = {n: p for n, p in module.named_parameters() if not p.is_floating_point()}  # integers: no gradient
    cot = None

    def loss(p: dict, xi: torch.Tensor) -> torch.Tensor:
        nonlocal cot
        y = torch.func.functional_call(module, {**p, **codes}, (xi,))
        cot = ctx.cotangent(y) if cot is None else cot
        return (y * cot).sum()

    with stage("grad"):
        g_params, g_x = torch.func.grad(loss, argnums=(0, 1))(params, x)
    inverse = {path: name for name, path in ctx.subject.param_map.items()}
    grads = {"x": g_x.detach()}
    grads.update({inverse[n]: g.detach() for n, g in g_params.items() if n in inverse})
    result = TransformRun(grads=grads, against=eager(ctx))
    result.findings.leaks = leaks(module, *before)
    return result


def per_sample_grad(ctx: Context) -> TransformRun:
    """vmap(grad(functional_call)) per-sample parameter gradients equal a loop of single-sample backward passes."""
    module = build(ctx)
    before = ctx.watch(module)
    x, bd = ctx.input(), ctx.batch_dim
    names = dict(ctx.subject.param_map)
    params = {path: declared_parameter(module, path).detach() for path in names.values()}
    alone = _loop(ctx, build(ctx), x)
    full_cot = ctx.cotangent(alone)

    def loss(p: dict, xi: torch.Tensor, ci: torch.Tensor) -> torch.Tensor:
        y = torch.func.functional_call(module, p, (xi.unsqueeze(bd),)).squeeze(bd)
        return (y * ci).sum()

    with stage("per_sample_grad"):
        per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, bd, bd))(params, x, full_cot)
    grads = {spec_name: per_sample[path].detach() for spec_name, path in names.items()}
    result = TransformRun(grads=grads, against=TransformRun(grads=_loop_param_grads(ctx, x, full_cot)))
    result.findings.leaks = leaks(module, *before)
    result.findings.whole_batch = (_whole_batch(ctx, x), alone)
    return result


def _loop_param_grads(ctx: Context, x: torch.Tensor, full_cot: torch.Tensor) -> dict[str, torch.Tensor]:
    """Reference per-sample gradients: one eager backward per sample on a fresh module."""
    bd = ctx.batch_dim
    rows: dict[str, list[torch.Tensor]] = {n: [] for n in ctx.subject.param_map}
    for i in range(x.shape[bd]):
        module = build(ctx)
        params = ctx.spec_params(module)
        with stage("forward"):
            y = module(x.narrow(bd, i, 1))
        with stage("backward"):
            (y * full_cot.narrow(bd, i, 1)).sum().backward()
        for n, p in params.items():
            rows[n].append(grad_or_zeros(p))
    return {n: torch.stack(r) for n, r in rows.items()}


def _batch_first(module: nn.Module, x: torch.Tensor, bd: int, time_dim: int | None = None) -> bool:
    """Opacus' ``batch_first`` for ``module``: it describes the inputs of the layers that hold the parameters (their
    per-sample gradients come from those inputs), not the module's own input. A neuron stepped over a sequence gets
    one step, (B, N), whatever the sequence's layout. The batch axis every parameter-holding layer sees: a layer
    given the whole input has ``x``'s layout, one given a step (``x`` without its time axis) has it with the time
    axis taken out, another is told by which axis has the batch's size; else (disagreement, or no such layer) the
    layout of ``x``."""
    batch = x.shape[bd]
    step_bd = bd - 1 if time_dim is not None and time_dim < bd else bd
    seen: set[bool | None] = set()

    def record(layer, args):
        shape = tuple(args[0].shape) if args and isinstance(args[0], torch.Tensor) else ()
        if shape == tuple(x.shape):
            seen.add(bd == 0)
        elif time_dim is not None and len(shape) == x.dim() - 1:
            seen.add(step_bd == 0)
        else:
            first, second = len(shape) > 0 and shape[0] == batch, len(shape) > 1 and shape[1] == batch
            seen.add(first if first != second else None)

    layers = [m for m in module.modules() if any(True for _ in m.parameters(recurse=False))]
    handles = [m.register_forward_pre_hook(record) for m in layers]
    try:
        with torch.no_grad():
            module(x)
    except Exception:  # noqa: BLE001 - the transform itself will meet and report it
        return bd == 0
    finally:
        for handle in handles:
            handle.remove()
    return seen.pop() if len(seen) == 1 and None not in seen else bd == 0


def _opacus_transform(mode: str) -> Callable[[Context], TransformRun]:
    name = f"opacus_{mode}"

    def transform(ctx: Context) -> TransformRun:
        from opacus import GradSampleModule

        module = build(ctx)
        x, bd = ctx.input(), ctx.batch_dim
        alone = _loop(ctx, build(ctx), x)
        full_cot = ctx.cotangent(alone)
        with stage(name):
            batch_first = _batch_first(build(ctx), x, bd, ctx.time_dim)
            wrapped = GradSampleModule(module, batch_first=batch_first, loss_reduction="sum",
                                       force_functorch=(mode == "functorch"))
            y = wrapped(x)
            (y * full_cot).sum().backward()
            grads = {}
            for spec_name, path in ctx.subject.param_map.items():
                p = declared_parameter(module, path)
                sample = getattr(p, "grad_sample", None)
                if sample is None:
                    raise RuntimeError(f"Opacus computed no grad_sample for parameter {path!r}")
                grads[spec_name] = sample.detach()
            wrapped._close() if hasattr(wrapped, "_close") else None
        result = TransformRun(grads=grads, against=TransformRun(grads=_loop_param_grads(ctx, x, full_cot)))
        result.findings.whole_batch = (y.detach(), alone)  # GradSampleModule's forward is the batched module's
        return result

    transform.__name__ = name
    transform.__doc__ = f"Opacus GradSampleModule ({mode} mode) per-sample gradients equal the loop."
    return transform


opacus_hooks = _opacus_transform("hooks")
opacus_functorch = _opacus_transform("functorch")


def jvp(ctx: Context) -> TransformRun:
    """Forward-mode AD agrees with reverse mode: <v, J u> from torch.func.jvp equals <J^T v, u> from backward."""
    module = build(ctx)
    before = ctx.watch(module)
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
    result = TransformRun(grads={"<v,Ju>": torch.stack(forward_products)},
                     against=TransformRun(grads={"<v,Ju>": torch.stack(reverse_products)}))
    result.findings.leaks = leaks(module, *before)
    return result


LEAK = ("no_state_leak",)
#: the per-sample columns also judge that no sample's output depends on the others of its batch
SAMPLES = ("samples_independent",)
TRANSFORMS = (
    Transform("functional_call", functional_call, FORWARD_GRAD + LEAK, failure_cause="functional-call-failed",
              protocol=True),
    Transform("vmap", vmap, ("preserves_forward",) + LEAK + SAMPLES, failure_cause="vmap-unsupported"),
    Transform("grad", func_grad, ("preserves_grad",) + LEAK, failure_cause="functional-call-failed", needs_grad=True),
    Transform("per_sample_grad", per_sample_grad, ("preserves_grad",) + LEAK + SAMPLES,
              failure_cause="per-sample-grad-failed", needs_grad=True, needs_params=True),
    Transform("opacus_hooks", opacus_hooks, ("preserves_grad",) + SAMPLES, failure_cause="opacus-failed",
              needs_params=True, needs_grad=True, requires=(OPACUS.name,)),
    Transform("opacus_functorch", opacus_functorch, ("preserves_grad",) + SAMPLES, failure_cause="opacus-failed",
              needs_params=True, needs_grad=True, requires=(OPACUS.name,)),
    Transform("jvp", jvp, ("preserves_grad",) + LEAK, failure_cause="jvp-unsupported", needs_grad=True),
)
