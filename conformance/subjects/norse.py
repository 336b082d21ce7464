"""norse 1.1 (``norse.torch``): ``LIFCell``, ``LIFBoxCell``, the ``LIF`` sequence module and the surrogate
``threshold`` functions that map onto :mod:`reference.surrogate`.

norse keeps its neuron parameters in a ``LIFParameters`` named tuple (``module.p``), not as registered parameters
or buffers: ``module.parameters()`` is empty unless a user puts ``nn.Parameter``s in the tuple, and then they are
still invisible to ``named_parameters``/``state_dict``/``functional_call``. The adapters therefore load the spec's
parameters as plain tensors into ``p`` (``param_map`` is empty) and judge the input gradient only.

``LIFRecurrentCell`` has no subject: no spec describes norse's recurrent LIF (``neuron.rleaky``/``rsynaptic`` follow
snntorch's conventions, not norse's ``lif_step`` with input and recurrent weight matrices).
"""

from __future__ import annotations

from typing import Any, Iterator

import torch
from torch import nn

from ..types import Example, Known, Subject

LIBRARY = "norse"
REQUIRES = ("norse",)
_SRC = "https://github.com/norse/norse/blob/main/norse/torch"

#: spec surrogate name -> norse ``method``
_METHODS = {"fast_sigmoid": "super", "triangular": "triangle"}


def _tensor(value: Any) -> torch.Tensor:
    # The default dtype is the cell's (float64 cells build under float64): the tensors keep full precision.
    return torch.as_tensor(value, dtype=torch.get_default_dtype()).detach().clone()


def _method(hyper: dict[str, Any]) -> tuple[str, torch.Tensor]:
    alpha = hyper["surrogate_alpha"]
    return _METHODS[hyper["surrogate"]], _tensor(1.0 if alpha is None else alpha)


class CellOverTime(nn.Module):
    """A norse cell (one Euler step per call) run over ``x`` of shape ``(T, B, N)`` from its initial state."""

    def __init__(self, cell: nn.Module):
        super().__init__()
        self.cell = cell

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        state = None  # norse: state=None means the cell's initial_state
        spikes = []
        for t in range(x.shape[0]):
            z, state = self.cell(x[t], state)
            spikes.append(z)
        return torch.stack(spikes)


class Sequence(nn.Module):
    """A norse sequence module (``LIF``) on ``x`` of shape ``(T, B, N)``; returns the spikes of all steps."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z, _ = self.layer(x, None)
        return z


def _lif_parameters(example: Example):
    from norse.torch import LIFParameters

    method, alpha = _method(example.hyper)
    p = example.params
    return LIFParameters(tau_syn_inv=_tensor(p["tau_syn_inv"]), tau_mem_inv=_tensor(p["tau_mem_inv"]),
                         v_leak=_tensor(p["v_leak"]), v_th=_tensor(p["v_th"]), v_reset=_tensor(p["v_reset"]),
                         method=method, alpha=alpha)


def build_lif_cell(example: Example) -> nn.Module:
    from norse.torch import LIFCell

    return CellOverTime(LIFCell(_lif_parameters(example), dt=float(example.hyper["dt"])))


def build_lif(example: Example) -> nn.Module:
    from norse.torch import LIF

    return Sequence(LIF(_lif_parameters(example), dt=float(example.hyper["dt"])))


def build_lif_box_cell(example: Example) -> nn.Module:
    from norse.torch import LIFBoxCell
    from norse.torch.functional.lif_box import LIFBoxParameters
    from norse.torch.functional.reset import reset_subtract, reset_value

    method, alpha = _method(example.hyper)
    p = example.params
    params = LIFBoxParameters(tau_mem_inv=_tensor(p["tau_mem_inv"]), v_leak=_tensor(p["v_leak"]),
                              v_th=_tensor(p["v_th"]), v_reset=_tensor(p["v_reset"]), method=method, alpha=alpha,
                              reset_method=reset_value if example.hyper["reset"] == "value" else reset_subtract)
    return CellOverTime(LIFBoxCell(params, dt=float(example.hyper["dt"])))


class Threshold(nn.Module):
    """norse's ``threshold(x, method, alpha)``: the spike function its neurons call on ``v - v_th``."""

    def __init__(self, threshold, method: str, alpha: float):
        super().__init__()
        self.threshold = threshold  # a module-level function: pickles by reference
        self.method = method
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.threshold(x, self.method, self.alpha)


def build_superspike(example: Example) -> nn.Module:
    from norse.torch.functional.threshold import threshold

    return Threshold(threshold, "super", 100.0)  # norse's default alpha, which SuperSpike ignores (alpha 1 here)


def build_triangle(example: Example) -> nn.Module:
    from norse.torch.functional.threshold import threshold

    return Threshold(threshold, "triangle", float(example.hyper["alpha"]))


# --- known failures --------------------------------------------------------------------------------------------


def subjects() -> Iterator[Subject]:
    common = dict(library=LIBRARY, requires=REQUIRES)
    # lif_feed_forward_step does not detach the reset spike; method "super" ignores alpha (SuperSpike is alpha=1).
    super_fixed = {"surrogate": "fast_sigmoid", "surrogate_alpha": 1.0}
    yield Subject(id="norse.LIFCell", spec="neuron.norse_lif", build=build_lif_cell,
                  fixed={**super_fixed, "detach_reset": False}, **common)
    yield Subject(id="norse.LIF[triangle]", spec="neuron.norse_lif", build=build_lif,
                  fixed={"surrogate": "triangular", "detach_reset": False}, **common)
    yield Subject(id="norse.LIFBoxCell", spec="neuron.norse_lif_box", build=build_lif_box_cell,
                  fixed=super_fixed, **common)
    # norse's heaviside fires at x > 0 (strict)
    yield Subject(id="norse.threshold[super]", spec="surrogate.fast_sigmoid", build=build_superspike,
                  fixed={"alpha": 1.0, "strict": True}, **common)
    yield Subject(id="norse.threshold[triangle]", spec="surrogate.triangular", build=build_triangle,
                  fixed={"strict": True}, **common)
