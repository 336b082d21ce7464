"""Checks of what a module holds: a copy is independent of its original, a transform leaves the module's state as
it was, recomputation (checkpoint) does not advance the state twice."""

from __future__ import annotations

import torch

from ..core.causes import CheckFailed, TransformFailed
from ..transforms import Context, TransformRun
from ..transforms.harness import drive, foreign_tensor, same_values, tensor_state
from .harness import Check, Failures, Truth, by_call, compare, tie_margin, time_dim, tol


def check_copy_independent(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The copy shares no tensor storage with the original, and mutating the copy leaves the original's
    output unchanged."""
    if out.findings.copy_pair is None:
        raise RuntimeError(f"{transform} recorded no (original, copy) pair")
    original, clone = out.findings.copy_pair
    # a quantized weight (wrapper subclass) has no storage of its own: the tensors it wraps are compared and changed
    orig_state, clone_state = plain_tensors(tensor_state(original)), plain_tensors(tensor_state(clone))
    ptrs = {}
    for path, t in orig_state.items():
        if t.numel() and foreign_tensor(t) is None and t.device.type != "meta":
            ptrs.setdefault(t.untyped_storage().data_ptr(), path)
    for path, t in clone_state.items():
        if t.numel() and foreign_tensor(t) is None and t.untyped_storage().data_ptr() in ptrs:
            raise CheckFailed("copy-shares-state", f"copy's {path} shares storage with original's "
                              f"{ptrs[t.untyped_storage().data_ptr()]}")
    x = ctx.input()
    arithmetic = (torch.float16, torch.bfloat16, torch.float32, torch.float64)  # not fp8 codes: they have no add_
    changed = [p for p in plain_tensors(dict(clone.named_parameters())).values() if p.dtype in arithmetic]
    saved = [p.detach().clone() for p in changed]
    with torch.no_grad():
        before = drive(ctx, original, x, original).detach().clone()
        try:
            for p in changed:
                p.add_(0.5)
            after = drive(ctx, original, x, original).detach()
        finally:  # the run is shared with the other checks of this cell: leave it as found
            for p, value in zip(changed, saved):
                p.copy_(value)
    if not same_values(before, after):
        raise CheckFailed("copy-shares-state", "changing the copy's parameters changed the original's output")
    return 0


def check_continues_mid_sequence(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """A copy taken in the middle of a sequence (no reset) continues it as its original does: the state held at that
    point travels with the copy; and taking the copy leaves the original's continuation as an undisturbed twin's
    (which the eager cells judge against the spec)."""
    found = out.findings.continuation
    if found is None:
        raise RuntimeError(f"{transform} made no mid-sequence copy for continues_mid_sequence")
    if isinstance(found, TransformFailed):
        raise found
    at = f"taken after {found.taken_after} of {found.steps} steps"
    where = dict(tol=tol(ctx, transform, "continues_mid_sequence"), time_dim=time_dim(ctx), batch_dim=ctx.batch_dim)
    # both against the twin: a copy that took the state away from its original is the original's finding
    failures = Failures()
    failures.judge(lambda: compare(found.copy, found.undisturbed, cause="copy-lost-state",
                                   what=f"the copy {at} vs its original's continuation (a twin never "
                                        "copied), on the remaining steps", **where))
    failures.judge(lambda: compare(found.original, found.undisturbed, cause="copy-changed-original",
                                   what=f"the original after a copy {at} vs a twin never copied, on the remaining "
                                        "steps", **where))
    failures.raise_first()
    return 0


def check_no_state_leak(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The transform left the module's own parameters, buffers, .grad and hidden state as they were: no
    batched/tracer/fake tensors, no changed values."""
    problems = out.findings.leaks
    if problems:
        raise CheckFailed("state-leak", f"{transform} left {len(problems)} problem(s) in the module: "
                          + "; ".join(problems[:5]))
    return 0


def left_after_failure(transform: str, failure: TransformFailed) -> list[CheckFailed]:
    """After the transform raised: what it left in the module (a user who catches the error keeps the module)."""
    left = failure.left_in_module
    if not left:
        return []
    return [CheckFailed("state-leak", f"after it raised, {transform} left {len(left)} problem(s) in the module: "
                        + "; ".join(left[:5]))]


def plain_tensors(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state`` with every wrapper tensor subclass (quanto's quantized weights, whose dtype cannot be changed, so
    ``.double()`` raises) replaced by the tensors it wraps (``__tensor_flatten__``), as ``<path>.<inner name>``."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    found: dict[str, torch.Tensor] = {}
    for path, t in state.items():
        if is_traceable_wrapper_subclass(t):
            names, _ = t.__tensor_flatten__()
            found.update(plain_tensors({f"{path}.{name}": getattr(t, name) for name in names}))
        else:
            found[path] = t
    return found


def check_state_matches_eager(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """After forward+backward, the module holds the same hidden state as after an eager forward+backward."""
    if out.findings.state_pair is None:
        raise RuntimeError(f"{transform} recorded no (eager, transformed) state pair")
    twin, module = out.findings.state_pair
    expected, actual = plain_tensors(tensor_state(twin)), plain_tensors(tensor_state(module))
    for path, t in expected.items():
        other = actual.get(path)
        if other is None or other.shape != t.shape or not torch.allclose(other.detach().double(),
                                                                         t.detach().double(), atol=1e-6,
                                                                         rtol=1e-5, equal_nan=True):
            raise CheckFailed("state-advanced-twice", f"state {path!r} after {transform} differs from eager")
    return 0


def check_calls_compose(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """Fed one time step per call, the module computes what the subject computes fed the whole sequence in one call
    (its one-call view, ``Subject.build``): the state carries over from call to call (``deterministic`` judges that
    a reset starts it again from rest)."""
    whole = out.findings.one_call
    if whole is None:
        raise RuntimeError(f"{transform} made no one-call run for calls_compose")
    margin = truth.margin if truth.margin is not None and truth.margin.shape == whole.shape else None
    try:
        return compare(out.y, whole, tol=tol(ctx, transform, "calls_compose"), cause="state-lost-between-calls",
                       what="one step per call vs the whole sequence in one call", margin=margin,
                       tie=tie_margin(ctx), time_dim=time_dim(ctx), batch_dim=ctx.batch_dim)
    except CheckFailed as failure:
        raise by_call(ctx, out, failure) from None


def check_returns_no_state(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """No tensor the module (or a submodule) returns is its own state: an in-place op on a returned spike or
    membrane leaves what the next call computes as it was."""
    if out.findings.aliased is None:
        raise RuntimeError(f"{transform} made no aliasing run for returns_no_state")
    if out.findings.aliased:
        raise CheckFailed("output-aliases-state", "; ".join(out.findings.aliased[:3]))
    return 0


def check_input_intact(ctx: Context, out: TransformRun, truth: Truth, transform: str) -> int:
    """The module leaves its input as it was given: it is the previous layer's output, which the caller or a
    residual connection may read again."""
    if out.findings.input_modified is None:
        raise RuntimeError(f"{transform} made no run with an input to watch for input_intact")
    if out.findings.input_modified:
        raise CheckFailed("input-modified", "the forward changed its input in place: "
                          + "; ".join(out.findings.input_modified))
    return 0


CHECKS = (
    Check("input_intact", check_input_intact),
    Check("copy_independent", check_copy_independent),
    Check("continues_mid_sequence", check_continues_mid_sequence, needs_protocol=True),
    Check("no_state_leak", check_no_state_leak, after_failure=left_after_failure),
    Check("state_matches_eager", check_state_matches_eager),
    Check("calls_compose", check_calls_compose, needs_protocol=True),
    Check("returns_no_state", check_returns_no_state, needs_protocol=True),
)
