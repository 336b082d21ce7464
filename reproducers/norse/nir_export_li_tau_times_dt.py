"""norse's NIR exporter writes a leaky integrator's time constant multiplied by dt: tau = dt / tau_mem_inv.

NIR's LI declares tau (seconds) in `tau dv/dt = (v_leak - v) + r I`. A LIBoxCell readout with tau_mem_inv = 100
(tau = 10 ms) is exported with tau = 1e-5 at dt = 1e-3: the graph's readout is 1000 times faster than the cell's.
Correct: the exported tau is 1 / tau_mem_inv = 0.01.
https://github.com/norse/norse/blob/main/norse/torch/utils/export_nir.py
"""
# expect: AssertionError: exported tau
import torch
from norse.torch import LIBoxCell, SequentialState
from norse.torch.functional.leaky_integrator_box import LIBoxParameters
from norse.torch.utils.export_nir import to_nir

ones = torch.ones(3)
cell = LIBoxCell(LIBoxParameters(tau_mem_inv=100 * ones, v_leak=0 * ones), dt=1e-3)
graph = to_nir(SequentialState(torch.nn.Linear(4, 3), cell), torch.rand(4), dt=1e-3)
li = next(node for node in graph.nodes.values() if type(node).__name__ == "LI")
tau = torch.as_tensor(li.tau)
assert torch.allclose(tau, torch.full((3,), 0.01)), f"exported tau {tau.tolist()} for tau_mem_inv = 100 (tau = 0.01 s)"
