"""copy.deepcopy of a snntorch neuron fails after one forward+backward: its `mem` buffer holds a non-leaf tensor.

Leaky.forward assigns the new membrane, which is part of the autograd graph, to its registered buffer `mem`
(`self.mem = self.state_function(input_)`, leaky.py L210; the other neurons do the same with their state buffers),
and torch refuses to deepcopy non-leaf tensors. The correct behaviour: copy.deepcopy(neuron) succeeds after a
training step, as it does for a neuron that was never run (e.g. by keeping the state detached, or dropping it).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L210
"""
import copy

import torch
import snntorch

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.9, threshold=1.0)
x = (torch.randn(4, 2, 3) * 2).requires_grad_()  # (T, B, N)
lif.reset_mem()
mem = torch.zeros_like(x[0])
spikes = []
for step in range(x.shape[0]):
    spk, mem = lif(x[step], mem)
    spikes.append(spk)
torch.stack(spikes).sum().backward()  # one training step

copy.deepcopy(lif)
# expect: RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol
