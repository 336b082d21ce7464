"""Custom gradients that stay clean under every transform, eager forward-mode included.

PyTorch constraint (torch 2.11-2.13): dynamo cannot trace a ``torch.autograd.Function`` that defines a custom
``jvp`` ("Unsupported custom jvp"), while ``torch.func.jvp`` needs one. So each custom gradient gets two
Function classes sharing one forward and one plain ``*_grad`` formula: one with ``jvp`` for eager and torch.func,
one without for torch.compile / torch.export tracing. :func:`custom_gradient` builds both and picks by
``torch.compiler.is_compiling()``; both have ``setup_context`` and ``generate_vmap_rule = True``.
"""

from __future__ import annotations

from typing import Callable

import torch


def custom_gradient(name: str, forward: Callable[..., torch.Tensor],
                    derivative: Callable[..., torch.Tensor], *, n_tensor_args: int = 1) -> Callable[..., torch.Tensor]:
    """An elementwise op with output ``forward(x, *consts)`` and d output / d x = ``derivative(x, *consts)``.

    Only ``x`` (the first argument) receives a gradient; the remaining ``consts`` are Python values or tensors
    treated as constants (their gradient is ``None``). Backward: ``grad_x = grad_out * derivative(x, *consts)``;
    forward mode: ``tangent_out = derivative(x, *consts) * tangent_x``.
    """

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])
        ctx.consts = inputs[1:]

    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return (grad_out * derivative(x, *ctx.consts),) + (None,) * len(ctx.consts)

    def jvp(ctx, tangent_x, *tangent_consts):
        (x,) = ctx.saved_tensors
        return derivative(x, *ctx.consts) * tangent_x

    body = {
        "forward": staticmethod(lambda x, *consts: forward(x, *consts)),
        "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward),
        "generate_vmap_rule": True,
    }
    traced = type(f"{name}Traced", (torch.autograd.Function,), dict(body))
    eager = type(name, (torch.autograd.Function,), dict(body, jvp=staticmethod(jvp)))

    def apply(x: torch.Tensor, *consts) -> torch.Tensor:
        fn = traced if torch.compiler.is_compiling() else eager
        return fn.apply(x, *consts)

    apply.__name__ = name
    apply.eager_function = eager
    apply.traced_function = traced
    return apply
