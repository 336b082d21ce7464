"""bdpy's FeatureExtractor mislabels features when a hooked norse cell runs several times in one forward.

``FeatureExtractor.run`` pairs hook outputs with layer names by position (``features[layer] = outputs[i]``). A
norse LIFCell stepped over T > 1 time steps fires its hook T times, so the feature returned for the layer after
it is the cell's second output (a ``(spikes, state)`` tuple), not that layer's output. Correct: each feature is
an output of the layer it is labelled with.
https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py#L89
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
x = torch.rand(3, 2, 4) * 9
expected = network(x)
# the layers in the order their hooks fire: the cell (each step), then the module that steps it
features = FeatureExtractor(network, ["subject.cell", "subject"], detach=False).run(x)
got = features["subject"]
# expect: AssertionError: the feature labelled 'subject' is not that layer's output
assert isinstance(got, torch.Tensor) and torch.equal(got, expected), (
    f"the feature labelled 'subject' is not that layer's output: got {type(got).__name__}")
