"""The CUDA launch path's cache (qsnn_kernels._runtime): which calls reuse a compiled kernel without Triton's binder.
Runs on the CPU with stand-ins for Triton's JIT function and compiled kernel (no GPU needed)."""

import torch

from qsnn_kernels import _runtime as R


class CompiledStandIn:
    packed_metadata = "meta"


class JitStandIn:
    """Triton's JITFunction as the launcher sees it: ``[grid](*args, **kwargs)`` returns the compiled kernel, the
    same object for the same specialization."""

    arg_names = ["x_ptr", "n", "BLOCK"]

    def __init__(self):
        self.compiled: dict = {}
        self.calls = 0

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.calls += 1
            key = R.launch_key(0, args, kwargs)
            return self.compiled.setdefault(key, CompiledStandIn())
        return run


def _kernel(monkeypatch):
    k = R.Kernel(lambda: None)
    k._compiled, k._names = JitStandIn(), ("x_ptr", "n", "BLOCK")
    direct = []
    monkeypatch.setattr(R, "DIRECT_LAUNCH", True)
    monkeypatch.setattr(R, "launch_direct", lambda compiled, grid, index, values: direct.append((compiled, values)))
    return k, direct


def test_a_key_is_trusted_after_triton_returned_the_same_kernel_twice(monkeypatch):
    k, direct = _kernel(monkeypatch)
    x = torch.zeros(64)
    for _ in range(4):
        k._launch(0, (1,), (x, 64), {"BLOCK": 16, "num_warps": 4})
    assert k._compiled.calls == 2 and len(direct) == 2
    assert direct[0][1] == [x, 64, 16]  # every parameter in order, the options (num_warps) left out


def test_whatever_triton_specializes_on_changes_the_key():
    x = torch.zeros(64)
    base = R.launch_key(0, (x, 64), {"BLOCK": 16})
    assert R.launch_key(0, (x[1:], 64), {"BLOCK": 16}) != base  # 4-byte offset: not 16-byte aligned
    assert R.launch_key(0, (x.double(), 64), {"BLOCK": 16}) != base  # dtype
    assert R.launch_key(0, (x, 1), {"BLOCK": 16}) != base  # an int's value (1, multiples of 16, range)
    assert R.launch_key(0, (x, 64), {"BLOCK": 32}) != base  # a constexpr
    assert R.launch_key(0, (x, 64), {"BLOCK": 16, "num_warps": 8}) != base  # an option
    assert R.launch_key(1, (x, 64), {"BLOCK": 16}) != base  # the device
    assert R.launch_key(0, (x, 64.0), {"BLOCK": 16}) != base  # a type
    assert R.launch_key(0, (torch.ones(64), 64), {"BLOCK": 16}) == base  # another aligned buffer: the same key


def test_a_kernel_that_differs_on_the_second_call_is_never_launched_directly(monkeypatch):
    k, direct = _kernel(monkeypatch)
    x = torch.zeros(64)
    returned = iter([CompiledStandIn(), CompiledStandIn(), CompiledStandIn()])
    k._compiled.__class__ = type("Fickle", (JitStandIn,), {"__getitem__": lambda self, grid: lambda *a, **kw: next(
        returned)})
    for _ in range(3):
        k._launch(0, (1,), (x, 64), {"BLOCK": 16})
    assert direct == []


def test_the_direct_launch_can_be_turned_off(monkeypatch):
    k, direct = _kernel(monkeypatch)
    monkeypatch.setattr(R, "DIRECT_LAUNCH", False)
    for _ in range(4):
        k._launch(0, (1,), (torch.zeros(64), 64), {"BLOCK": 16})
    assert k._compiled.calls == 4 and direct == []
