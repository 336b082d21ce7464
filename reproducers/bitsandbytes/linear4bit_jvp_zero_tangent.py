"""torch.func.jvp through Linear4bit returns a zero tangent: under forward-mode AD the input does not require grad, so
matmul_4bit takes its inference path (torch.ops.bitsandbytes.gemm_4bit), which has no forward derivative, and the
output's tangent is silently lost.

The correct behaviour: the tangent of y = x @ W.T + b is t @ W.T (W the dequantized weight), or an error saying
forward-mode AD is unsupported.
https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/autograd/_functions.py#L453-L480
"""
import torch
import bitsandbytes as bnb
import bitsandbytes.functional as F

torch.manual_seed(0)
linear = torch.nn.Linear(64, 3)
layer = bnb.nn.Linear4bit(64, 3, quant_type="nf4")
layer.load_state_dict(linear.state_dict())
layer = layer.to("cpu")
x, tangent = torch.randn(2, 64), torch.randn(2, 64)
_, out_tangent = torch.func.jvp(layer, (x,), (tangent,))
expected = tangent @ F.dequantize_4bit(layer.weight.data, layer.weight.quant_state).T
assert torch.allclose(out_tangent, expected, atol=1e-5), f"jvp's tangent is {out_tangent.tolist()}, not t @ W.T"
# expect: AssertionError: jvp's tangent is
