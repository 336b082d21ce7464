"""torch.jit.script of a layer quantized by torchao's quantize_ compiles, and its first call fails in the TorchScript
interpreter at ``F.linear(input, self.weight, self.bias)``.

TorchScript runs aten ops directly and never calls the quantized weight's ``__torch_function__`` /
``__torch_dispatch__`` (Python), so the weight subclass (Int8Tensor, IntxUnpackedToInt8Tensor, Float8Tensor) cannot
compute the linear. The correct behaviour: the scripted layer computes what the layer computes, or scripting refuses
it with a clear error. https://github.com/pytorch/ao/blob/v0.18.0/torchao/utils.py
"""
import torch
from torchao.quantization import Int8WeightOnlyConfig, quantize_

linear = torch.nn.Linear(4, 3)
quantize_(linear, Int8WeightOnlyConfig())
scripted = torch.jit.script(linear)
x = torch.randn(2, 4)
try:
    y = scripted(x)
except RuntimeError as error:  # its last line is an empty "RuntimeError:": name the failure it starts with
    raise AssertionError(f"the scripted layer's call raised: {str(error).splitlines()[0]}") from error
assert torch.equal(y, linear(x))
# expect: AssertionError: the scripted layer's call raised: The following operation failed in the TorchScript
