"""torch.compile breaks the graph in snntorch.Leaky(reset_delay=False): forward branches on a tensor buffer.

With reset_delay=False, Leaky.forward picks the reset with `if self.reset_mechanism_val == 0:` (leaky.py L226),
where reset_mechanism_val is a registered tensor buffer: a data-dependent branch that dynamo cannot trace (graph
break gb0170; torch.compile(fullgraph=True) raises with it, and without fullgraph that frame runs eagerly). The
correct behaviour: the neuron compiles into one graph, as it does with the default reset_delay=True (e.g. by
branching on the Python string `reset_mechanism`, which __init__ already does).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L226
"""
import torch
import snntorch
from torch._dynamo.utils import counters

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.5, threshold=0.25, reset_mechanism="zero", reset_delay=False, learn_beta=True)


def step(x, mem):
    return lif(x, mem)


x = torch.randn(2, 4)
counters.clear()
# dynamo's graph capture; the backend plays no part in a break
torch.compile(step, backend="eager")(x, torch.zeros_like(x))
breaks = list(counters["graph_break"]) + list(counters["unimplemented"])
why = sorted({b.splitlines()[0].strip() for b in breaks})  # each break's headline (fullgraph=True raises with it)
assert not breaks, f"{len(breaks)} graph break(s): {why}"
print("Leaky(reset_delay=False) compiles into one graph")
# expect: graph break(s): ['Data-dependent branching']
