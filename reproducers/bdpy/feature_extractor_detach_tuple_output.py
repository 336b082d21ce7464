"""bdpy's FeatureExtractor(detach=True) raises inside forward when a hooked layer returns a tuple.

FeatureExtractorHandleDetach calls module_out.detach().clone() on whatever the hooked layer returns; a layer whose
forward returns a tuple (nn.RNN's (output, h_n), a spiking cell's (spikes, state)) makes the hook raise
AttributeError in the middle of the network's forward. FeatureExtractor(detach=False) on the same layer returns the
tuple. The correct behaviour: run() completes and hands back that layer's output (detached), as detach=False does.
https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py#L138
"""
# expect: AttributeError: 'tuple' object has no attribute 'detach'
import torch
from torch import nn

from bdpy.dl.torch import FeatureExtractor


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(3, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        out, _h = self.rnn(x)
        return self.head(out)


torch.manual_seed(0)
net = Encoder()
x = torch.randn(5, 2, 3)  # (T, N, features)
FeatureExtractor(net, ["rnn", "head"], detach=False)(x)  # works: the tuple is handed back as is
features = FeatureExtractor(net, ["rnn", "head"], detach=True)(x)  # raises in the forward hook
print("FeatureExtractor(detach=True) extracts a tuple-returning layer:", type(features["rnn"]))
