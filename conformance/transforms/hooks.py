"""What a training loop or a feature extractor does around a module: forward hooks with an in-place op downstream,
activation checkpointing."""

from __future__ import annotations

import torch
from torch import nn

from .harness import Context, HookCapture, Transform, TransformRun, build, eager, run_forward_backward, same_values

#: where these transforms stand in the table (and the report's columns)
ORDER = 50


class InplaceDownstream(nn.Module):
    """The next layer of a real network: an in-place op on the subject's output (as the ReLU(inplace=True) of
    KamitaniLab/bdpy#16)."""

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y.mul_(2.0).add_(1.0) if y.is_floating_point() else y


def forward_hooks(ctx: Context) -> TransformRun:
    """Feature extraction by forward hooks (capture by reference, as extractors without clone do), with an
    in-place op downstream: every captured tensor must still hold the value it had at capture time when the
    subject returns, and gradients through the network must be those of the eager module."""
    module = build(ctx)
    captured: list[tuple[str, torch.Tensor, torch.Tensor]] = []

    def hook(name: str):
        def capture(_mod, _inp, out):
            if isinstance(out, torch.Tensor):
                captured.append((name, out, out.detach().clone()))

        return capture

    handles = [m.register_forward_hook(hook(n or "<subject>")) for n, m in module.named_modules()]
    mutated: list[str] = []

    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            self.subject, self.downstream = module, InplaceDownstream()

        def forward(self, x):
            start = len(captured)  # a module fed one step per call: this call's captures
            y = self.subject(x)
            for name, ref, value in captured[start:]:
                if ref.shape != value.shape or not same_values(ref.detach(), value):
                    mutated.append(name)
            out = self.downstream(y)
            return (out - 1.0) / 2.0 if out.is_floating_point() else out

    try:
        result = run_forward_backward(ctx, Network(), module, name="forward_hooks")
    finally:
        for h in handles:
            h.remove()
    result.against = eager(ctx)
    result.findings.hooks = HookCapture(captured=[n for n, _, _ in captured], mutated=mutated)
    return result


def checkpoint(ctx: Context) -> TransformRun:
    """torch.utils.checkpoint recomputes the forward in backward: gradients and the module state after
    forward+backward equal eager (a stateful module must not advance twice)."""
    from torch.utils.checkpoint import checkpoint as run_checkpointed

    module = build(ctx)
    result = run_forward_backward(ctx, lambda x: run_checkpointed(module, x, use_reentrant=False), module,
                                  name="checkpoint")
    twin = build(ctx)
    result.against = eager(ctx, twin)
    result.findings.state_pair = (twin, module)
    return result


TRANSFORMS = (
    Transform("forward_hooks", forward_hooks, ("hook_capture_intact", "preserves_grad"), protocol=True),
    Transform("checkpoint", checkpoint, ("preserves_grad", "state_matches_eager"), protocol=True),
)
