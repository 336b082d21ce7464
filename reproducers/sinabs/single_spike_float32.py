"""sinabs SingleSpike returns float32 spikes for a float64 or bfloat16 membrane potential.

SingleSpike.forward (sinabs/activation/spike_generation.py) ends with `.float()`, so the spike tensor is float32
whatever the dtype of v_mem. The correct behaviour: SingleSpike.apply(v_mem, threshold, surrogate) returns spikes of
v_mem's dtype (float64 in, float64 out; bfloat16 in, bfloat16 out).
https://github.com/synsense/sinabs/blob/develop/sinabs/activation/spike_generation.py
"""
import torch
from sinabs.activation import SingleExponential, SingleSpike

torch.manual_seed(0)
surrogate = SingleExponential(grad_width=0.5, grad_scale=1.0)
wrong = []
for dtype in (torch.float64, torch.bfloat16):
    v_mem = (torch.randn(3, 4) + 1.0).to(dtype)
    spikes = SingleSpike.apply(v_mem, 1.0, surrogate)
    if spikes.dtype != dtype:
        wrong.append(f"{dtype} v_mem -> {spikes.dtype} spikes")
assert not wrong, "SingleSpike output dtype is not the input's: " + "; ".join(wrong)
# expect: AssertionError: SingleSpike output dtype is not the input's
