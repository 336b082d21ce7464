"""bdpy's FeatureExtractor(detach=True) raises inside forward when a hooked layer (a norse cell) returns a tuple.

``FeatureExtractorHandleDetach`` stores ``module_out.detach().clone()`` for every hooked output; a norse LIFCell
returns ``(spikes, state)`` (as does the LIF sequence module), so the hook raises AttributeError in the middle of
the forward. Correct: the features are extracted (the tuple's tensors detached, or the layer refused up front with
a clear message).
https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py#L138
"""
import torch
from bdpy.dl.torch import FeatureExtractor
from norse.torch import LIFCell, LIFParameters
from torch import nn

torch.manual_seed(0)
t = lambda v: torch.tensor(float(v))  # noqa: E731


class CellOverTime(nn.Module):  # the cell stepped over x of shape (time, batch, neurons) from its initial state
    def __init__(self):
        super().__init__()
        self.cell = LIFCell(LIFParameters(tau_syn_inv=t(100), tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3),
                                          v_reset=t(0), method="super", alpha=t(1.0)), dt=0.001)

    def forward(self, x):
        state, spikes = None, []
        for step in x:
            z, state = self.cell(step, state)
            spikes.append(z)
        return torch.stack(spikes)


network = nn.Sequential()
network.add_module("subject", CellOverTime())
x = torch.rand(1, 2, 4) * 9
# expect: AttributeError: 'tuple' object has no attribute 'detach'
features = FeatureExtractor(network, ["subject.cell", "subject"], detach=True).run(x)
