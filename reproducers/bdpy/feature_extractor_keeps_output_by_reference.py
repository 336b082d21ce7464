"""bdpy's FeatureExtractor(detach=False) returns a layer's feature after a later in-place op has overwritten it.

FeatureExtractorHandle keeps each hooked module_out by reference (outputs.append(module_out)), so the
ReLU(inplace=True) that follows the layer (as in torchvision's VGG/AlexNet) rewrites the stored feature before
run() returns: the "linear" feature comes back with its negative entries zeroed. The correct behaviour: the feature
of a layer is that layer's output, as the layer produced it (detach=True, which clones, gets it right).
https://github.com/KamitaniLab/bdpy/issues/16
https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py#L123
"""
# expect: AssertionError: the 'linear' feature from FeatureExtractor(detach=False) is not the linear layer's output
from collections import OrderedDict

import torch
from torch import nn

from bdpy.dl.torch import FeatureExtractor

torch.manual_seed(0)
net = nn.Sequential(OrderedDict(linear=nn.Linear(6, 5), relu=nn.ReLU(inplace=True)))
x = torch.randn(4, 6)
with torch.no_grad():
    expected = net.linear(x)  # what the linear layer outputs (it has negative entries)
assert (expected < 0).any()

features = FeatureExtractor(net, ["linear"], detach=False)(x)
assert torch.equal(features["linear"].detach(), expected), \
    "the 'linear' feature from FeatureExtractor(detach=False) is not the linear layer's output (the in-place ReLU " \
    "after it overwrote the stored tensor)"
print("FeatureExtractor(detach=False) returns the layer's own output")
