"""torch.jit.trace of torchao's QAT FakeQuantizedLinear fails with an internal assert of the tracer,
"iter->isIntList() INTERNAL ASSERT FAILED".

The per-token activation fake quantizer computes its scale and zero point on every call with choose_qparams_affine,
whose block_size list comes from the traced input's shape; the tracer cannot record that list argument. The correct
behaviour: the traced layer computes what the layer computes.
https://github.com/pytorch/ao/blob/v0.18.0/torchao/quantization/qat/fake_quantizer.py
"""
import torch
from torchao.quantization import quantize_
from torchao.quantization.qat import IntxFakeQuantizeConfig, QATConfig

model = torch.nn.Sequential(torch.nn.Linear(32, 3))
quantize_(model, QATConfig(activation_config=IntxFakeQuantizeConfig(torch.int8, "per_token", is_symmetric=False),
                           weight_config=IntxFakeQuantizeConfig(torch.int4, group_size=32, is_symmetric=True),
                           step="prepare"))
x = torch.randn(2, 32)
traced = torch.jit.trace(model[0], (x,))  # raises RuntimeError
assert torch.equal(traced(x), model[0](x))
# expect: RuntimeError: iter->isIntList() INTERNAL ASSERT FAILED
