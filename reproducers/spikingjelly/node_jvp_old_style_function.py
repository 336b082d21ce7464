"""torch.func.jvp through a spikingjelly neuron raises on the CPU: its spike function _SurrogateSpike has no
setup_context.

On the CPU the neuron kernels fire through spikingjelly._ops.surrogate._SurrogateSpike, an old-style
torch.autograd.Function (forward(ctx, ...), no setup_context staticmethod), which torch.func transforms refuse.
The correct behaviour: torch.func.jvp returns the output and its tangent (forward-mode AD of the surrogate).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/_ops/surrogate.py
"""
import torch
from spikingjelly.activation_based import neuron, surrogate

torch.manual_seed(0)
node = neuron.IFNode(v_threshold=0.25, v_reset=None, surrogate_function=surrogate.Sigmoid(alpha=4.0),
                     detach_reset=False, step_mode="m")
x = torch.randn(4, 2, 3)  # (T, B, N)
node.reset()
torch.func.jvp(node, (x,), (torch.randn_like(x),))
# expect: it must override the setup_context staticmethod
