"""sinabs' NIR exporter writes an ExpLeak readout's tau_mem (in time steps, exact exponential decay) as NIR's LI tau
with r = 1.

sinabs' ExpLeak (norm_input=False) updates v = exp(-1 / tau_mem) * v + I per step; NIR's LI declares
`tau dv/dt = (v_leak - v) + r I`, which adds only dt / tau * r * I of the input per step. With tau = 10 and r = 1,
one step of I = 1 leaves v = 1 in the layer and v = 0.1 in the graph at dt = 1 step.
Correct: the exported r and tau reproduce the layer's update at a stated dt (r = tau / dt, tau from the decay).
https://github.com/synsense/sinabs/blob/develop/sinabs/nir.py
"""
# expect: AssertionError: after one step
import torch
from sinabs.layers import ExpLeakSqueeze
from sinabs.nir import to_nir

layer = ExpLeakSqueeze(tau_mem=10 * torch.ones(3), norm_input=False, batch_size=1)
graph = to_nir(torch.nn.Sequential(torch.nn.Linear(3, 3), layer), torch.zeros(1, 3))
node = next(node for node in graph.nodes.values() if type(node).__name__ == "LI")
layer.reset_states()  # the export ran the layer on the sample
layer(torch.ones(1, 3))
v_layer = float(layer.v_mem.flatten()[0])
dt = 1.0  # sinabs counts time in steps
v_graph = float(dt / torch.as_tensor(node.tau)[0] * torch.as_tensor(node.r)[0] * 1.0)  # NIR LI from rest, I = 1
assert abs(v_layer - v_graph) < 1e-6, (
    f"after one step of input 1 the layer holds v = {v_layer:g}, its exported NIR LI (tau = "
    f"{float(torch.as_tensor(node.tau)[0]):g}, r = {float(torch.as_tensor(node.r)[0]):g}) {v_graph:g} at dt = 1 step")
