"""snntorch's Leaky as constructed by default, stepped under torch.utils.checkpoint, gets wrong input gradients and
is left holding the wrong membrane.

Leaky(beta) called without ``mem`` (``spk, mem = lif(x_t)``) advances its own ``self.mem`` on each call. checkpoint
recomputes a step's forward during backward, by then from the state the later steps left, so the recomputed step is
not the one that ran: its gradient is wrong, and the recomputation overwrites mem; the forward's outputs are right
and nothing warns (torch's checkpoint asks for a function without side effects, which a stateful layer is not).
Correct: checkpointing a step leaves the gradients and the state as they are without it (or the layer refuses).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the checkpointed steps' input gradient or final membrane differs
import snntorch
import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons)
layer, checkpointed = snntorch.Leaky(beta=0.9), snntorch.Leaky(beta=0.9)
x_eager, x_ckpt = x.clone().requires_grad_(), x.clone().requires_grad_()
torch.stack([layer(x_t)[0] for x_t in x_eager]).sum().backward()
torch.stack([checkpoint(checkpointed, x_t, use_reentrant=False)[0] for x_t in x_ckpt]).sum().backward()
grad_error = float((x_ckpt.grad - x_eager.grad).abs().max())
mem_error = float((checkpointed.mem - layer.mem).abs().max())
assert grad_error < 1e-6 and mem_error < 1e-6, \
    (f"the checkpointed steps' input gradient or final membrane differs: gradient by {grad_error:.3g}, "
     f"membrane by {mem_error:.3g}")
