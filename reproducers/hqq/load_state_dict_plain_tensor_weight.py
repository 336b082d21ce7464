"""HQQLinear.load_state_dict of plain tensors (what safetensors loads) raises TypeError: W_q must be a Parameter.

HQQLinear overrides load_state_dict and assigns state_dict["W_q"] to self.W_q, a registered Parameter
(hqq/core/quantize.py); a state_dict read back from a format that stores plain tensors (safetensors.torch.load,
or any state detached from the module) holds W_q as a plain uint8 tensor, which nn.Module refuses to assign there.
(Loaded through a parent module, _load_from_state_dict wraps it in a Parameter first.) The correct behaviour: the
layer loaded into computes what the saved layer computes.
"""
import torch
from hqq.core.quantize import BaseQuantizeConfig, HQQLinear


def layer():
    return HQQLinear(torch.nn.Linear(128, 4), quant_config=BaseQuantizeConfig(nbits=4, group_size=64),
                     compute_dtype=torch.float32, device="cpu")


torch.manual_seed(0)
source, target = layer(), layer()
state = {name: value.detach().clone() for name, value in source.state_dict().items()}  # plain tensors
target.load_state_dict(state)  # raises TypeError
x = torch.randn(2, 128)
assert torch.equal(target(x), source(x))
# expect: TypeError: cannot assign 'torch.ByteTensor' as parameter 'W_q'
