"""torch.func.grad (and jvp) through torch.ao.quantization.FakeQuantize raises: its forward copies the observed scale
and zero point into the module's buffers (aten::copy_ into captured tensors).

The correct behaviour: torch.func.grad returns the straight-through gradient (1 where the code is inside
[quant_min, quant_max], else 0), as loss.backward() does on the same module.
"""
import torch
from torch.ao.quantization import FakeQuantize

x = torch.tensor([0.3, -1.2, 2.6, 4.0])
module = FakeQuantize()
grad = torch.func.grad(lambda t: module(t).sum())(x)  # raises RuntimeError
assert torch.equal(grad, torch.ones_like(x))
# expect: RuntimeError: During a grad (vjp, jvp, grad, etc) transform, the function provided attempted to call in-place
