"""A spikingjelly ParametricLIFNode stepped under torch.utils.checkpoint: backward raises CheckpointError.

A node keeps v between calls until reset(). checkpoint recomputes a call's forward during backward, by then from
the v the later calls left, and the recomputed tensors do not match the saved ones (v is the Python float v_reset
at rest, a (batch, neurons) tensor once the node has run), so backward raises (torch's checkpoint asks for a
function without side effects, which a node is not).
Correct: checkpointing a call leaves the gradients as they are without it (or the node refuses recomputation).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/neuron.py
"""
# expect: CheckpointError: torch.utils.checkpoint: Recomputed values for the following tensors have different metadata
import torch
from spikingjelly.activation_based import neuron
from torch.utils.checkpoint import checkpoint

node = neuron.ParametricLIFNode(init_tau=2.0, decay_input=False, v_threshold=0.25, v_reset=None, step_mode="s")
x = torch.tensor([[[0.5]], [[0.0]], [[0.0]]], requires_grad=True)  # (time, batch, neurons)
node.reset()  # as functional.reset_net does before each sequence
torch.stack([checkpoint(node, x_t, use_reentrant=False) for x_t in x]).sum().backward()
