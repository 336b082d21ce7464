"""The LIF front ends' eager fast path (``qsnn_kernels.lif._eager``): plain eager calls skip the dispatcher and
``Function.apply``'s Python layer, anything traced goes through the operators, and both give the same bits."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

pytest.importorskip("triton")

from qsnn_kernels import lif as L  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class _Ops(TorchDispatchMode):
    """Passes every op through, recording its name: under it the LIF calls must take the operators."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.detach().cpu().contiguous().reshape(-1)
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32 if t.element_size() == 4 else torch.int64)


def _runs(dtype):
    gen = torch.Generator().manual_seed(5)
    x = (torch.rand(7, 2, 9, generator=gen) * 2 - 0.2).to(dtype).to(DEVICE)
    g = torch.randn(7, 2, 9, generator=gen).to(dtype).to(DEVICE)
    pdtype = torch.float32 if dtype == torch.bfloat16 else dtype
    for reset in ("subtract", "zero"):
        for delay in (True, False):
            xs = x.clone().requires_grad_()
            ps = [torch.tensor(v, dtype=pdtype, device=DEVICE).requires_grad_() for v in (0.8, 0.9, 1.1)]
            y = L.leaky(xs, beta=ps[0], threshold=ps[1], graded_spikes_factor=ps[2], reset_mechanism=reset,
                        reset_delay=delay)
            yield (y, *torch.autograd.grad(y, [xs, *ps], g))
            xs = x.clone().requires_grad_()
            y = L.leaky(xs, beta=0.7, threshold=-0.0 if delay else 0.6, reset_mechanism=reset, reset_delay=delay,
                        surrogate="sigmoid")
            yield (y, *torch.autograd.grad(y, xs, g))
    for v_reset in (None, -0.3):
        xs = x.clone().requires_grad_()
        y = L.sj_lif(xs, tau=2.7, v_reset=v_reset, surrogate="atan", surrogate_alpha=2.3)
        yield (y, *torch.autograd.grad(y, xs, g))
    with torch.no_grad():
        yield (L.leaky(x, beta=0.7), L.sj_lif(x, tau=3.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_fast_path_and_operators_give_the_same_bits(dtype):
    fast = list(_runs(dtype))
    with _Ops() as mode:
        ops = list(_runs(dtype))
    assert "qsnn_kernels.leaky.default" in mode.names and "qsnn_kernels.leaky_backward.default" in mode.names
    assert "qsnn_kernels.sj_lif.default" in mode.names and "qsnn_kernels.sj_lif_backward.default" in mode.names
    assert len(fast) == len(ops)
    for a, b in zip(fast, ops):
        for s, t in zip(a, b):
            assert s.dtype == t.dtype and s.shape == t.shape and torch.equal(_bits(s), _bits(t))


def test_eager_calls_skip_the_dispatcher_and_traced_calls_do_not(monkeypatch):
    called = []
    for name in ("leaky_op", "leaky_backward_op", "sj_lif_op", "sj_lif_backward_op"):
        op = getattr(L, name)
        monkeypatch.setattr(L, name, lambda *a, _op=op, _n=name: called.append(_n) or _op(*a))
    x = torch.rand(3, 4, device=DEVICE).requires_grad_()
    torch.autograd.grad(L.leaky(x, beta=0.8).sum() + L.sj_lif(x).sum(), x)
    with torch.no_grad():
        L.leaky(x, beta=0.8), L.sj_lif(x)
    assert called == []
    with _Ops():  # a dispatch mode (as in tracing) must see the operators
        torch.autograd.grad(L.leaky(x, beta=0.8).sum() + L.sj_lif(x).sum(), x)
    assert sorted(called) == ["leaky_backward_op", "leaky_op", "sj_lif_backward_op", "sj_lif_op"]
    called.clear()
    torch.vmap(lambda t: L.sj_lif(t))(x.detach())  # vmap: the operators' batching rules
    assert called and set(called) == {"sj_lif_op"}


def test_python_float_parameters_are_made_once(monkeypatch):
    made = []
    monkeypatch.setattr(L, "_PARAMS", {})
    original = torch.Tensor.new_tensor
    monkeypatch.setattr(torch.Tensor, "new_tensor", lambda self, *a, **k: made.append(a) or original(self, *a, **k))
    x = torch.rand(3, 4, device=DEVICE)
    values = dict(beta=0.6180339, threshold=1.0123457, graded_spikes_factor=-0.0)
    first = L.leaky(x, **values)
    assert len(made) == 3
    assert torch.equal(L.leaky(x, **values), first) and len(made) == 3  # kept: no copy to the device again
    torch.func.grad(lambda t: L.leaky(t, **values).sum())(x)  # transformed: made each time, as before
    assert len(made) == 6
    # keyed by bits: -0.0 and 0.0 are different parameters (the spikes' sign of zero differs)
    plus = L.leaky(x, **dict(values, graded_spikes_factor=0.0))
    assert torch.equal(plus, first) and not torch.equal(_bits(plus), _bits(first))
    with torch.inference_mode():  # inference tensors cannot be saved for a backward: not kept
        L.leaky(x, beta=0.4142135)
    xs = x.clone().requires_grad_()
    torch.autograd.grad(L.leaky(xs, beta=0.4142135).sum(), xs)


def test_constants_are_keyed_by_bits():
    plus = L._consts([0.0, 1.0], torch.float32, torch.device(DEVICE))
    minus = L._consts([-0.0, 1.0], torch.float32, torch.device(DEVICE))
    assert torch.signbit(minus[0]) and not torch.signbit(plus[0])


def test_parameter_gradients_of_an_empty_sequence_are_zero():
    x = torch.rand(0, 5, device=DEVICE).requires_grad_()
    ps = [torch.tensor(v, device=DEVICE).requires_grad_() for v in (0.8, 1.0, 1.0)]
    y = L.leaky(x, beta=ps[0], threshold=ps[1], graded_spikes_factor=ps[2])
    grads = torch.autograd.grad(y.sum(), [x, *ps])
    assert grads[0].shape == x.shape and all(float(p) == 0.0 for p in grads[1:])
