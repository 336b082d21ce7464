"""On CUDA, a spikingjelly ParametricLIFNode stepped under torch.utils.checkpoint gets wrong input gradients.

A node keeps v between calls until reset(). checkpoint recomputes a call's forward during backward, by then from the
v the later calls left, so the recomputed call is not the one that ran. On the CPU the recomputed tensors' metadata
differ and backward raises CheckpointError (plif_checkpoint_steps_raises.py); on CUDA backward runs and returns a
wrong input gradient, silently (torch's checkpoint asks for a function without side effects, which a node is not).
Correct: checkpointing a call leaves the gradients as they are without it (or the node refuses recomputation).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/neuron.py
"""
# requires: cuda
# expect: AssertionError: the checkpointed calls' input gradient differs
import torch
from spikingjelly.activation_based import neuron
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
x = torch.rand(5, 2, 3, device="cuda")  # (time, batch, neurons)


def node():
    return neuron.ParametricLIFNode(init_tau=2.0, decay_input=False, v_threshold=0.25, v_reset=None,
                                    step_mode="s").cuda()


eager, checkpointed = node(), node()
x_eager, x_ckpt = x.clone().requires_grad_(), x.clone().requires_grad_()
torch.stack([eager(x_t) for x_t in x_eager]).sum().backward()
torch.stack([checkpoint(checkpointed, x_t, use_reentrant=False) for x_t in x_ckpt]).sum().backward()
assert torch.allclose(x_ckpt.grad, x_eager.grad), \
    f"the checkpointed calls' input gradient differs by {(x_ckpt.grad - x_eager.grad).abs().max():.3g}"
