"""norse's NIR exporter writes a LIF's time constant multiplied by dt: tau = dt / tau_mem_inv instead of 1 / tau_mem_inv.

NIR's LIF declares tau (seconds) in `tau dv/dt = (v_leak - v) + r I`. A LIFBoxCell with tau_mem_inv = 100 (tau = 10 ms)
is exported with tau = 1e-5 at dt = 1e-3, so every other importer simulates a membrane 1000 times faster (and
spikingjelly refuses the graph: tau / dt < 1). norse's own importer inverts the same mistake, so only a round trip
through norse hides it.
Correct: the exported tau is 1 / tau_mem_inv = 0.01.
https://github.com/norse/norse/blob/main/norse/torch/utils/export_nir.py
"""
# expect: AssertionError: exported tau
import torch
from norse.torch import LIFBoxCell, SequentialState
from norse.torch.functional.lif_box import LIFBoxParameters
from norse.torch.utils.export_nir import to_nir

ones = torch.ones(3)
params = LIFBoxParameters(tau_mem_inv=100 * ones, v_leak=0 * ones, v_th=ones, v_reset=0 * ones)
graph = to_nir(SequentialState(torch.nn.Linear(4, 3), LIFBoxCell(params, dt=1e-3)), torch.rand(4), dt=1e-3)
lif = next(node for node in graph.nodes.values() if type(node).__name__ == "LIF")
tau = torch.as_tensor(lif.tau)
assert torch.allclose(tau, torch.full((3,), 0.01)), f"exported tau {tau.tolist()} for tau_mem_inv = 100 (tau = 0.01 s)"
