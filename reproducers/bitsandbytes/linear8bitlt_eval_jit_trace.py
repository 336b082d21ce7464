"""torch.jit.trace of Linear8bitLt in eval mode raises: its LLM.int8 path calls bitsandbytes::int8_vectorwise_quant,
whose schema returns an optional tensor (the outlier columns), an output type the tracer does not support.

The correct behaviour: a traced module computing what the layer computes (training mode, which dequantizes the
weight instead, traces). https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.50.1/bitsandbytes/_ops.py
"""
import torch
import bitsandbytes as bnb

torch.manual_seed(0)
layer = bnb.nn.Linear8bitLt(64, 3, has_fp16_weights=False).to("cpu").eval()
torch.jit.trace(layer, (torch.randn(2, 64),))  # raises RuntimeError
# expect: RuntimeError: unsupported output type: Tensor?, from operator: bitsandbytes::int8_vectorwise_quant
