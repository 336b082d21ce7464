"""norse's NIR importer has no mapping for nir.LI: the leaky integrator is silently left out of the imported network.

A graph Affine -> LI imports without an error or a warning, and the imported network returns the Affine's output
(the input current) where the graph declares the integrator's membrane: with tau = 10 ms at dt = 1 ms, one step of
current 1 from rest gives v = 0.1, the imported network 1.
Correct: nir.LI imports as norse's leaky integrator (LIBoxCell with tau_mem_inv = 1 / tau), or the import raises.
https://github.com/norse/norse/blob/main/norse/torch/utils/import_nir.py
"""
# expect: AssertionError: the imported network returns
import nir
import numpy as np
import torch
from norse.torch.utils.import_nir import from_nir

graph = nir.NIRGraph.from_list(
    nir.Affine(weight=np.eye(3, dtype=np.float32), bias=np.zeros(3, dtype=np.float32)),
    nir.LI(tau=np.full(3, 0.01, dtype=np.float32), r=np.ones(3, dtype=np.float32),
           v_leak=np.zeros(3, dtype=np.float32)))
module = from_nir(graph, dt=1e-3)
out = module(torch.ones(1, 3))
out = out[0] if isinstance(out, tuple) else out
expected = 1e-3 / 0.01  # NIR's LI after one Euler step of dt from rest
assert torch.allclose(out, torch.full_like(out, expected)), (
    f"the imported network returns {out.flatten().tolist()} after one step of current 1, the LI's membrane is "
    f"{expected:g}: {module}")
