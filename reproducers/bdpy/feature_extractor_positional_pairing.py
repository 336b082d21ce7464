"""bdpy's FeatureExtractor mislabels features when a layer runs more than once per forward.

run() pairs the hook outputs with the layer names by position (features[layer] = outputs[i]), but a layer called
several times per forward (a recurrent cell stepped over time, an activation module reused as in torchvision's
ResNet blocks) appends one output per call, so every layer listed after it gets another layer's output: here the
'head' feature is the cell's second step. The correct behaviour: the feature of 'head' is the head's output (the
network's output here), whatever ran before it; both detach=True and detach=False pair by position.
https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py#L89
"""
# expect: AssertionError: the 'head' feature is not the head layer's output
import numpy as np
import torch
from torch import nn

from bdpy.dl.torch import FeatureExtractor


class Recurrent(nn.Module):
    """A cell stepped over the time steps of (T, N, features), then a readout."""

    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(3, 4)
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.zeros(x.shape[1], 4)
        for x_t in x:
            h = self.cell(x_t, h)
        return self.head(h)


torch.manual_seed(0)
net = Recurrent()
x = torch.randn(3, 2, 3)  # T = 3
with torch.no_grad():
    y = net(x).numpy()

features = FeatureExtractor(net, ["cell", "head"], detach=True)(x)  # the layers in the order they first run
assert features["head"].shape == y.shape and np.allclose(features["head"], y), \
    "the 'head' feature is not the head layer's output (bdpy paired it with the cell's second call)"
print("FeatureExtractor labels every feature with its own layer")
