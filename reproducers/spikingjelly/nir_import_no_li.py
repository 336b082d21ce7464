"""spikingjelly's NIR importer cannot import a leaky integrator (nir.LI), NIR's usual readout layer.

import_from_nir has no mapping for nir.LI and raises on any graph that holds one, such as the readouts norse
(LIBoxCell) and sinabs (ExpLeak) export.
Correct: nir.LI imports as a non-spiking leaky integrator, or the converter documents that it takes none.
https://github.com/fangwei123456/spikingjelly/tree/master/spikingjelly/activation_based/nir_exchange
"""
# expect: ValueError: Unknown node type
import nir
import numpy as np
import torch
from spikingjelly.activation_based.nir_exchange import import_from_nir

graph = nir.NIRGraph.from_list(
    nir.Affine(weight=np.eye(3, dtype=np.float32), bias=np.zeros(3, dtype=np.float32)),
    nir.LI(tau=np.full(3, 0.01, dtype=np.float32), r=np.ones(3, dtype=np.float32),
           v_leak=np.zeros(3, dtype=np.float32)))
import_from_nir(graph, dt=1e-4, dtype=torch.float32)
