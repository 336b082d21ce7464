"""Opacus' GradSampleModule refuses bitorch's LeNet and Resnet18V2: they hold BatchNorm layers (with buffers).

GradSampleModule (strict by default, both in hooks and functorch mode) rejects any trainable layer with buffers,
and bitorch's LeNet (and Resnet18V2) use BatchNorm. This is Opacus' documented restriction (per-sample gradients
do not exist through batch statistics); Opacus' remedy, ModuleValidator.fix, clones the model with torch.save and
then fails on the LayerContainer pickle error (see layer_container_pickle.py). The correct behaviour asked here:
Opacus computes per-sample gradients of the model's parameters.
https://github.com/hpi-xnor/bitorch/pull/4 (which ran ModuleValidator.fix first)
"""
# expect: Model contains a trainable layer with buffers
import warnings

import torch
from bitorch.models import LeNet
from opacus import GradSampleModule

warnings.simplefilter("ignore")
torch.manual_seed(0)
model = LeNet(input_shape=[1, 1, 28, 28], num_classes=10).eval()
wrapped = GradSampleModule(model, batch_first=True, loss_reduction="sum")  # raises
wrapped(torch.randn(2, 1, 28, 28)).sum().backward()
print("Opacus computes LeNet's per-sample gradients")
