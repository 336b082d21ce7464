"""snntorch's Leaky and Synaptic as constructed by default, stepped under torch.utils.checkpoint, get wrong input
gradients and are left holding the wrong state.

``Leaky(beta)`` / ``Synaptic(alpha, beta)`` called without their state (``spk, mem = lif(x_t)``) advance their own
``self.mem`` (and ``self.syn``) on each call. checkpoint recomputes a step's forward during backward, by then from
the state the later steps left, so the recomputed step is not the one that ran: its gradient is wrong, and the
recomputation overwrites the state; the forward's outputs are right and nothing warns (torch's checkpoint asks for a
function without side effects, which a stateful layer is not).
Correct: checkpointing a step leaves the gradients and the state as they are without it (or the layer refuses).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py
"""
# expect: AssertionError: the checkpointed steps' input gradient or final membrane differs
import snntorch
import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
x = torch.rand(5, 2, 3) * 0.9  # (time, batch, neurons)
differ = []
for make in (lambda: snntorch.Leaky(beta=0.9), lambda: snntorch.Synaptic(alpha=0.8, beta=0.9)):
    layer, checkpointed = make(), make()
    x_eager, x_ckpt = x.clone().requires_grad_(), x.clone().requires_grad_()
    torch.stack([layer(x_t)[0] for x_t in x_eager]).sum().backward()
    torch.stack([checkpoint(checkpointed, x_t, use_reentrant=False)[0] for x_t in x_ckpt]).sum().backward()
    grad_error = float((x_ckpt.grad - x_eager.grad).abs().max())
    mem_error = float((checkpointed.mem - layer.mem).abs().max())
    if grad_error > 1e-6 or mem_error > 1e-6:
        differ.append(f"{type(layer).__name__}: gradient by {grad_error:.3g}, membrane by {mem_error:.3g}")
assert not differ, f"the checkpointed steps' input gradient or final membrane differs: {differ}"
