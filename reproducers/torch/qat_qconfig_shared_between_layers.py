"""Two torch.ao.nn.qat.Linear layers built with get_default_qat_qconfig("x86") hold the same mutable object as
qconfig.weight.

get_default_qat_qconfig returns a new QConfig whose fields are the module-level partial wrappers of torch.ao's
qconfig module (default_fused_per_channel_wt_fake_quant, a _PartialWrapper with mutable callable_args): every layer
built from it, now and later, shares them, so changing one layer's qconfig.weight changes every other layer's. The
behaviour this suite checks: separately built modules share no mutable object.
https://github.com/pytorch/pytorch/blob/v2.13.0/torch/ao/quantization/qconfig.py
"""
import torch
from torch.ao.nn.qat import Linear as QATLinear
from torch.ao.quantization import get_default_qat_qconfig


def qat_linear():
    linear = torch.nn.Linear(4, 3)
    linear.qconfig = get_default_qat_qconfig("x86")
    return QATLinear.from_float(linear)


first, second = qat_linear(), qat_linear()
assert first.qconfig.weight is not second.qconfig.weight, "two separately built layers share qconfig.weight"
# expect: AssertionError: two separately built layers share qconfig.weight
