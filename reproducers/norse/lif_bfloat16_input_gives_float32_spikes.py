"""norse LIFCell and LIF return float32 spikes for a bfloat16 input.

``initial_state`` (used when ``state=None``) creates the synaptic current ``i`` (and, in ``LIF``, the membrane ``v``)
with ``dtype=torch.float32`` whatever the input's dtype, so type promotion turns every later step into float32.
Correct: the spikes have the input's dtype, as for float64 and other torch layers.
https://github.com/norse/norse/blob/main/norse/torch/module/lif.py
"""
import torch
from norse.torch import LIF, LIFCell, LIFParameters

torch.manual_seed(0)


def parameters(method):
    t = lambda v: torch.tensor(float(v))  # noqa: E731
    return LIFParameters(tau_syn_inv=t(100), tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0),
                         method=method, alpha=t(1.0))


x = (torch.rand(3, 2, 4) * 9).to(torch.bfloat16)  # (time, batch, neurons)

cell = LIFCell(parameters("super"), dt=0.001).to(torch.bfloat16)  # a no-op: norse registers no tensors
state, spikes = None, []
for step in x:
    z, state = cell(step, state)
    spikes.append(z)
cell_dtype = torch.stack(spikes).dtype

lif_dtype = LIF(parameters("triangle"), dt=0.001).to(torch.bfloat16)(x, None)[0].dtype

# expect: AssertionError: bfloat16 input gives spikes of dtype
assert cell_dtype == lif_dtype == torch.bfloat16, (
    f"bfloat16 input gives spikes of dtype LIFCell: {cell_dtype}, LIF: {lif_dtype}")
