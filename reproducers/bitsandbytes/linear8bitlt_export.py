"""torch.export.export(Linear8bitLt) raises: the layer reads its codes and scales from attributes of the weight
(Int8Params.CB, .SCB), which the fake tensors export traces with do not carry.

The correct behaviour: an exported program computing what the layer computes.
https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/nn/modules.py
"""
import torch
import bitsandbytes as bnb

torch.manual_seed(0)
linear = torch.nn.Linear(64, 3)
layer = bnb.nn.Linear8bitLt(64, 3, has_fp16_weights=False)
layer.load_state_dict(linear.state_dict())
layer = layer.to("cpu")
torch.export.export(layer, (torch.randn(2, 64),))  # raises AttributeError
# expect: AttributeError: 'FakeTensor' object has no attribute 'CB'
