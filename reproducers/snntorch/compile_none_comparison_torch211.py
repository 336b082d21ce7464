"""torch.compile breaks the graph in every snntorch neuron on `if not mem == None:` with torch 2.11 (seen on CUDA).

Every neuron's forward tests its state arguments with `if not mem == None:` (leaky.py L198, and the same in the
other neurons); Tensor.__eq__(None) returns NotImplemented, which torch 2.11's dynamo cannot put in a graph (gb0208,
"torch.* op returned non-Tensor"; torch.compile(fullgraph=True) raises with it); torch 2.13 traces it. Seen on an
H200 with torch 2.11 only, so not verified elsewhere. The correct behaviour: the stepped neuron compiles into one
graph (`if mem is not None:` would). https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L198
"""
# requires: cuda
import torch
import snntorch
from torch._dynamo.utils import counters

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.9, threshold=1.0).cuda()


def run(x):  # the neuron stepped over x's time axis, passing its membrane explicitly
    mem = torch.zeros_like(x[0])
    spikes = []
    for step in range(x.shape[0]):
        spk, mem = lif(x[step], mem)
        spikes.append(spk)
    return torch.stack(spikes)


x = torch.randn(3, 2, 4, device="cuda") * 2  # (T, B, N)
counters.clear()
torch.compile(run, backend="eager")(x)  # dynamo's graph capture; the backend plays no part in a break
breaks = list(counters["graph_break"]) + list(counters["unimplemented"])
why = sorted({b.splitlines()[0].strip() for b in breaks})  # each break's headline (fullgraph=True raises with it)
assert not breaks, f"{len(breaks)} graph break(s): {why}"
print("the stepped Leaky compiles into one graph")
# expect: op returned non-Tensor
