"""Saved and loaded as users ship weights: the state_dict through ``torch.save`` / ``torch.load(weights_only=True)``
into a freshly built module (strict, and with ``assign=True``), and through safetensors.

The module loaded into is built for other parameter values and every floating-point tensor of its state_dict is
then scaled, so a load that leaves a tensor as it was (a key ignored, a buffer dropped on the way) shows in what the
loaded module computes. It is judged against the source module's own run (the eager cells judge that one against
the spec on the same example).
"""

from __future__ import annotations

import contextlib
import io
from typing import Callable

import torch
from torch import nn

from ..core.types import Library
from .copies import perturbed
from .harness import (
    FORWARD_GRAD,
    Context,
    Transform,
    TransformRun,
    _memory,
    build,
    eager,
    run_forward_backward,
    stage,
)

#: where these transforms stand in the table (and the report's columns): after the copies' state_dict
ORDER = 11

#: safetensors' own format; no dependencies (the ``safetensors`` extra). Its cells skip where it is missing.
SAFETENSORS = Library("safetensors", "safetensors", "0.8.0", no_deps=True, gpu=False)

#: what a freshly built target's floating-point state is scaled by before loading (inside every decay and
#: positivity domain, as ``perturbed``'s factor)
DISPLACEMENT = 0.9


def displaced_target(ctx: Context, source: nn.Module) -> nn.Module:
    """A fresh module for other parameter values, every plain floating-point tensor of its state_dict scaled in
    place: each one a load leaves alone keeps a value the source does not have. A tensor whose memory the source
    holds too (a default argument's tensor every build shares, which module_contract reports) is left as it is:
    scaling it would change the source and every later build."""
    target = build(ctx, perturbed(ctx.example, ctx.subject.param_map))
    shared = {_memory(t) for t in source.state_dict(keep_vars=True).values() if isinstance(t, torch.Tensor)}
    with torch.no_grad():
        for t in target.state_dict(keep_vars=True).values():
            if type(t) in (torch.Tensor, nn.Parameter) and t.is_floating_point() and _memory(t) not in shared:
                # a tensor made under inference_mode (hqq's scales and zeros) is updated in place only there
                with torch.inference_mode() if t.is_inference() else contextlib.nullcontext():
                    try:
                        t.mul_(DISPLACEMENT)
                    except NotImplementedError:  # float8 codes (quanto's qfloat8 weight) have no CPU arithmetic
                        t.copy_(t.to(torch.float32) * DISPLACEMENT)
    return target


def through_torch_save(state: dict) -> dict:
    """``state`` written by ``torch.save`` and read back by ``torch.load(weights_only=True)`` (torch's default
    since 2.6, what users' loads do)."""
    buffer = io.BytesIO()
    with stage("torch_save"):
        torch.save(state, buffer)
    buffer.seek(0)
    with stage("torch_load"):
        return torch.load(buffer, weights_only=True)


def through_safetensors(state: dict) -> dict:
    """``state`` written by ``safetensors.torch.save`` and read back by ``safetensors.torch.load``."""
    from safetensors.torch import load, save

    with stage("safetensors_save"):
        data = save(state)
    with stage("safetensors_load"):
        return load(data)


def not_assigned(module: nn.Module, loaded: dict, parameters_before: dict[str, bool]) -> list[str]:
    """What ``load_state_dict(loaded, assign=True)`` left otherwise than documented: a parameter or buffer that does
    not hold the loaded tensor's memory, or a parameter that is no Parameter any more or changed ``requires_grad``
    (``parameters_before``: name -> requires_grad before loading)."""
    held = dict(module.named_parameters(remove_duplicate=False))
    held.update(module.named_buffers(remove_duplicate=False))
    found = []
    for name, tensor in loaded.items():
        mine = held.get(name)
        if name in parameters_before:
            if not isinstance(mine, nn.Parameter):
                found.append(f"{name}: a Parameter before loading, {type(mine).__name__} after")
                continue
            if mine.requires_grad != parameters_before[name]:
                found.append(f"{name}: requires_grad {parameters_before[name]} before loading, {mine.requires_grad} "
                             "after")
        if isinstance(mine, torch.Tensor) and isinstance(tensor, torch.Tensor) \
                and _memory(tensor) is not None and _memory(mine) != _memory(tensor):
            found.append(f"{name}: does not hold the loaded tensor")
    return found


class NotAssigned(AssertionError):
    """A module's tensors after ``load_state_dict(assign=True)`` are not the loaded ones."""


def _load_transform(name: str, carry: Callable[[dict], dict], assign: bool) -> Callable[[Context], TransformRun]:
    def transform(ctx: Context) -> TransformRun:
        source = build(ctx)
        with stage(name):
            state = source.state_dict()
        loaded = carry(state)
        against = eager(ctx, source)
        target = displaced_target(ctx, source)
        parameters_before = {n: p.requires_grad for n, p in target.named_parameters(remove_duplicate=False)}
        with stage(name):
            target.load_state_dict(loaded, assign=assign)
        if assign:
            wrong = not_assigned(target, loaded, parameters_before)
            if wrong:
                with stage("assigned"):
                    raise NotAssigned("; ".join(wrong))
        result = run_forward_backward(ctx, target, target, name=name)
        result.against = against
        return result

    transform.__name__ = name
    return transform


save_load = _load_transform("save_load", through_torch_save, assign=False)
save_load.__doc__ = ("torch.save of the state_dict, torch.load(weights_only=True), load_state_dict (strict) into a "
                     "fresh module built for other values: it computes what the source computes.")
load_assign = _load_transform("load_assign", through_torch_save, assign=True)
load_assign.__doc__ = ("As save_load with load_state_dict(assign=True): the module then holds the loaded tensors, "
                       "its parameters still Parameters, and computes what the source computes.")
safetensors_roundtrip = _load_transform("safetensors", through_safetensors, assign=False)
safetensors_roundtrip.__doc__ = ("The state_dict through safetensors.torch.save / load, loaded (strict) into a fresh "
                                 "module built for other values: it computes what the source computes.")

#: torch.save pickles: its failures are pickle's
_LOAD_CAUSES = {"torch_save": "pickle-failed", "torch_load": "weights-only-load-failed"}
TRANSFORMS = (
    Transform("save_load", save_load, FORWARD_GRAD, failure_cause="state-dict-mismatch", protocol=True,
              stage_causes=_LOAD_CAUSES),
    Transform("load_assign", load_assign, FORWARD_GRAD, failure_cause="state-dict-mismatch", protocol=True,
              stage_causes={**_LOAD_CAUSES, "assigned": "assign-not-loaded"}),
    Transform("safetensors", safetensors_roundtrip, FORWARD_GRAD, failure_cause="state-dict-mismatch",
              protocol=True, requires=("safetensors",),
              stage_causes={"safetensors_save": "safetensors-refused", "safetensors_load": "safetensors-refused"}),
)
