"""torch.export.export fails on torch.ao.nn.quantized.dynamic.Linear: its packed weight, a TorchScript object
(LinearPackedParamsBase), "does not have a field with name '__obj_flatten__'".

torch.export lifts script objects held by a module only when they declare how to flatten themselves; the quantized
linear's packed parameters do not, so export raises. The correct behaviour: the layer exports and the exported
program computes what the layer computes.
https://github.com/pytorch/pytorch/blob/main/torch/ao/nn/quantized/dynamic/modules/linear.py
"""
import torch
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

torch.manual_seed(0)
linear = torch.nn.Linear(4, 3)
linear.qconfig = torch.ao.quantization.default_dynamic_qconfig
layer = DynamicLinear.from_float(linear)
x = torch.randn(2, 4)
program = torch.export.export(layer, (x,))  # raises AttributeError
assert torch.equal(program.module()(x), layer(x))
# expect: AttributeError: __torch__.torch.classes.quantized.LinearPackedParamsBase
