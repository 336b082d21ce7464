"""Eval mode: the module after ``eval()``, as users call it for inference, judged by what the spec says eval mode
computes (what training mode computes, unless the subject declares ``eval_hyper``)."""

from __future__ import annotations

import torch
from torch import nn

from ..core.types import Spec, Subject
from .eager import modified_input
from .harness import (
    FORWARD_GRAD,
    Context,
    Transform,
    TransformRun,
    build,
    eager,
    run_forward_backward,
    snapshot,
    snapshot_buffers,
    stage,
)

#: where this transform stands in the table (and the report's columns): beside eager
ORDER = 1


def _in_eval(ctx: Context) -> nn.Module:
    module = build(ctx)
    with stage("eval"):
        module.eval()  # what eval() returns is module_contract's to judge; the module itself is used here
    return module


def eval_mode(ctx: Context) -> TransformRun:
    """After eval(): forward and gradient as in training mode (or as built with the subject's ``eval_hyper``), the
    input intact, and no parameter or buffer changed by a forward (a neuron's state only as in training mode)."""
    module = _in_eval(ctx)
    before = snapshot(module)
    result = run_forward_backward(ctx, module, module, name="eval")
    example = ctx.example
    if ctx.subject.eval_hyper:
        example = example._replace(hyper={**example.hyper, **ctx.subject.eval_hyper})
    twin = build(ctx, example)
    result.against = eager(ctx, twin)
    # a neuron's membrane moves in eval mode as in training mode; running statistics or an observer's range do not
    carried = snapshot_buffers(twin) if ctx.time_dim is not None else {}
    buffers = {name for name, _ in module.named_buffers()}
    current = snapshot(module)
    changed = []
    for name, old in before.items():
        new = current.get(name)
        if new is None or (new.shape == old.shape and torch.equal(new, old)):
            continue
        twin_value = carried.get(name)
        if name in buffers and twin_value is not None and twin_value.shape == new.shape \
                and torch.equal(twin_value, new):
            continue
        changed.append(f"{name} ({'buffer' if name in buffers else 'Parameter'})")
    result.findings.changed_in_eval = changed
    result.findings.input_modified = modified_input(ctx, _in_eval(ctx))
    return result


#: the project's own modules, which read no mode (suites/meta/test_modes.py holds them to it)
MODELESS_LIBRARIES = ("reference", "kernels")


def _has_modes(subject: Subject, spec: Spec) -> str | None:
    if subject.library in MODELESS_LIBRARIES:
        return (f"{subject.library}'s modules read no mode (no `training`, `train` or `eval` of their own): eval mode "
                "is training mode there")
    return None


TRANSFORMS = (
    # costly: one drawn example beside the spec's edges in CI; the modes found show on the first
    Transform("eval", eval_mode, FORWARD_GRAD + ("input_intact", "eval_keeps_state"),
              failure_cause="module-method-failed", protocol=True, costly=True, applies=_has_modes),
)
