"""A sinabs IAF or LIF layer in a network exported with torch.export forgets its membrane between calls.

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
from sinabs.layers import IAF, LIF

torch.manual_seed(0)


def layers():  # fresh IAF and LIF layers, as the suite builds them
    common = dict(spike_threshold=torch.tensor(1.0), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
                  surrogate_grad_fn=SingleExponential())
    return {"IAF": IAF(**common), "LIF": LIF(tau_mem=2.0, norm_input=False, **common)}


x = torch.rand(2, 5, 3) * 0.9  # (batch, time, neurons): no single step reaches the threshold
wrong = []
for name, layer in layers().items():
    network = torch.nn.Sequential(layer)
    exported = torch.export.export(torch.nn.Sequential(layers()[name]), (x[:, :1],)).module()
    eager = torch.cat([network(x[:, t:t + 1]) for t in range(x.shape[1])], dim=1)
    from_export = torch.cat([exported(x[:, t:t + 1]) for t in range(x.shape[1])], dim=1)
    if not torch.equal(from_export, eager):
        wrong.append(f"{name}: {int(from_export.sum())} spikes instead of {int(eager.sum())}")
assert not wrong, "the exported layer's spikes differ from the layer's: " + "; ".join(wrong)
