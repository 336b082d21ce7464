"""snntorch's NIR importer refuses a NIR IF whose r is not 1 (as spikingjelly writes it: r = 1 / dt).

NIR's IF is `dv/dt = r I`; a neuron adding its whole input each step is exported at dt as r = 1 / dt (spikingjelly's
IFNode: r = 1e4 at dt = 1e-4). import_from_nir asserts r == 1 and stops.
Correct: the importer scales the input by r * dt at its own dt (or states which r it takes and why).
https://github.com/jeshraghian/snntorch/blob/master/snntorch/import_nir.py
"""
# expect: AssertionError: r != 1 not supported
import nir
import numpy as np
from snntorch.import_nir import import_from_nir

graph = nir.NIRGraph.from_list(
    nir.Affine(weight=np.eye(3, dtype=np.float32), bias=np.zeros(3, dtype=np.float32)),
    nir.IF(r=np.full(3, 1e4, dtype=np.float32), v_threshold=np.ones(3, dtype=np.float32),
           v_reset=np.zeros(3, dtype=np.float32)))
import_from_nir(graph)
