"""torch.jit.script of an optimum-quanto quantized model (frozen or not) raises: QLinear keeps its qtype as a plain
Python object (weight_qtype), which TorchScript cannot type.

The correct behaviour: the model scripts and computes what it computes eagerly, or quanto documents that
TorchScript is not supported.
https://github.com/huggingface/optimum-quanto/blob/v0.2.7/optimum/quanto/nn/qmodule.py
"""
import torch
from optimum.quanto import qint8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qint8)
scripted = torch.jit.script(model)  # raises RuntimeError: "Module 'QLinear' has no attribute 'weight_qtype'"
x = torch.randn(2, 8)
assert torch.allclose(scripted(x), model(x))
# expect: RuntimeError:
