"""torch.func.vmap over torch.ao.quantization.FakeQuantize raises: its observer updates the module's min/max buffers in
place with a value computed from the batched input.

FakeQuantize.forward runs its MovingAverageMinMaxObserver on the input and copies the new scale and zero point into
its buffers (in-place updates of unbatched tensors with batched values), which vmap refuses ("inplace arithmetic ...
is not possible"). The correct behaviour for a per-sample map: each sample fake-quantized with the scale and zero
point observed on it (or an error naming the observer), as a loop over the samples gives.
"""
import torch
from torch.ao.quantization import FakeQuantize

x = torch.tensor([[0.3, -1.2, 2.6], [4.0, 0.5, -0.25]])
per_sample = torch.stack([FakeQuantize()(row) for row in x])
mapped = torch.func.vmap(FakeQuantize())(x)  # raises RuntimeError
assert torch.equal(mapped, per_sample)
# expect: RuntimeError: vmap: inplace arithmetic(self, *extra_args) is not possible
