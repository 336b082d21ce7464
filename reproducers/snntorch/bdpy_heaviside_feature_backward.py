"""bdpy's FeatureExtractor(detach=False) hands back snntorch's heaviside spikes modified in place: no backward.

Heaviside.forward saves its own output for backward (`ctx.save_for_backward(out)`, snntorch surrogate.py L244), and
bdpy's FeatureExtractorHandle keeps that very tensor by reference; the in-place op of the next layer (a
ReLU(inplace=True), bdpy issue 16) modifies it before run() returns, so a loss on the feature (as feature inversion
uses) cannot back-propagate. The correct behaviour: the gradient of a loss on the extracted feature flows back to
the input (it does with snntorch's other surrogates, which save their input).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/surrogate.py#L244
"""
import torch
from torch import nn
from bdpy.dl.torch import FeatureExtractor
from snntorch import surrogate


class Spike(nn.Module):
    def __init__(self):
        super().__init__()
        self.spike_grad = surrogate.heaviside()

    def forward(self, x):
        return self.spike_grad(x)


torch.manual_seed(0)
network = nn.Sequential()
network.add_module("spike", Spike())
network.add_module("relu", nn.ReLU(inplace=True))  # the next layer, in place
x = torch.randn(3, 4, requires_grad=True)
features = FeatureExtractor(network, ["spike"], detach=False)(x)
features["spike"].sum().backward()  # raises
print("input gradient:", x.grad)
# expect: which is output 0 of Heaviside, is at version 1; expected version 0 instead
