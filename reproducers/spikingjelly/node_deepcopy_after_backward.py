"""copy.deepcopy of a spikingjelly neuron fails after one forward+backward: the membrane v it keeps is non-leaf.

After a training step (forward and backward, no reset) an IFNode keeps the membrane potential v of the last step in
MemoryModule._memories; that tensor is part of the autograd graph, and torch refuses to deepcopy non-leaf tensors.
The correct behaviour: copy.deepcopy(node) succeeds (e.g. by detaching or dropping the state when copying), as it does
for a module that was never run.
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/base.py
"""
import copy

import torch
from spikingjelly.activation_based import neuron, surrogate

torch.manual_seed(0)
node = neuron.IFNode(v_threshold=0.25, v_reset=None, surrogate_function=surrogate.Sigmoid(alpha=4.0),
                     detach_reset=False, step_mode="m")
x = torch.rand(4, 2, 3, requires_grad=True)  # (T, B, N)
node(x).sum().backward()  # one training step

copy.deepcopy(node)
# expect: RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol
