"""Where a kernel runs: Triton compiled for CUDA tensors, Triton's interpreter for CPU tensors.

Triton 3.x decides between compiling and interpreting when ``triton.jit`` is *applied* (it reads
``TRITON_INTERPRET`` through ``triton.knobs.runtime.interpret`` at decoration time, triton 3.9
``runtime/jit.py``), so a process-wide ``TRITON_INTERPRET=1`` would also turn every other Triton user in the
process (inductor's generated kernels, spikingjelly's CUDA path) into the interpreter. Instead each kernel here
keeps its plain Python source and builds both forms on first use: ``triton.jit(fn)`` for CUDA tensors and
``triton.runtime.interpreter.InterpretedFunction(fn)`` for CPU tensors. Neither touches the environment.

``QSNN_KERNELS_INTERPRET=0`` turns the CPU path off (the CPU cells then skip as unsupported).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Callable

import torch


def triton_missing() -> str | None:
    """Why Triton cannot be used at all, or None (checked without importing it)."""
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed"
    return None


def interpreter_enabled() -> bool:
    """Whether CPU tensors run through Triton's interpreter (on unless QSNN_KERNELS_INTERPRET=0)."""
    return os.environ.get("QSNN_KERNELS_INTERPRET", "1") != "0"


def device_unsupported(device: torch.device) -> str | None:
    """Why the kernels cannot run on ``device``, or None."""
    missing = triton_missing()
    if missing:
        return missing
    if device.type == "cuda":
        return None
    if device.type == "cpu":
        return None if interpreter_enabled() else "the CPU path (Triton's interpreter) is off: QSNN_KERNELS_INTERPRET=0"
    return f"no Triton kernels for device type {device.type!r}"


class Kernel:
    """One Triton kernel source, launched compiled (CUDA) or interpreted (CPU) by the device of its tensors."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self._compiled: Any = None
        self._interpreted: Any = None

    def __call__(self, device: torch.device, grid: tuple, *args: Any, **kwargs: Any) -> None:
        reason = device_unsupported(device)
        if reason:
            raise RuntimeError(f"kernel {self.fn.__name__}: {reason}")
        if device.type == "cuda":
            if self._compiled is None:
                import triton

                self._compiled = triton.jit(self.fn)
            with torch.cuda.device(device):
                self._compiled[grid](*args, **kwargs)
            return
        if self._interpreted is None:
            from triton.runtime.interpreter import InterpretedFunction

            self._interpreted = InterpretedFunction(self.fn)
        self._interpreted[grid](*args, **kwargs)


def kernel(fn: Callable) -> Kernel:
    return Kernel(fn)


def on_cuda(t: torch.Tensor) -> bool:
    return t.device.type == "cuda"
