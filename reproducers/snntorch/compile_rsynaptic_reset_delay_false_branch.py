"""torch.compile breaks the graph in snntorch.RSynaptic(reset_delay=False): forward branches on a tensor buffer.

With reset_delay=False, RSynaptic.forward picks the reset with `if self.reset_mechanism_val == 0:` (rsynaptic.py
L371), where reset_mechanism_val is a registered tensor buffer: a data-dependent branch that dynamo cannot trace
(graph break gb0170; torch.compile(fullgraph=True) raises with it, and without fullgraph that frame runs eagerly).
The correct behaviour: the neuron compiles into one graph, as it does with the default reset_delay=True (e.g. by
branching on the Python string `reset_mechanism`).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/rsynaptic.py#L371
"""
import torch
import snntorch
from torch._dynamo.utils import counters

torch.manual_seed(0)
neuron = snntorch.RSynaptic(alpha=0.5, beta=0.5, V=0.5, threshold=0.25, all_to_all=False, reset_delay=False,
                            reset_mechanism="subtract")


def step(x, spk, syn, mem):
    return neuron(x, spk, syn, mem)


x = torch.randn(2, 4)
state = [torch.zeros_like(x) for _ in range(3)]
counters.clear()
torch.compile(step, backend="eager")(x, *state)  # dynamo's graph capture; the backend plays no part in a break
breaks = list(counters["graph_break"]) + list(counters["unimplemented"])
why = sorted({b.splitlines()[0].strip() for b in breaks})  # each break's headline (fullgraph=True raises with it)
assert not breaks, f"{len(breaks)} graph break(s): {why}"
print("RSynaptic(reset_delay=False) compiles into one graph")
# expect: graph break(s): ['Data-dependent branching']
