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

import functools
import importlib.util
import inspect
import os
from typing import Any, Callable, Optional

import torch


def triton_missing() -> str | None:
    """Why Triton cannot be used at all, or None (checked without importing it)."""
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed"
    return None


#: The oldest Triton whose interpreter runs these kernels: 3.6's passes scalar arguments as 1-element numpy
#: arrays, and numpy 2 refuses them as loop bounds (``for t in range(T)``: "only 0-dimensional arrays can be
#: converted to Python scalars"); 3.9 passes 0-d values. Releases in between are untested, so not trusted.
MIN_INTERPRETER_TRITON = (3, 9)


def interpreter_problem() -> str | None:
    """Why CPU tensors cannot run through Triton's interpreter here, or None (checked on every CPU launch: the
    environment variable is read each time, the installed Triton's version once)."""
    if os.environ.get("QSNN_KERNELS_INTERPRET", "1") == "0":
        return "the CPU path (Triton's interpreter) is off: QSNN_KERNELS_INTERPRET=0"
    return _old_interpreter()


@functools.lru_cache(maxsize=1)
def _old_interpreter() -> str | None:
    """Why the installed Triton's interpreter cannot run these kernels, or None (reads package metadata: cached)."""
    try:
        from importlib.metadata import version

        found = version("triton")
        numbers = tuple(int(part) for part in found.split("+")[0].split(".")[:2])
    except (ImportError, ValueError, LookupError):
        return None
    if numbers < MIN_INTERPRETER_TRITON:
        return (f"Triton {found}'s interpreter passes scalar arguments as 1-element arrays, which numpy 2 refuses "
                f"as loop bounds: the CPU path needs triton>={'.'.join(map(str, MIN_INTERPRETER_TRITON))}")
    return None


def device_unsupported(device: torch.device) -> str | None:
    """Why the kernels cannot run on ``device``, or None."""
    missing = triton_missing()
    if missing:
        return missing
    if device.type == "cuda":
        return None
    if device.type == "cpu":
        return interpreter_problem()
    return f"no Triton kernels for device type {device.type!r}"


#: Launch compiled kernels directly once their key is trusted (see :class:`Kernel`): ``QSNN_KERNELS_DIRECT_LAUNCH=1``.
#: Off by default until a GPU run has verified it (docs/kernels.md); off, every launch goes through Triton's
#: ``JITFunction.run``. The benchmark measures both.
DIRECT_LAUNCH = os.environ.get("QSNN_KERNELS_DIRECT_LAUNCH", "0") == "1"


class Kernel:
    """One Triton kernel source, launched compiled (CUDA) or interpreted (CPU) by the device of its tensors.

    A CUDA launch through ``JITFunction.run`` binds and specializes every argument, builds the cache key and the
    launch metadata in Python on every call, which costs more host time than the kernels' own GPU time at small
    sizes. With ``DIRECT_LAUNCH`` on (opt-in), each compiled kernel Triton returns is kept under a key that holds at
    least what Triton specializes on (the device, every tensor's dtype and 16-byte alignment, every other argument's
    type and value, the keyword arguments), and a later call with that key launches it directly (``launch_direct``).
    A key is trusted only after Triton's own path returned the same compiled kernel for it twice."""

    #: keys kept per kernel (sizes enter the key, so a long run of new shapes must not grow it without bound)
    MAX_KEYS = 512

    def __init__(self, fn: Callable):
        self.fn = fn
        self._compiled: Any = None
        self._interpreted: Any = None
        self._launchers: dict = {}
        self._names: Optional[tuple] = None

    def __call__(self, device: torch.device, grid: tuple, *args: Any, **kwargs: Any) -> None:
        if device.type == "cuda":
            if self._compiled is None:
                reason = device_unsupported(device)
                if reason:
                    raise RuntimeError(f"kernel {self.fn.__name__}: {reason}")
                import triton

                self._compiled = triton.jit(self.fn)
                self._names = tuple(self._compiled.arg_names)
            index = device.index if device.index is not None else torch.cuda.current_device()
            if index != torch.cuda.current_device():
                with torch.cuda.device(index):
                    self._launch(index, grid, args, kwargs)
            else:
                self._launch(index, grid, args, kwargs)
            return
        reason = device_unsupported(device)
        if reason:
            raise RuntimeError(f"kernel {self.fn.__name__}: {reason}")
        if self._interpreted is None:
            from triton.runtime.interpreter import InterpretedFunction

            self._interpreted = InterpretedFunction(self.fn)
        self._interpreted[grid](*args, **kwargs)

    def _launch(self, index: int, grid: tuple, args: tuple, kwargs: dict) -> None:
        if not DIRECT_LAUNCH:
            self._compiled[grid](*args, **kwargs)
            return
        key = launch_key(index, args, kwargs)
        entry = self._launchers.get(key)
        if entry is not None and entry[1]:
            launch_direct(entry[0], grid, index, self._values(args, kwargs))
            return
        compiled = self._compiled[grid](*args, **kwargs)
        if entry is None:
            if len(self._launchers) >= self.MAX_KEYS:
                self._launchers.clear()
            self._launchers[key] = (compiled, False)
        else:
            self._launchers[key] = (compiled, compiled is entry[0] and hasattr(compiled, "packed_metadata"))

    def _values(self, args: tuple, kwargs: dict) -> list:
        """Every parameter's value in the kernel's order (what Triton's launcher takes), options left out."""
        values = list(args)
        for name in self._names[len(args):]:
            values.append(kwargs[name])
        return values


