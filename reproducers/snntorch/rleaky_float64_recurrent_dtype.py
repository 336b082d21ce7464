"""snntorch.RLeaky in float64 (or bfloat16) raises from its second time step: its float32 spike meets the Linear.

Every spike function returns `(input_ > 0).float()`, so the spike of step t is float32 whatever the module's dtype;
RLeaky feeds it back into its recurrent nn.Linear, held in the module's dtype, and the matmul raises at step 2.
The correct behaviour: an RLeaky moved to float64 (or bfloat16) runs on inputs of that dtype, as every torch layer
does after `.to(dtype)`. https://github.com/jeshraghian/snntorch/issues/421
"""
import torch
import snntorch

torch.manual_seed(0)
for dtype in (torch.float64, torch.bfloat16):
    rlif = snntorch.RLeaky(beta=0.5, threshold=0.5, all_to_all=True, linear_features=3).to(dtype)
    x = (torch.randn(4, 2, 3) * 2).to(dtype)  # (T, B, N)
    spk, mem = torch.zeros_like(x[0]), torch.zeros_like(x[0])
    for step in range(x.shape[0]):
        spk, mem = rlif(x[step], spk, mem)  # raises at step 1: mat1 (float32 spikes) and mat2 (dtype)
# expect: RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Double
