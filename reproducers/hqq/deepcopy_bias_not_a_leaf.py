"""copy.deepcopy of an HQQLinear built from an nn.Linear raises RuntimeError: its bias is not a graph leaf.

HQQLinear keeps the bias as linear.bias.clone() (hqq/core/quantize.py, HQQLinear.initialize), outside no_grad: a
tensor that requires grad and hangs in the autograd graph of the original Linear's bias, which torch's
Tensor.__deepcopy__ refuses. The correct behaviour: the copy computes what the layer computes.
"""
import copy

import torch
from hqq.core.quantize import BaseQuantizeConfig, HQQLinear

torch.manual_seed(0)
layer = HQQLinear(torch.nn.Linear(128, 4), quant_config=BaseQuantizeConfig(nbits=4, group_size=64),
                  compute_dtype=torch.float32, device="cpu")
x = torch.randn(2, 128)
clone = copy.deepcopy(layer)  # raises RuntimeError
assert torch.equal(clone(x), layer(x))
# expect: RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol
