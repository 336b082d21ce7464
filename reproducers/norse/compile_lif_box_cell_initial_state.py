"""torch.compile of a norse LIFBoxCell stepped from state=None breaks the graph at initial_state's requires_grad.

``LIFBoxCell.initial_state`` (used when ``state=None``) sets ``state.v.requires_grad = True`` on a tensor it has just
made inside forward; dynamo cannot trace that setattr, so the graph breaks there: ``torch.compile(fullgraph=True)``
raises ``Unsupported: setattr() on Tensor.requires_grad`` (a multi-line error, hence dynamo's explain here), and
without fullgraph the frame is split. Correct: one graph, as the cell's arithmetic is plain tensor code.
https://github.com/norse/norse/blob/main/norse/torch/module/lif_box.py
"""
import torch
from norse.torch import LIFBoxCell
from norse.torch.functional.lif_box import LIFBoxParameters
from norse.torch.functional.reset import reset_value

torch.manual_seed(0)
t = lambda v: torch.tensor(float(v))  # noqa: E731
cell = LIFBoxCell(LIFBoxParameters(tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0), method="super",
                                   alpha=t(1.0), reset_method=reset_value), dt=0.001)


def over_time(x):  # x: (time, batch, neurons), from the initial state
    state, spikes = None, []
    for step in x:
        z, state = cell(step, state)
        spikes.append(z)
    return torch.stack(spikes)


x = torch.rand(3, 2, 4) * 9
# dynamo's account of the graph breaks of one call (fullgraph=True raises on the first one, a multi-line error)
explained = torch._dynamo.explain(over_time)(x)
reasons = sorted({r.reason.splitlines()[0] for r in explained.break_reasons})
# expect: AssertionError: dynamo breaks the graph: setattr() on Tensor.requires_grad
assert explained.graph_break_count == 0, f"dynamo breaks the graph: {'; '.join(reasons)}"
