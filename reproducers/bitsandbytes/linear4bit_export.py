"""torch.export.export(Linear4bit) raises: tracing with fake tensors, bitsandbytes re-wraps the weight as a
Params4bit (a Tensor subclass) whose raw tensor is already a FakeTensor.

The correct behaviour: an exported program computing what the layer computes.
https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/nn/modules.py
"""
import torch
import bitsandbytes as bnb

torch.manual_seed(0)
linear = torch.nn.Linear(64, 3)
layer = bnb.nn.Linear4bit(64, 3, quant_type="nf4")
layer.load_state_dict(linear.state_dict())
layer = layer.to("cpu")
torch.export.export(layer, (torch.randn(2, 64),))  # raises RuntimeError
# expect: RuntimeError: Creating a new Tensor subclass Params4bit but the raw Tensor object is already associated
