"""sinabs' NIR exporter writes a LIF layer's tau_mem (in time steps, exact exponential decay) as NIR's tau with r = 1.

sinabs' LIF (norm_input=False) updates v = exp(-1 / tau_mem) * v + I per step; NIR's LIF declares
`tau dv/dt = (v_leak - v) + r I`, which at any dt adds only dt / tau * r * I of the input per step. With tau = 10
and r = 1, no dt makes the graph hold the layer's membrane: one step of I = 1 leaves v = 1 in the layer and
v = dt / 10 in the graph (0.1 at dt = 1 step).
Correct: the exported r and tau reproduce the layer's update at a stated dt (r = tau / dt, tau from the decay).
https://github.com/synsense/sinabs/blob/develop/sinabs/nir.py
"""
# expect: AssertionError: after one step
import torch
from sinabs.layers import LIFSqueeze
from sinabs.nir import to_nir

layer = LIFSqueeze(tau_mem=10 * torch.ones(3), spike_threshold=10 * torch.ones(3), norm_input=False, batch_size=1)
graph = to_nir(torch.nn.Sequential(torch.nn.Linear(3, 3), layer), torch.zeros(1, 3))
node = next(node for node in graph.nodes.values() if type(node).__name__ == "LIF")
layer.reset_states()  # the export ran the layer on the sample
layer(torch.ones(1, 3))
v_layer = float(layer.v_mem.flatten()[0])
dt = 1.0  # sinabs counts time in steps
v_graph = float(dt / torch.as_tensor(node.tau)[0] * torch.as_tensor(node.r)[0] * 1.0)  # NIR LIF from rest, I = 1
assert abs(v_layer - v_graph) < 1e-6, (
    f"after one step of input 1 the layer holds v = {v_layer:g}, its exported NIR LIF (tau = "
    f"{float(torch.as_tensor(node.tau)[0]):g}, r = {float(torch.as_tensor(node.r)[0]):g}) {v_graph:g} at dt = 1 step")
