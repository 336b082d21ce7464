"""snntorch's Leaky and Synaptic as constructed by default, exported with torch.export, forget their state between
calls.

``Leaky(beta)`` / ``Synaptic(alpha, beta)`` called without their state (``spk, mem = lif(x_t)``) keep it themselves
(``self.mem``, ``self.syn``) between calls until reset_mem(): fed one time step per call, step t depends on every
earlier step. Exported inside a model (as a user's network holds it) on a fresh layer, the program records the
re-initialisation of the state to zeros (its shape differs from the input's at that moment) and the state is no
state of the program, so every call of the exported model starts from rest; nothing warns.
Correct: the exported module, fed the same steps, spikes as the layer does (or export refuses the held state).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the exported layers' spikes differ from the layers'
import snntorch
import torch


class Net(torch.nn.Module):
    """A user's model holding the layer, as the README's loop uses it."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)[0]


torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons): no single step reaches the threshold
differ = []
for make in (lambda: snntorch.Leaky(beta=0.9), lambda: snntorch.Synaptic(alpha=0.8, beta=0.9)):
    model = Net(make())
    exported = torch.export.export(Net(make()), (x[0],)).module()
    eager = torch.stack([model(x_t) for x_t in x])
    from_export = torch.stack([exported(x_t) for x_t in x])
    if not torch.equal(from_export, eager):
        differ.append(f"{type(model.layer).__name__}: {int(from_export.sum())} spikes instead of {int(eager.sum())}")
assert not differ, f"the exported layers' spikes differ from the layers': {differ}"
