"""A layer quantized by torchao's quantize_ cannot be pickled (nor saved whole with torch.save, nor sent to another
process): "'functools.partial' object has no attribute '__name__'".

quantize_ replaces the layer's extra_repr by an instance attribute, ``types.MethodType(functools.partial(...),
module)`` (torchao/quantization/quant_api.py); pickle stores a bound method by its function's name, which a partial
lacks. The quantized weight itself pickles. The correct behaviour: the layer pickles and its copy computes what it
computes. https://github.com/pytorch/ao/blob/v0.18.0/torchao/quantization/quant_api.py
"""
import pickle

import torch
from torchao import quantization

x = torch.randn(2, 4)
for config in ("Int8WeightOnlyConfig", "IntxWeightOnlyConfig", "Int8DynamicActivationInt8WeightConfig",
               "Float8WeightOnlyConfig"):
    linear = torch.nn.Linear(4, 3)
    quantization.quantize_(linear, getattr(quantization, config)())
    copy = pickle.loads(pickle.dumps(linear))  # raises AttributeError
    assert torch.equal(copy(x), linear(x))
# expect: AttributeError: 'functools.partial' object has no attribute '__name__'
