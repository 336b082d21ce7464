"""torch.func.jvp through a spikingjelly neuron on CUDA leaves the membrane it computed inside the transform in the
node: node._memories['v'] holds a functorch-wrapped tensor after jvp returns, which the next plain call reads.

On CUDA the nodes run spikingjelly's CUDA kernels (on the CPU jvp raises first: an old-style autograd.Function), and
the node stores v as state from inside torch.func. Seen on CUDA with torch 2.11.
The correct behaviour: a torch.func transform leaves no tensor of its own level in the module (or the call raises).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/base.py
"""
# requires: cuda
import torch
from spikingjelly.activation_based import neuron, surrogate

node = neuron.IFNode(v_threshold=0.25, v_reset=0.0, surrogate_function=surrogate.Sigmoid(alpha=4.0),
                     detach_reset=False, step_mode="m").cuda()
x = torch.rand(4, 2, 3, device="cuda")  # (T, B, N)
node.reset()
torch.func.jvp(node, (x,), (torch.ones_like(x),))
v = node._memories["v"]
wrapped = isinstance(v, torch.Tensor) and torch._C._functorch.is_functorch_wrapped_tensor(v)
assert not wrapped, "node._memories['v'] is a functorch-wrapped tensor after torch.func.jvp returned"
# expect: AssertionError: node._memories['v'] is a functorch-wrapped tensor
