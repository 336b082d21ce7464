"""snntorch's Leaky(init_hidden=True) stepped under torch.utils.checkpoint gets wrong input gradients.

Each call advances mem in place of the layer (init_hidden=True). checkpoint recomputes a step's forward during
backward, by then from the state the later steps left, so the recomputed step is not the one that ran and its
gradient is wrong; the forward's outputs are right and nothing warns (torch's checkpoint asks for a function
without side effects, which a stateful layer is not).
Correct: checkpointing a step leaves the gradients as they are without it (or the layer refuses recomputation).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the checkpointed steps' input gradient differs
import snntorch
import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons)
layer, checkpointed = (snntorch.Leaky(beta=0.9, threshold=1.0, init_hidden=True) for _ in range(2))
x_eager, x_ckpt = x.clone().requires_grad_(), x.clone().requires_grad_()
torch.stack([layer(x_t) for x_t in x_eager]).sum().backward()
torch.stack([checkpoint(checkpointed, x_t, use_reentrant=False) for x_t in x_ckpt]).sum().backward()
assert torch.allclose(x_ckpt.grad, x_eager.grad), \
    f"the checkpointed steps' input gradient differs by {(x_ckpt.grad - x_eager.grad).abs().max():.3g}"
