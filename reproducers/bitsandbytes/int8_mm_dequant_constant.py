"""Linear8bitLt in eval mode on the CPU rescales its int8 product by 6.200124e-05 instead of 1 / 127**2
(6.2000124e-05): every output is 1.8e-5 too large relative to LLM.int8's rule.

backends/default/ops.py's int8_mm_dequant (the CPU's kernel) multiplies the int32 product by
row_stats * col_stats * 6.200124e-05; the CUDA kernel's MM_DEQUANT_CONST is 6.200012e-05f, 1 / 127**2 rounded to
float32's precision. The correct behaviour: out = A_int32 * row_stats * col_stats / 127**2 (float32 rounding only).
https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/backends/default/ops.py#L57
"""
import torch
import bitsandbytes  # noqa: F401  (registers torch.ops.bitsandbytes)

product = torch.tensor([[16129]], dtype=torch.int32)  # 127 * 127: the codes of two rows whose absmax is 1
row_stats, col_stats = torch.tensor([1.0]), torch.tensor([1.0])
out = torch.ops.bitsandbytes.int8_mm_dequant(product, row_stats, col_stats, dtype=torch.float32)
assert abs(out.item() - 1.0) <= 2 * torch.finfo(torch.float32).eps, (
    f"int8_mm_dequant of 127 * 127 with absmax 1 and 1 gives {out.item():.9f}, not 1 (relative error "
    f"{out.item() - 1.0:.2e})")
# expect: AssertionError: int8_mm_dequant of 127 * 127 with absmax 1 and 1 gives