def launch_key(index: int, args: tuple, kwargs: dict) -> tuple:
    """A key that differs whenever Triton's specialization could: tensors by dtype and 16-byte alignment of their
    data pointer (what Triton reads of a tensor argument), everything else by type and value."""
    parts: list = [index]
    for arg in args:
        if isinstance(arg, torch.Tensor):
            parts.append((arg.dtype, arg.data_ptr() % 16 == 0))
        else:
            parts.append((type(arg), arg))
    for name in sorted(kwargs):
        value = kwargs[name]
        parts.append((name, type(value), value))
    return tuple(parts)


def launch_direct(compiled: Any, grid: tuple, index: int, values: list) -> None:
    """Launch an already compiled kernel as Triton's ``JITFunction.run`` does after its cache lookup (triton 3.6
    to 3.9: ``CompiledKernel.run`` with the grid, stream, function, packed metadata, launch metadata and hooks,
    then every parameter's value)."""
    from triton import knobs
    from triton.runtime import driver

    stream = driver.active.get_current_stream(index)
    grid3 = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
    hooks = knobs.runtime
    compiled.run(*grid3, stream, compiled.function, compiled.packed_metadata,
                 compiled.launch_metadata(grid3, stream, *values), hooks.launch_enter_hook, hooks.launch_exit_hook,
                 *values)


def kernel(fn: Callable) -> Kernel:
    return Kernel(fn)


#: The operators' namespace. Defined through ``torch.library.Library`` rather than ``torch.library.custom_op``:
#: an eager call then goes from the dispatcher straight to the implementation (custom_op adds its Python autograd
#: and dynamo-disable layers: about 20 us a call on this project's CPU machine, against 4 us here).
_LIBRARY = torch.library.Library("qsnn_kernels", "DEF")


def operator(name: str) -> Callable[[Callable], Any]:
    """Decorator: define ``qsnn_kernels::<name>`` with the schema of the function's annotations (as custom_op
    infers it; no argument is mutated), implemented by the function for CPU and CUDA tensors; returns the operator
    (``torch.ops.qsnn_kernels.<name>.default``). Its fake kernel and vmap rule are registered with
    ``torch.library.register_fake`` and ``register_vmap``; it has no autograd kernel, so it is called from an
    ``autograd.Function`` or without grad."""
    def define(fn: Callable) -> Any:
        _LIBRARY.define(name + torch.library.infer_schema(fn, mutates_args=()))
        for key in ("CPU", "CUDA"):
            _LIBRARY.impl(name, fn, key)
        return getattr(torch.ops.qsnn_kernels, name).default
    return define


def signature_once(function_class: type) -> type:
    """Class decorator for an ``autograd.Function`` with ``setup_context``: its ``apply`` binds the arguments with
    ``inspect.signature(forward)`` on every call, which rebuilds the signature (about 20 us) unless ``forward``
    carries one: store it once."""
    function_class.forward.__signature__ = inspect.signature(function_class.forward)
    return function_class
