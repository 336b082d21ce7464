"""A loss on a FeatureExtractor(detach=False) feature back-propagates through the in-place op after the layer.

FeatureExtractor(detach=False) is what a loss on features needs (feature inversion, as bdpy's own reconstruction
does): the features stay in the graph. But the feature it returns for a layer is that layer's output tensor itself
(FeatureExtractorHandle.outputs.append(module_out)), which a later in-place op has modified; autograd then
differentiates the modified tensor, so d<v, feature>/dx is the gradient through the layer AND the in-place op. The
correct behaviour: the gradient of a loss on a layer's feature is the gradient through that layer alone, what one
gets from calling the layer directly (cloning module_out in the hook, as issue 16 proposes, keeps the graph and
gives it). Here the in-place op is y.mul_(2).add_(1), so the gradient comes back twice the layer's; after a
ReLU(inplace=True) it comes back zeroed wherever the layer's output is negative.
https://github.com/KamitaniLab/bdpy/issues/16
https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py#L123
"""
# expect: AssertionError: the gradient through the 'linear' feature is not the linear layer's gradient
from collections import OrderedDict

import torch
from torch import nn

from bdpy.dl.torch import FeatureExtractor


class InplaceAffine(nn.Module):
    def forward(self, y):
        return y.mul_(2.0).add_(1.0)


torch.manual_seed(0)
net = nn.Sequential(OrderedDict(linear=nn.Linear(6, 5), affine=InplaceAffine()))
x = torch.randn(4, 6)
v = torch.randn(4, 5)

# the gradient of <v, linear(x)> with respect to x, from the layer itself
x_ref = x.clone().requires_grad_(True)
(net.linear(x_ref) * v).sum().backward()

x_feat = x.clone().requires_grad_(True)
features = FeatureExtractor(net, ["linear"], detach=False)(x_feat)
(features["linear"] * v).sum().backward()
assert torch.allclose(x_feat.grad, x_ref.grad), \
    "the gradient through the 'linear' feature is not the linear layer's gradient " \
    f"(ratio {(x_feat.grad / x_ref.grad).mean().item():.3f}: it went through the in-place op downstream)"
print("gradients through FeatureExtractor(detach=False) features are the layer's own")
