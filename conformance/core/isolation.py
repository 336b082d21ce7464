"""Process-wide state a transform can leave behind, and putting it back so the next cell is judged on its own.

Cells share a worker process. A transform that leaves a global ``nn.Module`` hook installed, gradients switched
off or the default dtype changed would change the outcome of every later cell in that worker, and the matrix would
depend on which cells xdist happened to give the worker. Found on torch 2.11: a ``torch.export`` that fails while
tracing leaves the global buffer-registration hook of its non-strict mode installed (the hook's removal is not in a
``finally`` there; it is on 2.13), and every later ``torch.compile(fullgraph=True)`` of a module that assigns a
buffer in ``forward`` (snntorch's ``init_hidden`` neurons) stops at a graph break inside that hook.

``snapshot()`` before a transform and ``restore(snapshot)`` after it: what ``restore`` had to undo is returned as
readable lines; the runner adds them to the transform's leaks (``no_state_leak`` fails on them) and to the record.

Also here: whether a KeyboardInterrupt out of a cell is the user's Ctrl-C (``sigints_counted``, ``stop_requested``),
and running a cell in a forked child (``run_forked``).
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

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
    saved_tensors_hooks: tuple | None = None
    compiler_configs: tuple = ()


#: At most this many saved-tensor hooks are popped to get back to a snapshot's (a bound, not a count anyone reaches).
_MAX_POPS = 64


def _top_saved_tensors_hooks() -> tuple | None:
    """The innermost ``torch.autograd.graph.saved_tensors_hooks`` pair in force (pack, unpack), or None."""
    return torch._C._autograd._top_saved_tensors_default_hooks(True)


def _hook_dicts() -> dict[str, dict]:
    return {name: getattr(module_globals, name) for name in _HOOK_DICTS if isinstance(
        getattr(module_globals, name, None), dict)}


#: Process-wide compiler settings a library may change while it builds a module (torchao's ``quantize_`` sets
#: inductor options and leaves them): put back, so a later compiling cell in the worker compiles with the defaults.
_COMPILER_CONFIGS = ("torch._inductor.config", "torch._dynamo.config")


def _compiler_configs() -> tuple:
    """The settings of the compiler config modules imported so far (importing one costs 0.7 s: a forked cell must
    not pay it; a long-lived process imports them once, ``watch_compiler_configs``)."""
    return tuple((name, sys.modules[name].get_config_copy()) for name in _COMPILER_CONFIGS if name in sys.modules)


def watch_compiler_configs() -> None:
    """Import the compiler config modules, so that every later snapshot in this process holds their settings (for
    processes that run many cells: an xdist worker, --isolation none)."""
    import importlib

    for name in _COMPILER_CONFIGS:
        importlib.import_module(name)


def snapshot() -> Snapshot:
    return Snapshot({name: frozenset(hooks) for name, hooks in _hook_dicts().items()}, torch.is_grad_enabled(),
                    torch.get_default_dtype(), _top_saved_tensors_hooks(), _compiler_configs())


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
    undone += _pop_saved_tensors_hooks(before.saved_tensors_hooks)
    _restore_compiler_configs(before.compiler_configs)
    return undone


def _restore_compiler_configs(saved: tuple) -> None:
    """Put the compiler settings back, silently: a library that sets them is judged by its cells, not by the next
    cell's (an option set on purpose and left is not a leak of the transform under test)."""
    import importlib

    for name, values in saved:
        config = importlib.import_module(name)
        if config.get_config_copy() != values:
            config.load_config(values)


def _pop_saved_tensors_hooks(wanted: tuple | None) -> list[str]:
    """Pop the saved-tensor hooks pushed since the snapshot. They are process-wide: left in force, every later
    backward in the process runs them (torch 2.11's non-reentrant checkpoint leaves its pair pushed when the
    checkpointed forward raises and the exception is kept, so a later cell ran the failed module again)."""
    popped = []
    while len(popped) < _MAX_POPS and _top_saved_tensors_hooks() not in (None, wanted):
        pack, _ = _top_saved_tensors_hooks()
        popped.append(_describe(pack))
        torch._C._autograd._pop_saved_tensors_default_hooks()
    return [f"saved-tensor hooks left in force (torch.autograd.graph.saved_tensors_hooks): {', '.join(popped)}"] \
        if popped else []


