"""torch.jit.script(Linear8bitLt) raises: the layer holds its quantization state in a MatmulLtState, a plain Python
object TorchScript cannot type.

The correct behaviour: a scripted module computing what the layer computes, or a layer that states it is not
scriptable. https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/nn/modules.py
"""
import torch
import bitsandbytes as bnb

layer = bnb.nn.Linear8bitLt(64, 3, has_fp16_weights=False).to("cpu")
torch.jit.script(layer)  # raises RuntimeError
# expect: RuntimeError
