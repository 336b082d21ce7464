"""sinabs' NIR exporter writes an IAF layer as a NIR IF, dropping its multi-spike output and its subtractive reset.

IAFSqueeze's defaults (spike_fn=MultiSpike, reset_fn=MembraneSubtract) emit floor(v / threshold) spikes in a step and
subtract them from v; NIR's IF emits one spike where v > v_threshold and resets v to v_reset. to_nir writes
nir.IF(r=1, v_threshold) and nothing of the spike or reset function, so every importer (and NIR's own semantics)
gives one spike and a reset to 0 where the layer gave two and kept the rest.
Correct: the exporter refuses a layer NIR's IF cannot describe (or documents the change).
https://github.com/synsense/sinabs/blob/develop/sinabs/nir.py
"""
# expect: AssertionError: the layer emits
import torch
from sinabs.layers import IAFSqueeze
from sinabs.nir import to_nir

layer = IAFSqueeze(spike_threshold=torch.ones(3), batch_size=1)
graph = to_nir(torch.nn.Sequential(torch.nn.Linear(3, 3), layer), torch.zeros(1, 3))
node = next(node for node in graph.nodes.values() if type(node).__name__ == "IF")
x = torch.full((1, 3), 2.5)  # one step, v = 2.5 in units of the threshold
spikes = layer(x)
graph_spikes = (x * torch.as_tensor(node.r) > torch.as_tensor(node.v_threshold)).float()  # NIR IF: one step, dt=1
assert torch.equal(spikes, graph_spikes), (
    f"the layer emits {spikes[0, 0]:g} spikes in a step where its exported NIR IF emits {graph_spikes[0, 0]:g}")
