"""A snntorch neuron in float64 computes in float32 where its float32 spikes enter: the reset and the gradient.

Every spike function returns `(input_ > 0).float()` (spike_dtype_float32.py, issue 422). In a float64 neuron the reset
term `spk * threshold` is then float32 (a float32 tensor times a 0-dim float64 threshold stays float32), so the
membrane after a reset is float32-rounded; and the gradient flowing back into the spikes is rounded to float32 before
the surrogate's backward, so two cotangents that differ only past float32's precision give the same input gradient.
The correct behaviour: a float64 neuron computes in float64. https://github.com/jeshraghian/snntorch/issues/422
"""
# expect: AssertionError: the float64 neuron computes in float32
import torch
import snntorch
from snntorch import surrogate

torch.manual_seed(0)
problems = []
third = torch.tensor(1 / 3, dtype=torch.float64)  # not a float32 number
lif = snntorch.Leaky(beta=0.5, threshold=third, reset_mechanism="subtract").double()
x = torch.full((1,), 0.5, dtype=torch.float64)
spk, mem = lif(x, lif.init_leaky())  # 0.5 > 1/3: a spike, subtracted at the next step
_, mem = lif(x, mem)
expected = 0.5 * 0.5 + 0.5 - third
if mem.item() != expected.item():
    problems.append(f"membrane after a reset {mem.item()!r}, float64 gives {expected.item()!r}")

lif = snntorch.Leaky(beta=0.9, threshold=1.0, reset_mechanism="subtract").double()
x = torch.rand(5, 2, 3, dtype=torch.float64) * 1.2  # (time, batch, neurons)
cotangent = torch.full((5, 2, 3), 1 / 3, dtype=torch.float64)
grads = []
for cot in (cotangent, cotangent.float().double()):  # the second differs from the first by ~1e-8
    xi = x.clone().requires_grad_()
    mem, spikes = lif.init_leaky(), []
    for x_t in xi:
        spk, mem = lif(x_t, mem)
        spikes.append(spk)
    (torch.stack(spikes).double() * cot).sum().backward()
    grads.append(xi.grad)
assert grads[0].abs().max() > 0, "no gradient reached the input"
if torch.equal(grads[0], grads[1]):
    problems.append("the input gradient is the same for cotangents that differ past float32's precision")
for name in ("atan", "fast_sigmoid", "heaviside", "sigmoid", "straight_through_estimator", "spike_rate_escape"):
    spike_fn = getattr(surrogate, name)()
    x = torch.rand(8, dtype=torch.float64) - 0.5
    grads = []
    for cot in (cotangent.flatten()[:8], cotangent.flatten()[:8].float().double()):
        xi = x.clone().requires_grad_()
        (spike_fn(xi).double() * cot).sum().backward()
        grads.append(xi.grad)
    if torch.equal(grads[0], grads[1]):
        problems.append(f"surrogate.{name}: the same input gradient for cotangents that differ past float32")
assert not problems, f"the float64 neuron computes in float32: {problems}"
