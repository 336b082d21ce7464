"""Opacus refuses torch.ao.nn.qat.Linear: "Model contains a trainable layer with buffers that Opacus doesn't
currently support".

The QAT layer holds its trainable weight and bias beside the buffers of its weight fake quantizer (the observer's
running min/max, scale, zero point and the enable flags), and Opacus' GradSampleModule refuses a trainable layer
with buffers in both its hooks and functorch modes. The correct behaviour: per-sample gradients of the layer.
https://github.com/pytorch/opacus/blob/main/opacus/grad_sample/grad_sample_module.py
"""
import torch
from opacus import GradSampleModule
from torch.ao.nn.qat import Linear as QATLinear
from torch.ao.quantization import get_default_qat_qconfig

linear = torch.nn.Linear(4, 3)
linear.qconfig = get_default_qat_qconfig("x86")
GradSampleModule(torch.nn.Sequential(QATLinear.from_float(linear)))  # raises NotImplementedError
# expect: NotImplementedError
