"""The nn.Module contract: the chaining methods return the module itself and leave its behaviour as it was."""

from __future__ import annotations

import torch
from torch import nn

from .harness import FORWARD_GRAD, Context, Transform, TransformRun, build, eager, run_forward_backward, stage

#: where this transform stands in the table (and the report's columns)
ORDER = 15


def _chain(ctx: Context) -> tuple[tuple[str, object], ...]:
    """(label, call) of every chaining method a user's code relies on, in an order that ends where it started:
    on the cell's device, in the cell's dtype (training modes and which parameters are trainable are put back
    after, as built)."""
    device, dtype = ctx.device, ctx.dtype
    name = str(dtype).removeprefix("torch.")
    to_device = ("cuda()", lambda m: m.cuda()) if device.type == "cuda" else ("cpu()", lambda m: m.cpu())
    return (
        ("eval()", lambda m: m.eval()),
        ("train(False)", lambda m: m.train(False)),
        ("train()", lambda m: m.train()),
        ("requires_grad_(False)", lambda m: m.requires_grad_(False)),
        ("double()", lambda m: m.double()),
        ("float()", lambda m: m.float()),
        (f"to({name})", lambda m: m.to(dtype)),
        (f"to('{device.type}')", lambda m: m.to(device)),
        to_device,
        (f"to('{device.type}', {name})", lambda m: m.to(device, dtype)),
    )


def shared_between(module: nn.Module, other: nn.Module) -> list[str]:
    """The submodules of ``module`` that ``other``, built separately, holds as the very same instance (a default
    argument evaluated once, a class attribute, a cached part), as "name (Type)"."""
    theirs = {id(m) for m in other.modules()}
    return [f"{name or '<the module itself>'} ({type(m).__name__})" for name, m in module.named_modules()
            if id(m) in theirs]


def module_contract(ctx: Context) -> TransformRun:
    """eval(), train(), requires_grad_(), double(), float(), to(dtype/device) and cpu()/cuda() return the module
    itself (user code chains them: ``model = Net().eval().to(device)``), and after a round trip through them it
    computes what a fresh module computes. Two modules built separately share no submodule."""
    module = build(ctx)
    shared = shared_between(module, build(ctx))
    trainable = [(p, p.requires_grad) for p in module.parameters()]
    modes = [(m, m.training) for m in module.modules()]
    returned_other = []
    for label, call in _chain(ctx):
        with stage("module_contract"):
            returned = call(module)
        if returned is not module:
            returned_other.append(f"{label} -> {type(returned).__module__}.{type(returned).__qualname__}")
    for p, flag in trainable:  # as built: a parameter the library keeps frozen stays frozen
        p.requires_grad_(flag)
    for m, training in modes:  # and each submodule in the mode it was built in (BatchNorm in eval, say)
        m.training = training
    result = run_forward_backward(ctx, module, module, name="module_contract")
    result.against = eager(ctx)
    result.findings.returned_other = returned_other
    result.findings.shared_between_builds = shared
    return result


TRANSFORMS = (
    Transform("module_contract", module_contract, FORWARD_GRAD + ("module_contract", "independent_builds"),
              failure_cause="module-method-failed", protocol=True),
)
