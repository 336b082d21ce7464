"""A spikingjelly node stepped under torch.utils.checkpoint gets wrong input gradients.

A node keeps v between calls (step_mode "s", or chunks of a sequence in "m") until reset(). checkpoint recomputes
a call's forward during backward, by then from the v the later calls left, so the recomputed call is not the one
that ran and its gradient is wrong; the outputs are right and nothing warns (torch's checkpoint asks for a function
without side effects, which a node is not).
Correct: checkpointing a call leaves the gradients as they are without it (or the node refuses recomputation).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/neuron.py
"""
# expect: AssertionError: the checkpointed calls' input gradient differs
import torch
from spikingjelly.activation_based import neuron
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons)
node, checkpointed = (neuron.IFNode(v_threshold=1.0, v_reset=0.0, step_mode="s") for _ in range(2))
x_eager, x_ckpt = x.clone().requires_grad_(), x.clone().requires_grad_()
torch.stack([node(x_t) for x_t in x_eager]).sum().backward()
torch.stack([checkpoint(checkpointed, x_t, use_reentrant=False) for x_t in x_ckpt]).sum().backward()
assert torch.allclose(x_ckpt.grad, x_eager.grad), \
    f"the checkpointed calls' input gradient differs by {(x_ckpt.grad - x_eager.grad).abs().max():.3g}"
