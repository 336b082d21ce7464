"""sinabs IAF/IAFSqueeze/LIF moved to float64, and SingleSpike on a float64 membrane, compute the input gradient in
float32.

MultiSpike/SingleSpike return `.float()` spikes (neuron_spikes_float32.py), so the gradient flowing back into a
float64 layer's spikes is rounded to float32 first: two cotangents that differ only past float32's precision give
the same float64 input gradient. The correct behaviour: a float64 layer's input gradient follows its float64
cotangent (as its spikes should be float64).
https://github.com/synsense/sinabs/blob/develop/sinabs/activation/spike_generation.py
"""
# expect: AssertionError: the float64 layer's input gradient is float32-rounded
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential, SingleSpike
from sinabs.layers import IAF

torch.manual_seed(0)
layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
            surrogate_grad_fn=SingleExponential(grad_width=0.5, grad_scale=1.0)).double()
x = torch.rand(2, 4, 3, dtype=torch.float64)  # (batch, time, neurons)
cotangent = torch.full((2, 4, 3), 1 / 3, dtype=torch.float64)  # 1/3 is not a float32 number
rounded = []
for name, call in (("IAF", lambda xi: (layer.reset_states(), layer(xi))[1]),
                   ("SingleSpike", lambda xi: SingleSpike.apply(xi + 0.5, 1.0, SingleExponential(0.5, 1.0)))):
    grads = []
    for cot in (cotangent, cotangent.float().double()):  # the second differs from the first by ~1e-8
        xi = x.clone().requires_grad_()
        (call(xi).double() * cot).sum().backward()
        grads.append(xi.grad)
    assert grads[0].abs().max() > 0, f"{name}: no gradient reached the input"
    if torch.equal(grads[0], grads[1]):
        rounded.append(name)
assert not rounded, f"the float64 layer's input gradient is float32-rounded: {rounded}"
