"""torch.onnx.export (dynamo=True) cannot export a left shift of integer tensors: onnxscript has no function for
aten.__lshift__.Tensor.

ONNX has BitShift (opset 11) for unsigned integers; torch's exporter maps aten ops through onnxscript's torchlib, which
in 0.7.2 defines none for `__lshift__` on a tensor shift, so any bit-packing code (`bits << positions`) fails to
export.
Correct: the model exports (BitShift, or multiplication by powers of two).
https://github.com/microsoft/onnxscript/tree/main/onnxscript/function_libs/torch_lib/ops
"""
# expect: ConversionError: Failed to convert the exported program to an ONNX model
import torch


class Pack(torch.nn.Module):
    def forward(self, x):
        bits = (x > 0).to(torch.int64)
        return (bits << torch.arange(x.shape[-1], dtype=torch.int64)).sum(-1)


torch.onnx.export(Pack(), (torch.randn(2, 8),), dynamo=True, verbose=False)
