"""snntorch's NIR importer turns a NIR IF into a leaky neuron (beta 0.9, init_hidden=False) that cannot run in the graph.

import_from_nir maps nir.IF to snn.Leaky(beta=0.9, threshold=v_threshold, init_hidden=False): a leaky neuron where NIR
declares a non-leaky integrator, and one that returns (spk, mem), which the next node of the imported graph cannot
take, so running any imported IF network raises.
Correct: a NIR IF imports as a non-leaky neuron (beta = 1) that runs in the graph.
https://github.com/jeshraghian/snntorch/blob/master/snntorch/import_nir.py
"""
# expect: TypeError: linear(): argument 'input' (position 1) must be Tensor, not tuple
import nir
import numpy as np
import torch
from snntorch.import_nir import import_from_nir

graph = nir.NIRGraph.from_list(
    nir.Affine(weight=np.eye(3, dtype=np.float32), bias=np.zeros(3, dtype=np.float32)),
    nir.IF(r=np.ones(3, dtype=np.float32), v_threshold=np.ones(3, dtype=np.float32),
           v_reset=np.zeros(3, dtype=np.float32)),
    nir.Affine(weight=np.eye(3, dtype=np.float32), bias=np.zeros(3, dtype=np.float32)))
module = import_from_nir(graph)
module(torch.full((1, 3), 0.5))
