"""snntorch's sigmoid surrogate, in float16, returns 0 or NaN for a gradient float16 holds (a membrane 0.3 below the
threshold).

Sigmoid.backward computes slope * exp(-slope x) / (exp(-slope x) + 1)^2: the square overflows float16's largest
value (65504) as soon as exp(-slope x) > 255, i.e. slope x < -5.55, and the quotient is 0 (x / inf), or NaN
(inf / inf) once exp itself overflows (slope x < -11.1). The derivative it stands for,
slope * sigmoid(slope x) * sigmoid(-slope x), is 0.0138 at x = -0.3 with the default slope 25: a normal float16
number (the same module in float32 gives it). The float32 and float64 form of this overflow:
sigmoid_surrogate_nan_gradient.py. Correct: about 0.0138 there.
https://github.com/jeshraghian/snntorch/blob/master/snntorch/surrogate.py (class Sigmoid, backward)
"""
# expect: AssertionError: float16 gradient lost
import snntorch.surrogate
import torch

spike = snntorch.surrogate.sigmoid(slope=25)
x = torch.tensor([-1.0, -0.3, 0.0], dtype=torch.float16, requires_grad=True)
(grad,) = torch.autograd.grad(spike(x).sum(), x)
exact = 25 * torch.sigmoid(25 * x.detach().double()) * torch.sigmoid(-25 * x.detach().double())
print("x:", x.tolist(), "float16 gradient:", grad.tolist(), "derivative:", exact.tolist())
close = (grad.double() - exact).abs() <= 1e-2 * exact.abs() + 1e-4
assert bool(close[1:].all()), f"float16 gradient lost: {grad.tolist()} where the derivative is {exact.tolist()}"
