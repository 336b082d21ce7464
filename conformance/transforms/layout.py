"""The input laid out otherwise in memory: the same values as a strided view, as a slice of a larger tensor hands
them to a layer. A kernel that reads its input's memory as if it were contiguous computes on other values."""

from __future__ import annotations

import torch

from .harness import FORWARD_GRAD, Context, Transform, TransformRun, build, eager, run_forward_backward

#: where this transform stands in the table (and the report's columns): right after eager
ORDER = 1


def strided(x: torch.Tensor) -> torch.Tensor:
    """``x``'s values in a view whose elements lie two apart in memory (``holder[..., 0]`` of a tensor with one
    more axis of size 2): not contiguous whenever ``x`` has more than one element."""
    holder = torch.zeros(*x.shape, 2, dtype=x.dtype, device=x.device)
    holder[..., 0] = x
    return holder[..., 0]


def strided_input(ctx: Context) -> TransformRun:
    """The module given its input as a strided view computes what it computes on the contiguous input, gradients
    included (a persistent subject is fed the view's steps, each strided too)."""
    module = build(ctx)
    result = run_forward_backward(ctx, module, module, strided(ctx.input()), name="strided_input")
    result.against = eager(ctx)
    return result


TRANSFORMS = (
    Transform("strided_input", strided_input, FORWARD_GRAD, failure_cause="strided-input-failed", protocol=True),
)
