"""Feature extraction by forward hooks: what a hook captured is still the layer's output at capture time."""

from __future__ import annotations

from ..core.causes import CheckFailed
from ..transforms import Context, TransformRun
from .harness import Check, Truth


def check_hook_capture_intact(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """Tensors captured by forward hooks (by reference) still hold their capture-time values when the
    subject returns: nothing inside the subject overwrote a hooked output in place."""
    hooks = out.findings.hooks
    if hooks is None:
        raise RuntimeError(f"{transform} recorded no hook captures")
    if not hooks.captured:
        raise CheckFailed("hook-graph-cut", "no forward hook fired: the subject's modules were bypassed")
    if hooks.mislabelled:
        raise CheckFailed("hook-capture-mislabelled", f"the feature(s) returned for {sorted(set(hooks.mislabelled))} "
                          "are not outputs of those layers")
    if hooks.mutated:
        raise CheckFailed("hook-capture-mutated", f"captured output(s) of {sorted(set(hooks.mutated))} were "
                          f"overwritten in place before {hooks.read_at}")
    return 0


CHECKS = (Check("hook_capture_intact", check_hook_capture_intact),)
