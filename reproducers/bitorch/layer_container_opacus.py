"""Opacus' GradSampleModule fails on QLinear/QConv2d: its functorch fallback deep-copies the LayerContainer.

Opacus has no per-sample-gradient sampler for bitorch's layers (their type is LayerContainer), so in both modes
(hooks and functorch) it prepares them through functorch, whose make_functional does copy.deepcopy(layer): the
LayerContainer KeyError '_layer_implementation' of plain deepcopy (LayerContainer.__getattr__ reads __dict__
directly). The correct behaviour: Opacus computes a per-sample weight gradient (grad_sample) for the layer.
Reported with tracebacks in https://github.com/hpi-xnor/bitorch/pull/4
"""
# expect: KeyError: '_layer_implementation'
import warnings

import torch
from bitorch.layers import QConv2d
from opacus import GradSampleModule

warnings.simplefilter("ignore")  # Opacus' notes on secure RNG etc.
torch.manual_seed(0)
layer = QConv2d(2, 3, 3, stride=1, padding=1, dilation=1, groups=1, bias=False, pad_value=-1.0,
                input_quantization="sign", weight_quantization="sign", gradient_cancellation_threshold=1.0)
wrapped = GradSampleModule(layer, batch_first=True, loss_reduction="sum")  # raises
wrapped(torch.randn(2, 2, 5, 5)).sum().backward()
assert layer.weight.grad_sample.shape == (2, *layer.weight.shape), "no per-sample gradient"
print("Opacus computes QConv2d's per-sample gradients")
