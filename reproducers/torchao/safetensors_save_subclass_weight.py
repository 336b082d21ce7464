"""safetensors cannot save the state_dict of a layer quantized by torchao's quantize_: "Attempted to access the
data pointer on an invalid python storage".

The quantized weight is a wrapper tensor subclass (Int8Tensor, IntxUnpackedToInt8Tensor, Float8Tensor) without a
storage of its own, which safetensors' save reads. torchao offers no safetensors path for these tensors in
``torch.save``'s place (its prototype helpers flatten Float8Tensor only). The correct behaviour: the state_dict
saves and loads back into a freshly quantized layer that computes the same.
https://github.com/pytorch/ao/issues/2338
"""
import torch
from safetensors.torch import save
from torchao import quantization

for config in ("Int8WeightOnlyConfig", "IntxWeightOnlyConfig", "Int8DynamicActivationInt8WeightConfig",
               "Float8WeightOnlyConfig"):
    linear = torch.nn.Linear(4, 3)
    quantization.quantize_(linear, getattr(quantization, config)())
    save(linear.state_dict())  # raises RuntimeError
# expect: RuntimeError: Attempted to access the data pointer on an invalid python storage
