"""torch.func.grad through a spikingjelly neuron raises: its spike function _SurrogateSpike has no setup_context.

On the CPU the neuron kernels fire through spikingjelly._ops.surrogate._SurrogateSpike, an old-style
torch.autograd.Function (forward(ctx, ...), no setup_context staticmethod), which torch.func transforms refuse.
The correct behaviour: torch.func.grad returns the same input gradient as loss.backward() (the surrogate gradient).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/_ops/surrogate.py
"""
import torch
from spikingjelly.activation_based import neuron, surrogate

torch.manual_seed(0)
node = neuron.IFNode(v_threshold=0.25, v_reset=None, surrogate_function=surrogate.Sigmoid(alpha=4.0),
                     detach_reset=False, step_mode="m")
x = torch.randn(4, 2, 3)  # (T, B, N)


def loss(x):
    node.reset()
    return node(x).sum()


torch.func.grad(loss)(x)
# expect: it must override the setup_context staticmethod
