"""Under torch.utils.checkpoint, snntorch.Leaky(reset_delay=False) ends forward+backward with the un-reset membrane.

With reset_delay=False the last write to the state, `self.mem = self.mem - do_reset * self.mem` (leaky.py L222-229),
comes after every tensor autograd saves; checkpoint's recomputation in backward re-runs forward, which writes
`self.mem` again, and stops once the saved tensors are rebuilt, so the neuron is left holding the membrane before
the same-step reset. The correct behaviour: after a checkpointed forward+backward the neuron holds the state an
eager forward+backward leaves (`mem` is the reset membrane).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L222
"""
import torch
from torch.utils.checkpoint import checkpoint
import snntorch


def make():
    return snntorch.Leaky(beta=0.05, threshold=0.25, reset_mechanism="zero", reset_delay=False, learn_beta=True)


def run(lif, x):  # the neuron stepped over x's time axis, from a zero membrane
    mem = torch.zeros_like(x[0])
    spikes = []
    for step in range(x.shape[0]):
        spk, mem = lif(x[step], mem)
        spikes.append(spk)
    return torch.stack(spikes)


x = torch.tensor([[[0.5]]])  # (T, B, N) = (1, 1, 1): above threshold, so the step spikes and resets
eager, checkpointed = make(), make()
run(eager, x.clone().requires_grad_()).sum().backward()
checkpoint(run, checkpointed, x.clone().requires_grad_(), use_reentrant=False).sum().backward()
print("mem after eager:", eager.mem.flatten().tolist(), " after checkpoint:", checkpointed.mem.flatten().tolist())
assert torch.equal(checkpointed.mem, eager.mem), "after checkpoint the neuron holds the un-reset membrane"
# expect: AssertionError: after checkpoint the neuron holds the un-reset membrane
