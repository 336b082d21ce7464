"""After torch.utils.checkpoint's backward a sinabs IAF layer's v_mem is not the state its forward left.

sinabs layers keep their membrane state in a buffer that forward overwrites, so running the forward again changes
the layer (torch's checkpoint asks for a function that can be recomputed without side effects). A network that
starts each sequence from rest calls reset_states() in its forward; checkpoint's recomputation then resets the
layer again and, as non-reentrant checkpoint stops recomputing once the saved tensors are rebuilt, never reaches
the write of the final state: v_mem is left at zero. (With the reset outside the checkpointed function the
recomputation starts from the advanced state instead, and backward raises CheckpointError.) Correct: the state after
backward is the state after the forward, as in eager mode.
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/stateful_layer.py
"""
# expect: AssertionError: after checkpoint's backward, v_mem is not the state the forward left
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
            surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5))
x = torch.rand(2, 4, 3) * 2  # (batch, time, neurons)


def from_rest(inputs):
    layer.reset_states()
    return layer(inputs)


from_rest(x.clone().requires_grad_()).sum().backward()
eager_state = layer.v_mem.detach().clone()
checkpoint(from_rest, x.clone().requires_grad_(), use_reentrant=False).sum().backward()
assert torch.equal(layer.v_mem.detach(), eager_state), \
    f"after checkpoint's backward, v_mem is not the state the forward left: {layer.v_mem.flatten()[:3].tolist()} " \
    f"instead of {eager_state.flatten()[:3].tolist()}"
