"""Opacus refuses an optimum-quanto model: "Model contains a trainable layer with buffers that Opacus doesn't
currently support", for QLinear's input_scale and output_scale buffers.

Every QLinear registers the two activation-scale buffers, used only when activations are quantized; Opacus'
GradSampleModule rejects a trainable layer holding buffers. The correct behaviour: per-sample gradients of a
weight-quantized model through Opacus, as for the float model.
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/nn/qmodule.py
"""
import torch
from opacus import GradSampleModule
from optimum.quanto import qint8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qint8)
GradSampleModule(model)  # raises NotImplementedError
# expect: Model contains a trainable layer with buffers
