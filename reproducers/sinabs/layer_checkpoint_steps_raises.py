"""A sinabs IAF layer stepped under torch.utils.checkpoint: backward raises CheckpointError.

A sinabs layer keeps v_mem between calls until reset_states(). checkpoint recomputes a call's forward during
backward, by then from the state the later calls left, and the recomputed tensors do not match the saved ones
(the state is a 0-dim tensor at rest, (batch, neurons) once the layer has run), so backward raises (torch's checkpoint asks for a function without side
effects, which a stateful layer is not).
Correct: checkpointing a call leaves the gradients as they are without it (or the layer refuses recomputation).
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/stateful_layer.py
"""
# expect: CheckpointError: torch.utils.checkpoint: Recomputed values for the following tensors have different metadata
import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
            surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5))
x = torch.tensor([[[0.5], [0.0], [0.0]]], requires_grad=True)  # (batch, time, neurons)
layer.reset_states()  # before each sequence
torch.cat([checkpoint(layer, x[:, t:t + 1], use_reentrant=False) for t in range(x.shape[1])], dim=1).sum().backward()
