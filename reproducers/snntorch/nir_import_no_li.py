"""snntorch's NIR importer cannot import a leaky integrator (nir.LI), NIR's usual readout layer.

import_from_nir has no mapping for nir.LI and raises on any graph that holds one, such as the readouts norse
(LIBoxCell) and sinabs (ExpLeak) export.
Correct: nir.LI imports as a non-spiking leaky neuron (e.g. snn.Leaky with reset_mechanism="none", its membrane out).
https://github.com/jeshraghian/snntorch/blob/master/snntorch/import_nir.py
"""
# expect: ValueError: Unknown node type
import nir
import numpy as np
from snntorch.import_nir import import_from_nir

graph = nir.NIRGraph.from_list(
    nir.Affine(weight=np.eye(3, dtype=np.float32), bias=np.zeros(3, dtype=np.float32)),
    nir.LI(tau=np.full(3, 0.01, dtype=np.float32), r=np.ones(3, dtype=np.float32),
           v_leak=np.zeros(3, dtype=np.float32)))
import_from_nir(graph)
