"""snntorch's spikes are always float32: a float64 or bfloat16 neuron (or spike function) returns float32 spikes.

Every spike function in snntorch.surrogate computes `out = (input_ > 0).float()`, so the output is float32 whatever
the dtype of the input and of the module. The correct behaviour: the spikes have the input's dtype, as every torch
layer does after `.to(dtype)`. https://github.com/jeshraghian/snntorch/issues/422
"""
import torch
import snntorch
from snntorch import surrogate

torch.manual_seed(0)
for dtype in (torch.float64, torch.bfloat16):
    x = torch.randn(4, 2, 3).to(dtype) * 2  # (T, B, N)
    # the bare spike function (snntorch's default surrogate)
    spk = surrogate.atan(alpha=2.0)(x[0])
    # a neuron stepped over time, as in snntorch's tutorials
    lif = snntorch.Leaky(beta=0.9, threshold=1.0).to(dtype)
    mem = torch.zeros_like(x[0])
    for step in range(x.shape[0]):
        spk_t, mem = lif(x[step], mem)
    print(f"{dtype}: surrogate -> {spk.dtype}, Leaky spikes -> {spk_t.dtype}, membrane -> {mem.dtype}")
    assert spk.dtype == dtype and spk_t.dtype == dtype, \
        f"spikes are {spk_t.dtype} for {dtype} input and module"
print("spikes follow the input dtype")
# expect: AssertionError: spikes are torch.float32 for torch.float64 input and module
