"""snntorch's NIR exporter drops a Leaky's reset mechanism: a subtractive reset comes back as a reset to zero.

snntorch's Leaky defaults to reset_mechanism="subtract" (v -= threshold on a spike). export_to_nir writes nir.LIF
with v_reset = 0, which NIR defines as a reset to v_reset, and import_from_nir builds reset_mechanism="zero": the
round trip (and every other importer) resets where the layer subtracts, so the spikes after the first differ.
Correct: the exporter refuses a reset NIR's LIF cannot express (or the round trip keeps it).
https://github.com/jeshraghian/snntorch/blob/master/snntorch/export_nir.py
"""
# expect: AssertionError: the reset mechanism
import snntorch as snn
import torch
from snntorch.export_nir import export_to_nir
from snntorch.import_nir import import_from_nir

leaky = snn.Leaky(beta=torch.full((3,), 0.8), threshold=torch.ones(3), init_hidden=True, reset_mechanism="subtract")
graph = export_to_nir(torch.nn.Sequential(torch.nn.Linear(4, 3), leaky), torch.rand(1, 4), ignore_dims=[0])
imported = import_from_nir(graph)
mechanisms = [m.reset_mechanism for m in imported.modules() if isinstance(m, snn.Leaky)]
assert mechanisms == ["subtract"], f"the reset mechanism 'subtract' came back from NIR as {mechanisms}"
