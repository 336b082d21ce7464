"""snntorch's Leaky(init_hidden=True), exported with torch.export, forgets its membrane between calls.

With init_hidden=True the layer keeps mem between calls until reset_mem(): fed one time step per call, step t depends
on every earlier step. Exported inside a network (nn.Sequential, as a user's model holds it) on a fresh layer, the
program records the re-initialisation of mem to zeros (its shape differs from the input's at that moment) and mem is
no state of the program, so every call of the exported module starts from rest; nothing warns.
Correct: the exported module, fed the same steps, spikes as the layer does (or export refuses the hidden state).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the exported layer's spikes differ from the layer's
import snntorch
import torch

torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons): no single step reaches the threshold
layer = torch.nn.Sequential(snntorch.Leaky(beta=0.9, threshold=1.0, init_hidden=True))
exported = torch.export.export(torch.nn.Sequential(snntorch.Leaky(beta=0.9, threshold=1.0, init_hidden=True)),
                               (x[0],)).module()
eager = torch.stack([layer(x_t) for x_t in x])
from_export = torch.stack([exported(x_t) for x_t in x])
assert torch.equal(from_export, eager), \
    f"the exported layer's spikes differ from the layer's: {int(from_export.sum())} spikes instead of {int(eager.sum())}"
