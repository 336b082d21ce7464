"""The state_dict of a sinabs IAF layer that has run once does not load into a fresh IAF layer.

StatefulLayer registers its state (v_mem) as a buffer of shape (0,) and replaces it with a (batch, neurons) tensor on
the first forward; state_dict() includes that buffer, so load_state_dict into a freshly built layer (same arguments)
fails with a size mismatch (sinabs' own __deepcopy__ notes "using state dict will fail if buffers have non-default
shapes"). The correct behaviour: a fresh layer built with the same arguments loads the state_dict of a used one
(the state resized on load, or kept out of the state_dict).
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/stateful_layer.py
"""
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF


def build():
    return IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
               surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5))


torch.manual_seed(0)
trained = build()
trained(torch.rand(2, 4, 3))  # (batch, time, neurons)
fresh = build()
fresh.load_state_dict(trained.state_dict())
# expect: size mismatch for v_mem
