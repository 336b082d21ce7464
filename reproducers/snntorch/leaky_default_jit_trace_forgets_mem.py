"""snntorch's Leaky as constructed by default, traced with torch.jit.trace, forgets its membrane between calls.

Leaky(beta) called without ``mem`` (``spk, mem = lif(x_t)``) keeps the membrane itself (``self.mem``) between calls
until reset_mem(): fed one time step per call, step t depends on every earlier step. Traced on a fresh layer, the
graph records the re-initialisation of mem to zeros (its shape differs from the input's at that moment), so every
call of the traced layer starts from rest; nothing warns.
Correct: the traced layer, fed the same steps, spikes as the layer does (or tracing refuses the held state).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the traced layer's spikes differ from the layer's
import snntorch
import torch

torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons): no single step reaches the threshold
layer = snntorch.Leaky(beta=0.9)
traced = torch.jit.trace(snntorch.Leaky(beta=0.9), (x[0],), check_trace=False, strict=False)
eager = torch.stack([layer(x_t)[0] for x_t in x])
from_trace = torch.stack([traced(x_t)[0] for x_t in x])
assert torch.equal(from_trace, eager), \
    f"the traced layer's spikes differ from the layer's: {int(from_trace.sum())} spikes instead of {int(eager.sum())}"
