"""snntorch's Leaky as constructed by default, exported with torch.export, forgets its membrane between calls.

Leaky(beta) called without ``mem`` (``spk, mem = lif(x_t)``) keeps the membrane itself (``self.mem``) between calls
until reset_mem(): fed one time step per call, step t depends on every earlier step. Exported inside a model (as a
user's network holds it) on a fresh layer, the program records the re-initialisation of mem to zeros (its shape
differs from the input's at that moment) and mem is no state of the program, so every call of the exported model
starts from rest; nothing warns.
Correct: the exported module, fed the same steps, spikes as the layer does (or export refuses the held state).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the exported layer's spikes differ from the layer's
import snntorch
import torch


class Net(torch.nn.Module):
    """A user's model holding the layer, as the README's loop uses it."""

    def __init__(self):
        super().__init__()
        self.lif = snntorch.Leaky(beta=0.9)

    def forward(self, x):
        spk, _ = self.lif(x)
        return spk


torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons): no single step reaches the threshold
model = Net()
exported = torch.export.export(Net(), (x[0],)).module()
eager = torch.stack([model(x_t) for x_t in x])
from_export = torch.stack([exported(x_t) for x_t in x])
assert torch.equal(from_export, eager), \
    f"the exported layer's spikes differ from the layer's: {int(from_export.sum())} spikes instead of {int(eager.sum())}"
