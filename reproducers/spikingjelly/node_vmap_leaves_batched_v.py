"""A spikingjelly node called under torch.func.vmap keeps the vmap's batched tensor as its membrane v afterwards.

The node stores the membrane of its last step in ``MemoryModule._memories['v']`` and keeps it between calls until
reset(): called under vmap (per-sample computation, ensembling), it keeps the BatchedTensor of a vmap that has
ended, and copy.deepcopy of the node then raises "Cannot access storage of BatchedTensorImpl". Correct: after the
transform the node holds plain tensors (or refuses to store state under a functorch transform).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/base.py
"""
# expect: NotImplementedError: Cannot access storage of BatchedTensorImpl
import copy

import torch
from spikingjelly.activation_based import neuron

torch.manual_seed(0)
for node_type in (neuron.IFNode, neuron.LIFNode, neuron.ParametricLIFNode):
    node = node_type(step_mode="s")
    torch.func.vmap(node)(torch.rand(4, 3))  # (B, N): one time step, mapped over the batch
    copy.deepcopy(node)
