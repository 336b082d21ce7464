"""load_state_dict(assign=True) of a Linear8bitLt's own state_dict into another quantized Linear8bitLt raises
"Loading a quantized checkpoint into non-quantized Linear8bitLt is not supported" (the strict load without assign
works): assign puts the loaded int8 tensor in place of the Int8Params, which the layer's _load_from_state_dict then
takes for a non-quantized weight.

The correct behaviour: the layer holds the loaded tensors and computes what the source computes.
https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/nn/modules.py
"""
import torch
import bitsandbytes as bnb


def built():
    layer = bnb.nn.Linear8bitLt(64, 3, has_fp16_weights=False)
    layer.load_state_dict(torch.nn.Linear(64, 3).state_dict())
    return layer.to("cpu")


torch.manual_seed(0)
source, target = built(), built()
target.load_state_dict(source.state_dict(), assign=True)  # raises RuntimeError
# expect: RuntimeError: Loading a quantized checkpoint into non-quantized Linear8bitLt is not supported
