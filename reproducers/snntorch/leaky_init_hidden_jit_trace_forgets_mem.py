"""snntorch's Leaky(init_hidden=True), traced with torch.jit.trace, forgets its membrane between calls.

With init_hidden=True the layer keeps mem between calls until reset_mem(): fed one time step per call, step t depends
on every earlier step. Traced on a fresh layer, the graph records the re-initialisation of mem to zeros (its shape
differs from the input's at that moment), so every call of the traced layer starts from rest; nothing warns.
Correct: the traced layer, fed the same steps, spikes as the layer does (or tracing refuses the hidden state).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the traced layer's spikes differ from the layer's
import snntorch
import torch

torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons): no single step reaches the threshold
layer = snntorch.Leaky(beta=0.9, threshold=1.0, init_hidden=True)
traced = torch.jit.trace(snntorch.Leaky(beta=0.9, threshold=1.0, init_hidden=True), (x[0],), check_trace=False)
eager = torch.stack([layer(x_t) for x_t in x])
from_trace = torch.stack([traced(x_t) for x_t in x])
assert torch.equal(from_trace, eager), \
    f"the traced layer's spikes differ from the layer's: {int(from_trace.sum())} spikes instead of {int(eager.sum())}"
