"""torch.export.export of an optimum-quanto model with qint4 weights, quantized but not frozen, raises RuntimeError:
"Unable to cast NotImplemented to Tensor" (qint8 weights, or a frozen qint4 model, export).

Each call quantizes the float weight into a WeightQBitsTensor, whose linear goes through QuantizedLinearFunction;
under export's tracing that path yields NotImplemented where a tensor is expected. The correct behaviour: the
exported program computes what the model computes.
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/tensor/weights/qbits.py
"""
import torch
from optimum.quanto import qint4, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 3))
quantize(model, weights=qint4)
x = torch.randn(2, 256)
program = torch.export.export(model, (x,))  # raises RuntimeError
assert torch.allclose(program.module()(x), model(x))
# expect: RuntimeError: Unable to cast NotImplemented to Tensor
