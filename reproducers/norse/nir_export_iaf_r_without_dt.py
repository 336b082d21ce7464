"""norse's NIR exporter writes an IAFCell as a NIR IF with r = 1, though the cell adds its whole input every step.

norse's IAFCell integrates `v = v + I` per step (dt unused), NIR's IF declares `dv/dt = r I`: at the exporter's
dt = 1e-3 a graph with r = 1 adds only dt * I per step, 1000 times less than the cell (spikingjelly's importer
refuses it: r must be 1 / dt). norse's own importer ignores r, so a round trip through norse hides it.
Correct: the exported r is 1 / dt (or the exporter states the dt its r assumes).
https://github.com/norse/norse/blob/main/norse/torch/utils/export_nir.py
"""
# expect: AssertionError: exported r
import torch
from norse.torch import IAFCell, SequentialState
from norse.torch.functional.iaf import IAFParameters
from norse.torch.utils.export_nir import to_nir

dt = 1e-3
ones = torch.ones(3)
graph = to_nir(SequentialState(torch.nn.Linear(4, 3), IAFCell(IAFParameters(v_th=ones, v_reset=0 * ones))),
               torch.rand(4), dt=dt)
node = next(node for node in graph.nodes.values() if type(node).__name__ == "IF")
r = torch.as_tensor(node.r)
assert torch.allclose(r, torch.full((3,), 1 / dt)), f"exported r {r.tolist()} for a cell that adds its input each step"
