"""torch.compile of a norse LIFCell stepped from state=None breaks the graph at initial_state's requires_grad.

``LIFCell.initial_state`` (used when ``state=None``) sets ``state.v.requires_grad = True`` on a tensor it has just
made inside forward; dynamo cannot trace that setattr, so the graph breaks there: ``torch.compile(fullgraph=True)``
raises ``Unsupported: setattr() on Tensor.requires_grad`` (a multi-line error, hence dynamo's explain here), and
without fullgraph the frame is split. The same holds for norse's ``LIF`` sequence module. Correct: one graph, as
the cell's arithmetic is plain tensor code.
https://github.com/norse/norse/blob/main/norse/torch/module/lif.py
"""
import torch
from norse.torch import LIF, LIFCell, LIFParameters

torch.manual_seed(0)
t = lambda v: torch.tensor(float(v))  # noqa: E731


def parameters(method):
    return LIFParameters(tau_syn_inv=t(100), tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0),
                         method=method, alpha=t(1.0))


cell = LIFCell(parameters("super"), dt=0.001)
layer = LIF(parameters("triangle"), dt=0.001)


def over_time(x):  # x: (time, batch, neurons), from the initial state
    state, spikes = None, []
    for step in x:
        z, state = cell(step, state)
        spikes.append(z)
    return torch.stack(spikes)


x = torch.rand(3, 2, 4) * 9
# dynamo's account of the graph breaks of one call (fullgraph=True raises on the first one, a multi-line error)
explained = [torch._dynamo.explain(over_time)(x), torch._dynamo.explain(lambda v: layer(v, None)[0])(x)]
reasons = sorted({r.reason.splitlines()[0] for e in explained for r in e.break_reasons})
# expect: AssertionError: dynamo breaks the graph: setattr() on Tensor.requires_grad
assert all(e.graph_break_count == 0 for e in explained), f"dynamo breaks the graph: {'; '.join(reasons)}"
