"""snntorch.RSynaptic(reset_delay=False) never applies the same-step reset: the membrane stays above threshold.

With reset_delay=False, RSynaptic.forward computes the reset from its *arguments* and writes it to a local variable
(`do_reset = spk / ... - self.reset`; `mem = mem - do_reset * self.threshold`, rsynaptic.py L366-376, under the
comment "reset membrane potential _right_ after spike"), never to the new state `self.mem` it returns. The correct
behaviour, as Leaky and RLeaky do with reset_delay=False: a step that spikes returns the membrane already reset
(subtract: the new membrane minus threshold).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/rsynaptic.py#L366
"""
import torch
import snntorch

threshold = 1.0
x = torch.tensor([[2.0, 0.5]])  # one step from a zero state: the membrane becomes x, the first neuron spikes
zeros = torch.zeros_like(x)

leaky = snntorch.Leaky(beta=0.5, threshold=threshold, reset_delay=False)
spk, mem = leaky(x, zeros)
print("Leaky     (reset_delay=False): spk", spk.tolist(), "mem", mem.tolist())  # [[1, 0]] [[1.0, 0.5]]

rsyn = snntorch.RSynaptic(alpha=0.5, beta=0.5, V=0.5, threshold=threshold, all_to_all=False, reset_delay=False)
spk, syn, mem = rsyn(x, zeros, zeros, zeros)
print("RSynaptic (reset_delay=False): spk", spk.tolist(), "mem", mem.tolist())
expected = x - spk * threshold  # the same-step reset by subtraction
assert torch.allclose(mem, expected), f"RSynaptic returned membrane {mem.tolist()}, not reset to {expected.tolist()}"
# expect: AssertionError: RSynaptic returned membrane [[2.0, 0.5]], not reset to [[1.0, 0.5]]
