"""Under torch.utils.checkpoint, snntorch.RLeaky (and RSynaptic) end forward+backward holding a stale spike `spk`.

The last write to the recurrent neurons' state is `self.spk = self.fire(self.mem)` (rleaky.py L342, the spike fed
back at the next step), after the last tensor autograd saves (the surrogate's input); checkpoint's recomputation
in backward re-runs forward, which writes the state again, and stops once the saved tensors are rebuilt, so the
neuron is left holding the previous step's spike. The correct behaviour: after a checkpointed forward+backward the
neuron holds the state an eager forward+backward leaves.
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/rleaky.py#L342
"""
import torch
from torch.utils.checkpoint import checkpoint
import snntorch


def make(kind):
    torch.manual_seed(0)
    if kind == "RLeaky":
        return snntorch.RLeaky(beta=0.5, threshold=0.5, all_to_all=True, linear_features=3)
    return snntorch.RSynaptic(alpha=0.5, beta=0.5, V=0.5, threshold=0.5, all_to_all=False)


def run(neuron, x):  # the neuron stepped over x's time axis, from a zero state
    state = [torch.zeros_like(x[0]) for _ in range(2 if isinstance(neuron, snntorch.RLeaky) else 3)]
    spikes = []
    for step in range(x.shape[0]):
        state = neuron(x[step], *state)
        spikes.append(state[0])
    return torch.stack(spikes)


torch.manual_seed(1)
x = torch.rand(4, 2, 3) * 2  # (T, B, N)
for kind in ("RLeaky", "RSynaptic"):
    eager, checkpointed = make(kind), make(kind)
    run(eager, x.clone().requires_grad_()).sum().backward()
    checkpoint(run, checkpointed, x.clone().requires_grad_(), use_reentrant=False).sum().backward()
    assert torch.equal(checkpointed.spk, eager.spk), \
        f"{kind}: after checkpoint the neuron holds a stale spike `spk`"
# expect: AssertionError: RLeaky: after checkpoint the neuron holds a stale spike `spk`
