"""torch.func.grad of torchao's QAT FakeQuantizedLinear raises: its rounding is an autograd.Function without
setup_context.

torchao's fake quantization rounds with quant_primitives._Round, an autograd.Function whose forward takes ctx (the
old style, no setup_context staticmethod); functorch's transforms (grad, vmap, jvp, and Opacus' per-sample
gradients built on them) refuse such a Function. Eager autograd works. The correct behaviour: torch.func.grad gives
autograd's gradient. https://github.com/pytorch/ao/blob/v0.18.0/torchao/quantization/quant_primitives.py
"""
import torch
from torchao.quantization import quantize_
from torchao.quantization.qat import IntxFakeQuantizeConfig, QATConfig

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 3))
quantize_(model, QATConfig(activation_config=IntxFakeQuantizeConfig(torch.int8, "per_token", is_symmetric=False),
                           weight_config=IntxFakeQuantizeConfig(torch.int4, group_size=32, is_symmetric=True),
                           step="prepare"))
x = torch.randn(2, 32)
torch.func.grad(lambda xi: model(xi).sum())(x)  # raises RuntimeError
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
