"""sinabs' NIR importer raises on a LIF whose parameters have more than one dimension (a convolutional layer's).

from_nir checks `if any(node.v_leak) != 0`: Python's any() over a (C, H, W) array iterates its first axis and asks
each (H, W) slice for a truth value, which numpy refuses ("The truth value of an array with more than one element
is ambiguous"). A LIF after a Conv2d, as snntorch exports it, has parameters of shape (C, H, W).
Correct: the check is `np.any(node.v_leak != 0)`, and the layer imports.
https://github.com/synsense/sinabs/blob/develop/sinabs/nir.py
"""
# expect: ValueError: The truth value of an array with more than one element is ambiguous
import nir
import numpy as np
from sinabs.nir import from_nir

shape = (2, 4, 4)
graph = nir.NIRGraph.from_list(nir.LIF(tau=np.full(shape, 0.01), r=np.ones(shape), v_leak=np.zeros(shape),
                                       v_threshold=np.ones(shape), v_reset=np.zeros(shape)))
from_nir(graph, batch_size=1)
