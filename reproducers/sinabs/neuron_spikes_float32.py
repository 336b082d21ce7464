"""sinabs IAF/IAFSqueeze/LIF return float32 spikes for a float64 or bfloat16 layer and input.

MultiSpike.forward and SingleSpike.forward (sinabs/activation/spike_generation.py) end with `.float()`, so the spikes
a layer emits are float32 whatever the dtype of its membrane, parameters and input. The correct behaviour: a layer
moved to float64 (or bfloat16) and fed a float64 (bfloat16) input returns spikes of that dtype, as torch layers do.
https://github.com/synsense/sinabs/blob/develop/sinabs/activation/spike_generation.py
"""
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF

torch.manual_seed(0)
wrong = []
for dtype in (torch.float64, torch.bfloat16):
    layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
                surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5)).to(dtype)
    x = torch.rand(2, 4, 3, dtype=dtype)  # (batch, time, neurons)
    spikes = layer(x)
    if spikes.dtype != dtype:
        wrong.append(f"{dtype} layer and input -> {spikes.dtype} spikes")
assert not wrong, "IAF output dtype is not the input's: " + "; ".join(wrong)
# expect: AssertionError: IAF output dtype is not the input's
