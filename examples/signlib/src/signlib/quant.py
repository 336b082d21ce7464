"""Binarization with a straight-through estimator."""

import torch
from torch import nn


class _SignFunction(torch.autograd.Function):
    """sign(x) with sign(0) = +1; the gradient passes unchanged (identity STE).

    Written in the old style (``forward(ctx, x)``, no ``setup_context``) on purpose: torch.func's transforms
    (vmap, grad, jvp) refuse such a Function. The example declares this as a known failure.
    """

    @staticmethod
    def forward(ctx, x):
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class SignSTE(nn.Module):
    """Binarize to -1/+1 (0 maps to +1); backward is the identity."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _SignFunction.apply(x)
