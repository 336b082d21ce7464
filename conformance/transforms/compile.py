"""torch.compile(fullgraph=True): aot_eager, inductor, dynamic shapes; dynamo's own account of graph breaks."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from ..core.causes import TransformFailed
from .harness import (
    FORWARD_GRAD,
    Context,
    Transform,
    TransformRun,
    build,
    drive,
    eager,
    leaks,
    run_forward_backward,
    stage,
)

#: where these transforms stand in the table (and the report's columns)
ORDER = 30


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


def _compile_transform(name: str, backend: str, dynamic: bool | None, *,
                       explain: bool) -> Callable[[Context], TransformRun]:
    def transform(ctx: Context) -> TransformRun:
        import torch._dynamo

        module = build(ctx)
        before = ctx.watch(module)
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
                y2 = drive(ctx, compiled, x2, module, name=name).detach()
                result.findings.second_shape = (y2, eager(ctx, x=x2).y)
            # fullgraph=True captured the whole forward in one graph: dynamo found no break to count.
            breaks = (0, [])
        except TransformFailed as failure:
            if not explain:
                raise
            # dynamo's own account of the failure (count and reasons of every break) for no_graph_breaks, from a
            # fresh instance: only asked when fullgraph failed, since a fullgraph success means no break.
            with stage("explain"):
                breaks = graph_breaks(build(ctx), ctx.input())
            result = TransformRun()
            result.findings.failure = failure
        result.against = eager(ctx)
        result.findings.leaks = leaks(module, *before)
        result.findings.graph_breaks = breaks if explain else None
        return result

    transform.__name__ = name
    transform.__doc__ = f"torch.compile(fullgraph=True, backend={backend!r}, dynamic={dynamic}) forward+backward."
    return transform


compile_aot_eager = _compile_transform("compile_aot_eager", "aot_eager", None, explain=True)
compile_inductor = _compile_transform("compile_inductor", "inductor", None, explain=False)
# Dynamic shapes are a capture question (dynamo + AOT autograd with symbolic sizes); inductor's code generation is
# covered by compile_inductor, and inductor with dynamic=True costs ~20 s per subject on CPU.
compile_dynamic = _compile_transform("compile_dynamic", "aot_eager", True, explain=True)


TRANSFORMS = (
    Transform("compile_aot_eager", compile_aot_eager, FORWARD_GRAD + ("no_graph_breaks",),
              failure_cause="compile-failed", compiles=True, protocol=True),
    # inductor generates code for every graph (cold: 3-35 s a cell on the CPU, its Python code generation, not the
    # C++ compiler) and compile_dynamic captures twice: one example each in the CI profile (the spec's edge example);
    # compile_aot_eager takes the capture over the drawn hyperparameters (docs/speed.md)
    Transform("compile_inductor", compile_inductor, FORWARD_GRAD, failure_cause="compile-failed", compiles=True,
              costly=True, protocol=True),
    Transform("compile_dynamic", compile_dynamic, ("preserves_forward", "no_graph_breaks"),
              failure_cause="compile-failed", compiles=True, costly=True, protocol=True),
)
