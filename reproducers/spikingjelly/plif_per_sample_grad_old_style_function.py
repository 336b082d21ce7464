"""Per-sample gradients of a ParametricLIFNode's w with vmap(grad(functional_call)) raise: _SurrogateSpike has no
setup_context.

The standard torch.func recipe for per-sample gradients fails on spikingjelly's learnable LIF node because its spike
function spikingjelly._ops.surrogate._SurrogateSpike is an old-style torch.autograd.Function (forward(ctx, ...), no
setup_context), which torch.func refuses. The correct behaviour: one gradient of w per sample, equal to a loop of
single-sample backward passes. https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/_ops/surrogate.py
"""
import torch
from spikingjelly.activation_based import neuron, surrogate

torch.manual_seed(0)
node = neuron.ParametricLIFNode(init_tau=2.0, decay_input=True, v_threshold=0.25, v_reset=0.0,
                                surrogate_function=surrogate.Sigmoid(alpha=4.0), detach_reset=False, step_mode="m")
params = {n: p.detach() for n, p in node.named_parameters()}
x = torch.randn(4, 3, 5)  # (T, B, N); batch dim 1


def loss(p, xi):
    node.reset()
    return torch.func.functional_call(node, p, (xi.unsqueeze(1),)).sum()


torch.func.vmap(torch.func.grad(loss), in_dims=(None, 1))(params, x)
# expect: it must override the setup_context staticmethod
