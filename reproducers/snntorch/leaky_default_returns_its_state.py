"""snntorch's Leaky as constructed by default returns its own state tensor as the membrane.

Leaky(beta) called without ``mem`` (``spk, mem = lif(x_t)``) keeps the membrane itself (``self.mem``) and returns
that very tensor. An in-place op on the returned membrane (``mem.clamp_(...)``, ``mem.zero_()``, an in-place
normalisation in user code) therefore changes the state the next call starts from, where the same code on a copy
leaves it alone. Correct: the returned membrane is not the layer's own state (or the docs say it is).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: an in-place op on the returned membrane changed the next step's output
import snntorch
import torch

torch.manual_seed(0)
x = torch.rand(2, 2, 3) * 0.9 + 0.5  # (time, batch, neurons): the second step fires from the first's membrane
untouched, touched = snntorch.Leaky(beta=0.9), snntorch.Leaky(beta=0.9)
_, mem = untouched(x[0])
_ = mem.clone().zero_()  # user code working on a copy
expected, _ = untouched(x[1])
_, mem = touched(x[0])
mem.zero_()  # the same user code on the returned membrane itself
got, _ = touched(x[1])
assert torch.equal(got, expected), \
    f"an in-place op on the returned membrane changed the next step's output: {int(got.sum())} spikes instead of {int(expected.sum())}"
