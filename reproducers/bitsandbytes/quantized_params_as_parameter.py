"""nn.Parameter(layer.weight) raises for Linear4bit's Params4bit and Linear8bitLt's Int8Params: their detach()
returns a plain Tensor, so torch refuses to make a Parameter of them (Opacus' per-sample gradients do, and fail).

The correct behaviour: detach() of a tensor subclass returns the same subclass (torch's contract for a type used as
a Parameter), so tools that re-wrap parameters keep the quantized weight.
https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/nn/modules.py
"""
import torch
import bitsandbytes as bnb

for layer in (bnb.nn.Linear4bit(64, 3, quant_type="nf4"), bnb.nn.Linear8bitLt(64, 3, has_fp16_weights=False)):
    layer = layer.to("cpu")
    torch.nn.Parameter(layer.weight, requires_grad=False)  # raises RuntimeError
# expect: RuntimeError: Creating a Parameter from an instance of type Params4bit requires that detach() returns
