"""Tracing and scripting into a graph: TorchScript (script, trace) and torch.export."""

from __future__ import annotations

import torch

from .harness import (
    FORWARD_GRAD,
    Context,
    Transform,
    TransformRun,
    build,
    drive,
    eager,
    leaks,
    reset,
    run_forward_backward,
    snapshot_buffers,
    stage,
)

#: where these transforms stand in the table (and the report's columns)
ORDER = 40


def example_input(ctx: Context) -> torch.Tensor:
    """What a graph is traced or exported with: the input, or its first time step for a module fed one step per
    call (which then starts the driven sequence from the state its reset leaves, where it can still be reset)."""
    return ctx.steps()[0] if ctx.persistent else ctx.input()


def other_input(ctx: Context) -> torch.Tensor:
    """A second input of the same shape, different values: exposes data-dependent branches frozen by tracing."""
    return (ctx.input() * -1.3).flip(ctx.batch_dim)


def script_afresh(module: torch.nn.Module) -> torch.jit.ScriptModule:
    """torch.jit.script(module), whose failure is the same whatever was scripted before in this process.

    TorchScript keeps the type it compiles for each module class in a process-wide store, also when compiling it
    failed half way; scripting that class again then fails on the half-defined type ("Can't redefine method:
    forward on class ...") instead of on its real error. A failure here forgets the types of the module's classes.
    """
    try:
        return torch.jit.script(module)
    except Exception:
        store = getattr(torch.jit._recursive.concrete_type_store, "type_store", {})
        for cls in {type(m) for m in module.modules()}:
            store.pop(cls, None)
        raise


def jit_script(ctx: Context) -> TransformRun:
    """torch.jit.script(module) computes and differentiates like the eager module."""
    module = build(ctx)
    with stage("jit_script"):
        scripted = script_afresh(module)
    result = run_forward_backward(ctx, scripted, scripted, name="jit_script")
    result.against = eager(ctx)
    return result


def jit_trace(ctx: Context) -> TransformRun:
    """torch.jit.trace on one input computes like the eager module on another input of the same shape."""
    module = build(ctx)
    with stage("jit_trace"):
        traced = torch.jit.trace(module, (example_input(ctx),), check_trace=False)
    if ctx.persistent:
        reset(ctx, module)  # tracing ran a step; the traced graph has no reset of its own
    x2 = other_input(ctx)
    result = run_forward_backward(ctx, traced, traced, x2, name="jit_trace")
    result.against = eager(ctx, x=x2)
    return result


def export(ctx: Context) -> TransformRun:
    """torch.export.export(module) runs like the eager module on another input, and leaves the module as an eager
    run leaves it. The exported module shares the source's buffers (torch.export copies none: running the export of
    a BatchNorm updates the source's running statistics), so a buffer the forward updates is no leak when it holds
    what the eager forward leaves."""
    module = build(ctx)
    before = ctx.watch(module)
    with stage("export"):
        program = torch.export.export(module, (example_input(ctx),))
        exported = program.module()
    x2 = other_input(ctx)
    y = drive(ctx, exported, x2, exported, name="export")
    twin = build(ctx)
    result = TransformRun(y=y.detach(), against=TransformRun(y=eager(ctx, twin, x=x2).y))
    result.findings.leaks = leaks(module, *before, eager_buffers=snapshot_buffers(twin))
    return result


TRANSFORMS = (
    Transform("jit_script", jit_script, FORWARD_GRAD, failure_cause="jit-unsupported", protocol=True),
    Transform("jit_trace", jit_trace, FORWARD_GRAD, failure_cause="jit-unsupported", protocol=True),
    Transform("export", export, ("preserves_forward", "no_state_leak"), failure_cause="export-failed", protocol=True),
)
