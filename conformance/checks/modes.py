"""Checks of eval mode: a forward in eval mode leaves the module's state as it was."""

from __future__ import annotations

from ..core.causes import CheckFailed
from ..transforms import Context, TransformRun
from .harness import Check, Truth


def check_eval_keeps_state(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """A forward in eval mode changes no parameter and no buffer (running statistics, an observer's range, a scale
    being calibrated): inference must not move what training learned. A stateful subject's state carried between
    calls (a membrane) changes in eval mode as in training mode."""
    changed = out.findings.changed_in_eval
    if changed is None:
        raise RuntimeError(f"{transform} recorded no state before and after an eval forward")
    if changed:
        raise CheckFailed("state-changed-in-eval", f"a forward in eval mode changed {len(changed)} tensor(s) of the "
                          f"module: {', '.join(changed[:5])}")
    return 0


CHECKS = (Check("eval_keeps_state", check_eval_keeps_state),)
