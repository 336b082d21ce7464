"""sinabs' NIR importer builds a NIR IF as an IAFSqueeze with multi-spike output and subtractive reset.

NIR's IF emits one spike where v > v_threshold and resets v to v_reset. from_nir builds IAFSqueeze with sinabs'
defaults (MultiSpike, MembraneSubtract) and ignores r and v_reset, so an input that takes v to 2.5 thresholds gives
two spikes instead of one, and every graph exported by another library spikes differently in sinabs.
Correct: the imported layer uses SingleSpike and a reset to v_reset (or refuses what it cannot express).
https://github.com/synsense/sinabs/blob/develop/sinabs/nir.py
"""
# expect: AssertionError: sinabs' imported IF emits
import nir
import numpy as np
import torch
from sinabs.nir import from_nir

graph = nir.NIRGraph.from_list(
    nir.Affine(weight=np.eye(3, dtype=np.float32), bias=np.zeros(3, dtype=np.float32)),
    nir.IF(r=np.ones(3, dtype=np.float32), v_threshold=np.ones(3, dtype=np.float32),
           v_reset=np.zeros(3, dtype=np.float32)))
module = from_nir(graph, batch_size=1)
out = module(torch.full((1, 3), 2.5))
spikes = out[0] if isinstance(out, tuple) else out
assert float(spikes.max()) <= 1, f"sinabs' imported IF emits {float(spikes.max()):g} spikes in one step (NIR's IF: 1)"
