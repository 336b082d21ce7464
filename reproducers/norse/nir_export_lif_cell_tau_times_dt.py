"""norse's NIR exporter writes LIFCell's two time constants multiplied by dt: tau = dt / tau_inv.

LIFCell is exported as nir.CubaLIF with tau_syn = dt / tau_syn_inv and tau_mem = dt / tau_mem_inv. With norse's
defaults (tau_syn_inv = 200, tau_mem_inv = 100: 5 ms and 10 ms) at dt = 1e-3 the graph says 5e-6 s and 1e-5 s, a
neuron 1000 times faster (spikingjelly's importer refuses it: time constants below dt).
Correct: tau_syn = 1 / tau_syn_inv = 0.005 and tau_mem = 1 / tau_mem_inv = 0.01.
https://github.com/norse/norse/blob/main/norse/torch/utils/export_nir.py
"""
# expect: AssertionError: exported tau_syn
import torch
from norse.torch import LIFCell, SequentialState
from norse.torch.functional.lif import LIFParameters
from norse.torch.utils.export_nir import to_nir

ones = torch.ones(3)
params = LIFParameters(tau_syn_inv=200 * ones, tau_mem_inv=100 * ones, v_leak=0 * ones, v_th=ones, v_reset=0 * ones)
graph = to_nir(SequentialState(torch.nn.Linear(4, 3), LIFCell(params, dt=1e-3)), torch.rand(4), dt=1e-3)
node = next(n for n in graph.nodes.values() if type(n).__name__ == "CubaLIF")
tau_syn, tau_mem = torch.as_tensor(node.tau_syn), torch.as_tensor(node.tau_mem)
assert torch.allclose(tau_syn, torch.full((3,), 0.005)) and torch.allclose(tau_mem, torch.full((3,), 0.01)), (
    f"exported tau_syn {tau_syn.tolist()}, tau_mem {tau_mem.tolist()} for tau_syn_inv = 200, tau_mem_inv = 100")
