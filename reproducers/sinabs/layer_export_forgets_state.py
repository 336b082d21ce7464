"""A sinabs IAF layer in a network exported with torch.export forgets its membrane between calls.

A sinabs layer keeps v_mem between calls until reset_states(): fed one time step per call, step t depends on every
earlier step. Exported inside a network (nn.Sequential, as a user's model holds it) on a fresh layer, the program
records the re-initialisation of v_mem to zeros (its shape differs from the input's at that moment), so every call
of the exported module starts from rest; nothing warns. (The bare layer, exported alone, raises on its first call.)
Correct: the exported module, fed the same steps, spikes as the layer does (or export refuses the state).
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/stateful_layer.py
"""
# expect: AssertionError: the exported layer's spikes differ from the layer's
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF

torch.manual_seed(0)


def iaf():
    return IAF(spike_threshold=torch.tensor(1.0), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
               surrogate_grad_fn=SingleExponential())


x = torch.rand(2, 5, 3) * 0.9  # (batch, time, neurons): no single step reaches the threshold
layer = torch.nn.Sequential(iaf())
exported = torch.export.export(torch.nn.Sequential(iaf()), (x[:, :1],)).module()
eager = torch.cat([layer(x[:, t:t + 1]) for t in range(x.shape[1])], dim=1)
from_export = torch.cat([exported(x[:, t:t + 1]) for t in range(x.shape[1])], dim=1)
assert torch.equal(from_export, eager), \
    f"the exported layer's spikes differ from the layer's: {int(from_export.sum())} spikes instead of {int(eager.sum())}"
