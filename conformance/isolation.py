"""Process-wide state a transform can leave behind, and putting it back so the next cell is judged on its own.

Cells share a worker process. A transform that leaves a global ``nn.Module`` hook installed, gradients switched
off or the default dtype changed would change the outcome of every later cell in that worker, and the matrix would
depend on which cells xdist happened to give the worker. Found on torch 2.11: a ``torch.export`` that fails while
tracing leaves the global buffer-registration hook of its non-strict mode installed (the hook's removal is not in a
``finally`` there; it is on 2.13), and every later ``torch.compile(fullgraph=True)`` of a module that assigns a
buffer in ``forward`` (snntorch's ``init_hidden`` neurons) stops at a graph break inside that hook.

``snapshot()`` before a transform and ``restore(snapshot)`` after it: what ``restore`` had to undo is returned as
readable lines; the runner adds them to the transform's leaks (``no_state_leak`` fails on them) and to the record.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.modules.module as module_globals

#: The ``torch.nn.modules.module`` dicts that hold hooks for every module in the process.
_HOOK_DICTS = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_forward_hooks_with_kwargs",
               "_global_forward_hooks_always_called", "_global_backward_pre_hooks", "_global_backward_hooks",
               "_global_buffer_registration_hooks", "_global_module_registration_hooks",
               "_global_parameter_registration_hooks")


@dataclass(frozen=True)
class Snapshot:
    hooks: dict[str, frozenset]
    grad_enabled: bool
    default_dtype: torch.dtype


def _hook_dicts() -> dict[str, dict]:
    return {name: getattr(module_globals, name) for name in _HOOK_DICTS if isinstance(
        getattr(module_globals, name, None), dict)}


def snapshot() -> Snapshot:
    return Snapshot({name: frozenset(hooks) for name, hooks in _hook_dicts().items()}, torch.is_grad_enabled(),
                    torch.get_default_dtype())


def _describe(hook) -> str:
    return getattr(hook, "__qualname__", None) or type(hook).__name__


def restore(before: Snapshot) -> list[str]:
    """Undo what changed since ``before``; one line per thing undone (empty when nothing had changed)."""
    undone = []
    for name, hooks in _hook_dicts().items():
        added = [key for key in hooks if key not in before.hooks.get(name, frozenset())]
        for key in added:
            hook = hooks.pop(key)
            if name not in ("_global_forward_hooks_with_kwargs", "_global_forward_hooks_always_called"):
                undone.append(f"global hook left installed in torch.nn.modules.module.{name}: {_describe(hook)}")
    if torch.is_grad_enabled() != before.grad_enabled:
        undone.append(f"grad mode left {'on' if torch.is_grad_enabled() else 'off'}")
        torch.set_grad_enabled(before.grad_enabled)
    if torch.get_default_dtype() != before.default_dtype:
        undone.append(f"default dtype left as {torch.get_default_dtype()}")
        torch.set_default_dtype(before.default_dtype)
    return undone
