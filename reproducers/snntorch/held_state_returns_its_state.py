"""snntorch's Leaky and Synaptic as constructed by default return their own state tensor as the membrane.

``Leaky(beta)`` / ``Synaptic(alpha, beta)`` called without their state (``spk, mem = lif(x_t)``) keep the membrane
themselves (``self.mem``) and return that very tensor. An in-place op on the returned membrane (``mem.clamp_(...)``,
``mem.zero_()``, an in-place normalisation in user code) therefore changes the state the next call starts from,
where the same code on a copy leaves it alone. Correct: the returned membrane is not the layer's own state (or the
docs say it is). https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: an in-place op on the returned membrane changed the next step's output
import snntorch
import torch

changed = []
# inputs where the second step fires only from the first step's membrane
for make, level in ((lambda: snntorch.Leaky(beta=0.9), 0.6), (lambda: snntorch.Synaptic(alpha=0.8, beta=0.9), 0.4)):
    x = torch.full((2, 2, 3), level)  # (time, batch, neurons)
    untouched, touched = make(), make()
    mem = untouched(x[0])[-1]
    _ = mem.clone().zero_()  # user code working on a copy
    expected = untouched(x[1])[0]
    mem = touched(x[0])[-1]
    mem.zero_()  # the same user code on the returned membrane itself
    got = touched(x[1])[0]
    if not torch.equal(got, expected):
        changed.append(f"{type(touched).__name__}: {int(got.sum())} spikes instead of {int(expected.sum())}")
assert not changed, f"an in-place op on the returned membrane changed the next step's output: {changed}"
