"""torch.func.jvp through a spikingjelly neuron on CUDA returns a zero tangent for the spikes: forward-mode AD
disagrees with reverse mode (which gives the surrogate gradient), silently.

On CUDA the nodes run spikingjelly's CUDA kernels rather than the old-style _SurrogateSpike Function that makes jvp
raise on the CPU; there jvp runs but its tangent ignores the surrogate derivative. Seen on CUDA with torch 2.11.
The correct behaviour: <v, J u> from torch.func.jvp equals <J^T v, u> from backward (or jvp raises).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/neuron
"""
# requires: cuda
import torch
from spikingjelly.activation_based import neuron, surrogate

torch.manual_seed(0)
node = neuron.IFNode(v_threshold=0.25, v_reset=0.0, surrogate_function=surrogate.Sigmoid(alpha=4.0),
                     detach_reset=False, step_mode="m").cuda()
x = torch.rand(4, 2, 3, device="cuda")  # (T, B, N)
u = torch.randn_like(x)  # input tangent
v = torch.randn_like(x)  # output cotangent

node.reset()
xr = x.clone().requires_grad_(True)
(grad_x,) = torch.autograd.grad((node(xr) * v).sum(), xr)
reverse = (grad_x * u).sum().item()

node.reset()
_, ju = torch.func.jvp(node, (x,), (u,))
forward = (v * ju).sum().item() + 0.0  # + 0.0: no -0.0
assert abs(forward - reverse) <= 1e-4 * max(1.0, abs(reverse)), (
    f"forward-mode <v, J u> = {forward} but reverse-mode <J^T v, u> = {reverse}")
# expect: AssertionError: forward-mode <v, J u> = 0.0 but reverse-mode
