"""sinabs' NIR exporter writes a Conv2d without its input shape, and the graph cannot be saved with nir.write.

sinabs.nir.to_nir writes nir.Conv2d(input_shape=None, ...) for a torch.nn.Conv2d; nir.write (nir 1.0.8) stores every
field in HDF5 and fails on the None (h5py: "One of data, shape or dtype must be specified"), so no convolutional
network exported by sinabs can be written to a NIR file.
Correct: the exporter writes the convolution's input shape (it has the sample), and the file round-trips.
https://github.com/synsense/sinabs/blob/develop/sinabs/nir.py
"""
# expect: TypeError: One of data, shape or dtype must be specified
import tempfile
from pathlib import Path

import nir
import torch
from sinabs.layers import IAFSqueeze
from sinabs.nir import to_nir

net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1), IAFSqueeze(spike_threshold=torch.ones(2, 4, 4),
                                                                          batch_size=1))
graph = to_nir(net, torch.rand(1, 1, 4, 4))
with tempfile.TemporaryDirectory() as folder:
    nir.write(Path(folder) / "conv.nir", graph)
