"""torch.func (vmap, grad, jvp, and vmap(grad) per-sample gradients) cannot run a snntorch neuron or spike function.

snntorch's spike functions (ATan, FastSigmoid, Sigmoid, Heaviside, Triangular, ... in snntorch.surrogate) are
torch.autograd.Function subclasses written in the legacy style, `forward(ctx, input_, ...)`, with no setup_context
staticmethod; torch.func refuses such Functions, so every neuron (whose fire() calls one) fails under vmap, grad,
jvp and per-sample gradients. The correct behaviour: torch.func.vmap over the batch returns what a loop over the
samples returns (and grad/jvp agree with autograd), which needs the Functions to define setup_context (and
vmap/jvp, or generate_vmap_rule = True). https://pytorch.org/docs/stable/notes/extending.func.html
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/surrogate.py#L187
"""
import torch
import snntorch

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.9, threshold=1.0, learn_beta=True)
x = torch.randn(4, 2, 3) * 2  # (T, B, N)


def run(x):  # the neuron stepped over time from a zero membrane; x is (T, B, N) or one sample's (T, N)
    mem = torch.zeros_like(x[0])
    spikes = []
    for step in range(x.shape[0]):
        spk, mem = lif(x[step], mem)
        spikes.append(spk)
    return torch.stack(spikes)


loop = torch.stack([run(x[:, b]) for b in range(x.shape[1])], dim=1)
# vmap over the batch (in_dims=1); torch.func.grad(...) and torch.func.jvp(run, (x,), (u,)) raise the same error
batched = torch.func.vmap(run, in_dims=1, out_dims=1)(x)
assert torch.equal(batched, loop), "vmap differs from the loop over samples"
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
