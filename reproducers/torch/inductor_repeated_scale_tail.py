"""torch.compile (inductor, CPU) gets the tail wrong when a tensor is multiplied by per-block values repeated over
their blocks (repeat_interleave, or expand + reshape) and cut to a length the block size does not divide: the
elements past the last full block come out with other values.

Blockwise quantization (bitsandbytes' absmax per block of 64) dequantizes exactly this way. The correct behaviour:
the compiled function returns what eager returns. https://github.com/pytorch/pytorch/tree/v2.13.0/torch/_inductor
"""
import torch

torch.manual_seed(0)
values, per_block = torch.randn(210), torch.tensor([1.0, 2.0, 3.0, 4.0])


def scaled(v, d):
    return v * d.repeat_interleave(64)[:210]


eager, compiled = scaled(values, per_block), torch.compile(scaled)(values, per_block)
wrong = (compiled != eager).nonzero().flatten().tolist()
assert not wrong, f"compiled differs from eager at elements {wrong[:3]}...{wrong[-1:]} (the last full block: 128-191)"
# expect: AssertionError: compiled differs from eager at elements
