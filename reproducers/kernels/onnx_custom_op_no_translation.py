"""The project's Triton kernels cannot be exported to ONNX: their custom ops (qsnn_kernels::*) have no ONNX translation.

torch.onnx.export (dynamo=True) captures BinaryLinear's forward as the custom op qsnn_kernels.binary_linear (a
torch.library op with a fake implementation, so torch.export succeeds) and then finds no ONNX function for it: the
kernels register no onnxscript translation (and no decomposition into aten ops), so a model that uses them cannot go
to onnxruntime.
Correct: the model exports (a decomposition or a registered translation for each op).
https://pytorch.org/docs/stable/onnx_dynamo.html
"""
# expect: ConversionError: Failed to convert the exported program to an ONNX model
import torch
from qsnn_kernels.binary import BinaryLinear

layer = BinaryLinear(32, 4, bias=True)
torch.onnx.export(layer, (torch.randn(2, 32),), dynamo=True, verbose=False)
