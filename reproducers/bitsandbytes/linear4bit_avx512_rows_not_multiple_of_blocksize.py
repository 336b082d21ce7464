"""Linear4bit computes with the wrong weight on AVX-512 CPUs when in_features is a multiple of 16 but not of the
blocksize (64): the dequantization kernel indexes the absmax per row (in_features // blocksize per row: 0 for 48).

bitsandbytes quantizes the flattened weight in blocks of 64 consecutive elements, which straddle rows when
in_features = 48. csrc/cpu_ops.cpp's AVX-512 branch of dequantizeBlockwise4bitCpu (taken where in_features % 16 == 0)
reads absmax[row * (in_features // blocksize) + k // blocksize] instead of the absmax of the element's flat block;
its NEON branch guards the same indexing with `in_features % blocksize == 0`, the scalar branch indexes flat blocks.
The correct behaviour: the dequantized weight is code[q] * absmax of the flat block, on every CPU.
https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/csrc/cpu_ops.cpp#L356-L395
"""
import torch
import bitsandbytes as bnb
import bitsandbytes.functional as F

torch.manual_seed(0)
assert torch.backends.cpu.get_cpu_capability() == "AVX512", "the AVX-512 kernel only runs on AVX-512 CPUs"
weight = torch.randn(2, 48)
weight[1, 20] = 4.0  # the second flat block (weights 64..95, all in row 1) has absmax 4
layer = bnb.nn.Linear4bit(48, 2, bias=False, quant_type="nf4", compress_statistics=False)
layer.load_state_dict({"weight": weight})
layer = layer.to("cpu")
state = layer.weight.quant_state
codes = torch.stack([layer.weight.data.view(-1) >> 4, layer.weight.data.view(-1) & 15], 1).view(-1).long()
flat_blocks = (F.get_4bit_type("nf4", device="cpu")[codes] * state.absmax.repeat_interleave(64)[:96]).view(2, 48)
dequantized = F.dequantize_4bit(layer.weight.data, state)
assert torch.equal(dequantized, flat_blocks), (
    f"the dequantized weight is not code * the absmax of its flat block: row 1 uses absmax {state.absmax[0].item()} "
    f"for weights of block 1 (absmax {state.absmax[1].item()}); max error {(dequantized - flat_blocks).abs().max()}")
# expect: AssertionError: the dequantized weight is not code * the absmax of its flat block
