"""Opacus GradSampleModule on a ParametricLIFNode raises: per-sample gradients of w go through torch.func, which
refuses spikingjelly's old-style spike Function _SurrogateSpike (no setup_context).

Opacus has no grad sampler for ParametricLIFNode, so it computes the per-sample gradient of its parameter w with
torch.func (vmap of grad); the node fires through spikingjelly._ops.surrogate._SurrogateSpike, an old-style
torch.autograd.Function (forward(ctx, ...), no setup_context), and torch.func raises. The same happens with
force_functorch=True. The correct behaviour: w.grad_sample holds one gradient per sample.
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/_ops/surrogate.py
"""
import torch
from opacus import GradSampleModule
from spikingjelly.activation_based import neuron, surrogate

torch.manual_seed(0)
node = neuron.ParametricLIFNode(init_tau=2.0, decay_input=True, v_threshold=0.25, v_reset=0.0,
                                surrogate_function=surrogate.Sigmoid(alpha=4.0), detach_reset=False, step_mode="m")
x = torch.randn(4, 3, 5)  # (T, B, N); batch dim 1
model = GradSampleModule(node, batch_first=False, loss_reduction="sum")
model(x).sum().backward()
assert node.w.grad_sample is not None, "Opacus computed no per-sample gradient for w"
# expect: it must override the setup_context staticmethod
