"""torch.jit.trace of a layer quantized with torchao's Int8DynamicActivationInt8WeightConfig fails with an internal
assert of the tracer, "iter->isIntList() INTERNAL ASSERT FAILED".

The activation is quantized on every call (``choose_qparams_affine`` with a ``block_size`` list computed from the
traced input's shape); the tracer cannot record that list argument. The weight-only configs trace. The correct
behaviour: the traced layer computes what the layer computes.
https://github.com/pytorch/ao/blob/v0.18.0/torchao/quantization/quantize_/workflows/int8/int8_tensor.py
"""
import torch
from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

linear = torch.nn.Linear(4, 3)
quantize_(linear, Int8DynamicActivationInt8WeightConfig())
x = torch.randn(2, 4)
traced = torch.jit.trace(linear, (x,))  # raises RuntimeError
assert torch.equal(traced(x), linear(x))
# expect: RuntimeError: iter->isIntList() INTERNAL ASSERT FAILED
