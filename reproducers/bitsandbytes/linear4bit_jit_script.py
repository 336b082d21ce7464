"""torch.jit.script(Linear4bit) raises: its forward calls fix_4bit_weight_quant_state_from_module, annotated with
the forward reference Union["Embedding4bit", "Linear4bit"] that TorchScript cannot resolve.

The correct behaviour: a scripted module computing what the layer computes, or a layer that states it is not
scriptable (TorchScript is in maintenance mode; torch.export is the supported path).
https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/nn/modules.py#L487
"""
import torch
import bitsandbytes as bnb

layer = bnb.nn.Linear4bit(64, 3, quant_type="nf4").to("cpu")
torch.jit.script(layer)  # raises RuntimeError
# expect: RuntimeError
