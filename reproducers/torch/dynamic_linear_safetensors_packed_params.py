"""safetensors refuses the state_dict of torch.ao.nn.quantized.dynamic.Linear: it holds a dtype and a tuple.

The quantized dynamic Linear saves its packed weight as "_packed_params.dtype" (a torch.dtype) and
"_packed_params._packed_params" (a tuple of tensors), which safetensors.torch.save refuses ("expected torch.Tensor").
Users who saved a dynamically quantized model met it: https://github.com/huggingface/sentence-transformers/issues/2923.
The correct behaviour: the layer's state_dict is saved by safetensors and loads back into a fresh layer.
"""
import torch
from safetensors.torch import load, save
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

torch.manual_seed(0)
linear = torch.nn.Linear(4, 3)
linear.qconfig = torch.ao.quantization.default_dynamic_qconfig
layer = DynamicLinear.from_float(linear)
restored = DynamicLinear(4, 3)
restored.load_state_dict(load(save(layer.state_dict())))  # save raises
x = torch.randn(2, 4)
assert torch.equal(restored(x), layer(x))
# expect: ValueError: Key `_packed_params.dtype` is invalid
