"""snntorch's NIR importer refuses any CubaLIF whose r is not tau_mem / 1e-4 (its own exporter's convention).

import_from_nir asserts `np.allclose(node.r, node.tau_mem / dt)` with its fixed dt = 1e-4, so a current-based LIF
written by another library (norse writes r = 1) cannot be imported: "r not supported in CubaLIF".
Correct: the importer maps r (and its own dt) into the layer, or states which graphs it takes.
https://github.com/jeshraghian/snntorch/blob/master/snntorch/import_nir.py
"""
# expect: AssertionError: r not supported in CubaLIF
import nir
import numpy as np
from snntorch.import_nir import import_from_nir

n = 3
graph = nir.NIRGraph.from_list(
    nir.Affine(weight=np.eye(n, dtype=np.float32), bias=np.zeros(n, dtype=np.float32)),
    nir.CubaLIF(tau_syn=np.full(n, 5e-3), tau_mem=np.full(n, 1e-2), r=np.ones(n), v_leak=np.zeros(n),
                v_threshold=np.ones(n), v_reset=np.zeros(n)))
import_from_nir(graph)
