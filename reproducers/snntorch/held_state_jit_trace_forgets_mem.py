"""snntorch's Leaky and Synaptic as constructed by default, traced with torch.jit.trace, forget their state between
calls.

``Leaky(beta)`` / ``Synaptic(alpha, beta)`` called without their state (``spk, mem = lif(x_t)``) keep it themselves
(``self.mem``, ``self.syn``) between calls until reset_mem(): fed one time step per call, step t depends on every
earlier step. Traced on a fresh layer, the graph records the re-initialisation of the state to zeros (its shape
differs from the input's at that moment), so every call of the traced layer starts from rest; nothing warns.
Correct: the traced layer, fed the same steps, spikes as the layer does (or tracing refuses the held state).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the traced layers' spikes differ from the layers'
import snntorch
import torch

torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons): no single step reaches the threshold
differ = []
for make in (lambda: snntorch.Leaky(beta=0.9), lambda: snntorch.Synaptic(alpha=0.8, beta=0.9)):
    layer = make()
    traced = torch.jit.trace(make(), (x[0],), check_trace=False, strict=False)
    eager = torch.stack([layer(x_t)[0] for x_t in x])
    from_trace = torch.stack([traced(x_t)[0] for x_t in x])
    if not torch.equal(from_trace, eager):
        differ.append(f"{type(layer).__name__}: {int(from_trace.sum())} spikes instead of {int(eager.sum())}")
assert not differ, f"the traced layers' spikes differ from the layers': {differ}"
