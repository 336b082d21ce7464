"""snntorch's NIR importer cannot import its own RSynaptic graph once it went through a NIR file.

export_to_nir writes RSynaptic as the nodes "1.lif" (a CubaLIF) and "1.w_rec" with a recurrent edge between them; import_from_nir
takes the graph in memory, but the same graph written with nir.write and read back with nir.read (same nodes, edges
and values; only the nodes' order differs) fails in nirtorch's interpreter ("'GraphModule' object has no attribute
'items'"): a recurrent snntorch network cannot be saved and loaded back. (import_from_nir also rewrites the graph it
is given in place, "replace rnn subgraph with nirgraph": a graph written after an import is another graph.)
Correct: the graph read from the file imports as the one in memory does.
https://github.com/jeshraghian/snntorch/blob/master/snntorch/import_nir.py
"""
# expect: AttributeError: 'GraphModule' object has no attribute 'items'
import tempfile
from pathlib import Path

import nir
import snntorch as snn
import torch
from snntorch.export_nir import export_to_nir
from snntorch.import_nir import import_from_nir

n = 3
layer = snn.RSynaptic(alpha=torch.full((n,), 0.5), beta=torch.full((n,), 0.8), threshold=torch.ones(n),
                      linear_features=n, init_hidden=True, reset_mechanism="zero")
net = torch.nn.Sequential(torch.nn.Linear(4, n), layer)
graph = export_to_nir(net, torch.zeros(1, 4), ignore_dims=[0])
with tempfile.TemporaryDirectory() as folder:
    nir.write(Path(folder) / "rsynaptic.nir", graph)
    read = nir.read(Path(folder) / "rsynaptic.nir")
import_from_nir(export_to_nir(net, torch.zeros(1, 4), ignore_dims=[0]))  # the graph in memory imports
import_from_nir(read)
