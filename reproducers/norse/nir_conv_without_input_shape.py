"""norse's NIR exporter writes a Conv2d without its input shape, and the graph cannot be saved with nir.write.

to_nir writes nir.Conv2d(input_shape=None, ...) for a torch.nn.Conv2d; nir.write (nir 1.0.8) stores every field in
HDF5 and fails on the None (h5py: "One of data, shape or dtype must be specified"), so no convolutional network
exported by norse can be written to a NIR file.
Correct: the exporter writes the convolution's input shape (it has the sample), and the file round-trips.
https://github.com/norse/norse/blob/main/norse/torch/utils/export_nir.py
"""
# expect: TypeError: One of data, shape or dtype must be specified
import tempfile
from pathlib import Path

import nir
import torch
from norse.torch import IAFCell, SequentialState
from norse.torch.functional.iaf import IAFParameters
from norse.torch.utils.export_nir import to_nir

ones = torch.ones(2, 4, 4)
net = SequentialState(torch.nn.Conv2d(1, 2, 3, padding=1), IAFCell(IAFParameters(v_th=ones, v_reset=0 * ones)))
graph = to_nir(net, torch.rand(1, 4, 4), dt=1e-3)
with tempfile.TemporaryDirectory() as folder:
    nir.write(Path(folder) / "conv.nir", graph)
