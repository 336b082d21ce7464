"""signlib.SignSTE fails under torch.func.vmap: its autograd.Function has no setup_context.

Correct: vmap over a batch gives each sample's sign, as the unbatched call does.
"""
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
import torch

import signlib

x = torch.tensor([[-1.5, 0.0, 2.0], [0.5, -0.25, 0.0]])
print(torch.func.vmap(signlib.SignSTE())(x))