# ------------------------------------------------------------------------------------ a stop asked for, or raised
#: SIGINTs received since the innermost sigints_counted() began.
_sigints_received = 0


@contextmanager
def sigints_counted() -> Iterator[None]:
    """Count the SIGINTs this process receives while inside (its handler runs as before), so that
    ``stop_requested`` can tell a user's Ctrl-C from a KeyboardInterrupt that a library raised by itself."""
    global _sigints_received
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous) or threading.current_thread() is not threading.main_thread():
        yield  # ignored, or the process's default end: no SIGINT becomes a KeyboardInterrupt here
        return

    def count_then_handle(signum, frame):
        global _sigints_received
        _sigints_received += 1
        previous(signum, frame)

    _sigints_received = 0
    signal.signal(signal.SIGINT, count_then_handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def stop_requested(raised: BaseException) -> bool:
    """Whether ``raised`` (a KeyboardInterrupt or SystemExit out of a cell) is a stop the user asked for: a
    KeyboardInterrupt while a SIGINT was received. Otherwise the cell's code raised it and it is a finding."""
    return isinstance(raised, KeyboardInterrupt) and _sigints_received > 0


# ------------------------------------------------------------------------------------------ a cell in a child
@dataclass(frozen=True)
class ChildEnd:
    """How a forked child ended: ``value`` when it returned, else why it did not (``crash`` or ``timeout``)."""

    value: object = None
    ended: str = "returned"  # "returned", "crash", "timeout"
    detail: str = ""


def can_fork(device: str) -> bool:
    """Whether a cell on ``device`` can run in a forked child here: a POSIX fork, a CPU cell (CUDA cannot be used
    in a child forked from a process that touched it, and the driver may already be loaded)."""
    import os

    return hasattr(os, "fork") and device == "cpu" and not torch.cuda.is_initialized()


def run_forked(fn, *, timeout_s: float) -> ChildEnd:
    """Call ``fn()`` in a forked child and return its picklable result. A child that dies (``os._exit``, a
    signal, an abort in C) is a ``crash``; one still running after ``timeout_s`` (a hang in C code, which no
    in-process alarm reaches) is killed and is a ``timeout``. The parent is never at risk."""
    import os
    import pickle
    import select
    import signal
    import sys
    import time

    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send the pickled result, leave without running the parent's exit handlers
        os.close(read_end)
        status = 0
        try:
            try:
                payload = pickle.dumps(("returned", fn()))
            except BaseException as error:  # noqa: BLE001 - reported to the parent, which raises it
                import traceback

                payload = pickle.dumps(("raised", "".join(traceback.format_exception(error))))
            view = memoryview(payload)
            while view:
                view = view[os.write(write_end, view):]
        except BaseException:  # noqa: BLE001 - nothing sensible is left to do in the child
            status = 70
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    os.close(write_end)
    chunks, deadline, timed_out = [], time.monotonic() + timeout_s, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(read_end, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_end)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        return ChildEnd(ended="timeout", detail=f"still running after {timeout_s:g} s: the child process was killed")
    if chunks:
        try:
            kind, value = pickle.loads(b"".join(chunks))
        except Exception:  # noqa: BLE001 - a torn result is a death, reported below
            kind, value = None, None
        if kind == "returned":
            return ChildEnd(value=value)
        if kind == "raised":
            raise RuntimeError(f"the cell raised in its child process:\n{value}")
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return ChildEnd(ended="crash", detail=f"the cell's process was killed by {name}")
    return ChildEnd(ended="crash", detail=f"the cell's process exited with code {os.WEXITSTATUS(status)} "
                                          "before it returned a result")
