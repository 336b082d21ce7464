"""Round trips that make a second module: deepcopy and pickle (fresh and after a training step), state_dict."""

from __future__ import annotations

import copy
import io
import pickle
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from ..core.causes import TransformFailed
from ..core.types import Example
from .harness import (
    FORWARD_GRAD,
    Context,
    Transform,
    TransformRun,
    after_use,
    build,
    eager,
    reset,
    run_forward_backward,
    stage,
)

#: where these transforms stand in the table (and the report's columns)
ORDER = 10


def _copy_transform(name: str, copier: Callable[[nn.Module], nn.Module],
                    used: bool) -> Callable[[Context], TransformRun]:
    def transform(ctx: Context) -> TransformRun:
        original = build(ctx)
        if used:
            after_use(ctx, original)
        with stage(name):
            clone = copier(original)
        result = run_forward_backward(ctx, clone, clone, name=name)
        result.against = eager(ctx, original)
        result.findings.copy_pair = (original, clone)
        result.findings.continuation = continued_copy(ctx, name, copier, used)
        return result

    transform.__name__ = name
    transform.__doc__ = f"{name}: the copy computes what its original computes next, and shares no tensor with it."
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


@dataclass
class Continuation:
    """A copy taken after ``taken_after`` of a sequence's ``steps`` steps (no reset), and what the copy, its original
    and an undisturbed twin (built and fed alike, never copied) return for the remaining steps."""

    taken_after: int
    steps: int
    copy: torch.Tensor
    original: torch.Tensor
    undisturbed: torch.Tensor


def continued_copy(ctx: Context, name: str, copier: Callable[[nn.Module], nn.Module],
                   used: bool) -> Continuation | TransformFailed | None:
    """For a subject whose state persists between calls: the copy taken in the middle of a sequence, fed the rest of
    it beside its original. The state held at that point (a membrane) is the copy's to carry, as users copy a model
    mid-sequence (a snapshot, a beam, a checkpoint). Fed under no_grad, so the state held is a leaf (a used module's
    non-leaf state is the ``*_used`` columns' finding); the failure of taking the copy is kept for the check that
    judges it, not raised into the cell's other checks."""
    if not ctx.persistent:
        return None
    steps = ctx.steps()
    taken_after = len(steps) // 2
    try:
        original, twin = build(ctx), build(ctx)
        if used:
            after_use(ctx, original)
            after_use(ctx, twin)
        with torch.no_grad():
            for module in (original, twin):
                reset(ctx, module)
                for step in steps[:taken_after]:
                    with stage("forward"):
                        module(step)
            with stage(name):
                clone = copier(original)

            def rest(module: nn.Module) -> torch.Tensor:
                with stage("forward"):
                    return torch.cat([module(step) for step in steps[taken_after:]], dim=ctx.time_dim)

            return Continuation(taken_after, len(steps), rest(clone), rest(original), rest(twin))
    except TransformFailed as failure:
        return failure


def perturbed(example: Example, names, factor: float = 0.9) -> Example:
    """The same example with the parameters ``names`` scaled by ``factor`` (stays inside decay/positivity
    domains)."""
    return example._replace(params={k: v * factor if k in names else v for k, v in example.params.items()})


def state_dict_roundtrip(ctx: Context) -> TransformRun:
    """load_state_dict of a used module into a fresh one built with other parameter values makes it compute what
    the source computes next. The comparison is with the source's own next call, not a fresh module: what use
    changed in buffers (running statistics, a scale initialised from the first batch) is the state_dict's to carry.
    (Values a library keeps outside its parameters, as constructor arguments, are not: the target is built with
    them unchanged.)"""
    source = build(ctx)
    after_use(ctx, source)
    target = build(ctx, perturbed(ctx.example, ctx.subject.param_map))
    with stage("state_dict"):
        state = source.state_dict()
        target.load_state_dict(state)
    result = run_forward_backward(ctx, target, target, name="state_dict")
    result.against = eager(ctx, source)
    result.findings.continuation = continued_copy(ctx, "state_dict", lambda module: _loaded_into_fresh(ctx, module),
                                                  used=True)
    return result


def _loaded_into_fresh(ctx: Context, source: nn.Module) -> nn.Module:
    target = build(ctx, perturbed(ctx.example, ctx.subject.param_map))
    target.load_state_dict(source.state_dict())
    return target


COPY_CHECKS = FORWARD_GRAD + ("copy_independent", "continues_mid_sequence")
TRANSFORMS = (
    Transform("deepcopy", deepcopy, COPY_CHECKS, failure_cause="deepcopy-failed", protocol=True),
    Transform("deepcopy_used", deepcopy_used, COPY_CHECKS, failure_cause="deepcopy-failed", protocol=True),
    Transform("pickle", pickle_roundtrip, COPY_CHECKS, failure_cause="pickle-failed", protocol=True),
    Transform("pickle_used", pickle_used, COPY_CHECKS, failure_cause="pickle-failed", protocol=True),
    Transform("state_dict", state_dict_roundtrip, FORWARD_GRAD + ("continues_mid_sequence",),
              failure_cause="state-dict-mismatch",
              protocol=True),
)
