"""The module as built, called directly: the cells that judge a subject against its spec."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from .harness import Context, Transform, TransformRun, build, drive, eager, stage, tensor_state

#: where these transforms stand in the table (and the report's columns)
ORDER = 0


def eager_transform(ctx: Context) -> TransformRun:
    """The module as built, called directly; run twice to check determinism (a stateful subject is reset between
    the two sequences, as its users reset it). A subject whose state persists between calls is fed one step per
    call, its one-call view (``Subject.build``) the whole sequence in one call, and what its calls return is
    changed in place to see whether it is the module's own state."""
    module = build(ctx)
    first = eager(ctx, module)
    second = eager(ctx, module)
    first.findings.second_call = second.y
    first.findings.input_modified = modified_input(ctx, build(ctx))
    if ctx.persistent:
        whole = build(dataclasses.replace(ctx, persistent=False))  # the subject's one-call view
        with stage("forward"), torch.no_grad():
            first.findings.one_call = whole(ctx.input()).detach()
        first.findings.aliased = returned_state(ctx, build(ctx))
    return first


def modified_input(ctx: Context, module: nn.Module) -> list[str]:
    """Fed its input as another layer's output (not a leaf of the graph, so autograd lets an in-place op on it
    pass), what the module's forward changed of it: an in-place clamp or sign on the input clobbers a tensor the
    caller or a residual connection still reads."""
    given = ctx.input()
    source = given.clone().requires_grad_(ctx.differentiable and given.is_floating_point())
    x = source * 1 if source.requires_grad else source.clone()
    before = x.detach().clone()
    drive(ctx, module, x, module)
    after = x.detach()
    same = (after == before) | (after.isnan() & before.isnan()) if after.is_floating_point() else after == before
    changed = int((~same).sum())
    return [f"{changed} of {after.numel()} elements changed, the first at index "
            f"{tuple(int(i) for i in (~same).nonzero()[0])}"] if changed else []


def returned_state(ctx: Context, module: nn.Module) -> list[str]:
    """Fed one step per call, which of the tensors the module and its submodules return is the module's own state:
    each, in turn, is changed in place after the call (as a user's ``spk.mul_(mask)`` would), and any change that
    shows in the module's state is named."""
    returned: list[tuple[str, torch.Tensor]] = []

    def capture(name: str):
        def hook(_module, _inputs, output):
            for i, t in enumerate(output if isinstance(output, (tuple, list)) else (output,)):
                if isinstance(t, torch.Tensor) and t.is_floating_point():
                    returned.append((f"{name}[{i}]" if isinstance(output, (tuple, list)) else name, t))
        return hook

    handles = [m.register_forward_hook(capture(n or "<subject>")) for n, m in module.named_modules()]
    found: list[str] = []
    try:
        with torch.no_grad():
            for call, step in enumerate(ctx.steps(), start=1):
                returned.clear()
                with stage("forward"):
                    module(step)
                for name, t in returned:
                    before = {path: s.detach().clone() for path, s in tensor_state(module).items()}
                    try:
                        t.add_(1.0)
                    except RuntimeError:
                        continue  # a tensor no in-place op may change (an expanded view): nothing a user can do
                    changed = [path for path, s in tensor_state(module).items() if path in before
                               and s.shape == before[path].shape and not torch.equal(s.detach(), before[path])]
                    t.sub_(1.0)
                    if changed:
                        found.append(f"call {call}: an in-place op on what {name} returned changed the module's "
                                     f"state {', '.join(changed[:3])}")
                if found:
                    break
    finally:
        for handle in handles:
            handle.remove()
    return found


TRANSFORMS = (
    Transform("eager", eager_transform,
              ("forward_matches_spec", "grad_matches_spec", "output_dtype", "deterministic", "input_intact",
               "calls_compose", "returns_no_state"),
              dtypes=("float32", "float64", "bfloat16"), protocol=True),
)
