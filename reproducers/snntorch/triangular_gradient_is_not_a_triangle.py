"""snntorch.surrogate.triangular's gradient is a sign-flipping constant, not the gradient of a triangular function.

The docstring calls it the gradient of a triangular function; a triangle (the surrogate of that name in the
literature, alpha * max(0, 1 - |x|)) is largest at the threshold and falls off with |x|. Triangular.backward returns
+threshold for x < 0 and -threshold for x >= 0 (`grad[input_ >= 0] = -grad[input_ >= 0]`): it does not depend on
|x| at all, and it is negative above the threshold.
https://github.com/jeshraghian/snntorch/blob/master/snntorch/surrogate.py
"""
# expect: AssertionError: the gradient does not fall off with |x|
import torch
from snntorch import surrogate

spike = surrogate.triangular()
x = torch.tensor([-0.9, -0.5, -0.1, 0.1, 0.5, 0.9], requires_grad=True)
spike(x).sum().backward()
print("x:       ", x.tolist())
print("gradient:", x.grad.tolist())
near, far = x.grad[[2, 3]].abs(), x.grad[[0, 5]].abs()
assert bool((near > far).all()), f"the gradient does not fall off with |x|: {x.grad.tolist()}"
