"""brevitas' export_onnx_qcdq refuses binary quantizers: 'Binary quant not supported'.

A binary (1-bit, +-1) activation or weight quantizer has an exact QCDQ form (QuantizeLinear to int8 with scale s,
Clip to [-1, 1] with zero excluded by the sign, DequantizeLinear), but brevitas' QCDQ export handler asserts that
the bit width is above 1, so binary layers (QuantIdentity/QuantLinear/QuantConv2d with binary quantizers) can be
exported only through QONNX's custom BipolarQuant op, which onnxruntime does not run.
Correct: the layer exports to QCDQ (or the documentation says binary layers need QONNX).
https://github.com/Xilinx/brevitas/tree/master/src/brevitas/export/onnx/standard/qcdq
"""
# expect: AssertionError: Binary quant not supported
import tempfile

import torch
from brevitas.export import export_onnx_qcdq
from brevitas.nn import QuantIdentity
from brevitas.quant import SignedBinaryActPerTensorConst

layer = QuantIdentity(act_quant=SignedBinaryActPerTensorConst).eval()
with tempfile.TemporaryDirectory() as folder:
    export_onnx_qcdq(layer, args=torch.randn(2, 8), export_path=f"{folder}/model.onnx")
