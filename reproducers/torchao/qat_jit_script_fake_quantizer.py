"""torch.jit.script of torchao's QAT FakeQuantizedLinear fails: TorchScript cannot compile its fake quantizer's
forward ("FakeQuantizeConfigBase ... object has no attribute or method 'range_learning'").

IntxFakeQuantizer.forward reads self.config.range_learning; TorchScript types the config attribute as the base class
FakeQuantizeConfigBase, which has no such attribute. The correct behaviour: the scripted layer computes what the
layer computes. https://github.com/pytorch/ao/blob/v0.18.0/torchao/quantization/qat/fake_quantizer.py
"""
import torch
from torchao.quantization import quantize_
from torchao.quantization.qat import IntxFakeQuantizeConfig, QATConfig

model = torch.nn.Sequential(torch.nn.Linear(32, 3))
quantize_(model, QATConfig(activation_config=IntxFakeQuantizeConfig(torch.int8, "per_token", is_symmetric=False),
                           weight_config=IntxFakeQuantizeConfig(torch.int4, group_size=32, is_symmetric=True),
                           step="prepare"))
torch.jit.script(model[0])  # raises RuntimeError (its message ends with the source line it cannot compile)
# expect: and (self.scale is None or self.zero_point is None)
