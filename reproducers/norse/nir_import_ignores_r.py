"""norse's NIR importer ignores a LIF's input resistance r: a graph with r = 5 runs as if r were 1.

NIR's LIF is `tau dv/dt = (v_leak - v) + r I`. from_nir builds a LIFBoxCell from tau, v_leak and v_threshold
only (it warns about r and drops it), so a graph another library exported with r != 1 (snntorch writes
r = 1 / (1 - beta)) integrates its input r times too weakly: the neuron spikes less or never.
Correct: the imported cell scales its input by r (or refuses the graph).
https://github.com/norse/norse/blob/main/norse/torch/utils/import_nir.py
"""
# expect: AssertionError: norse's imported LIF
import nir
import numpy as np
import torch
from norse.torch.utils.import_nir import from_nir

dt, tau, r = 1e-4, 5e-4, 5.0  # v += dt / tau * (r I - v): with I = 0.5 the membrane reaches 1.0 after 5 steps
graph = nir.NIRGraph.from_list(
    nir.LIF(tau=np.array([tau]), r=np.array([r]), v_leak=np.array([0.0]), v_threshold=np.array([1.0]),
            v_reset=np.array([0.0])))
module = from_nir(graph, ignore_warnings=True, dt=dt)
state, spikes = None, 0
for _ in range(20):
    z, state = module(torch.full((1, 1), 0.5), state)
    spikes += int(z.sum())
# by NIR's equation v approaches r * I = 2.5: the neuron fires every few steps
assert spikes > 0, f"norse's imported LIF never spikes in 20 steps (it approaches I = 0.5, not r * I = {r * 0.5})"
