"""torch.func.vmap and torch.func.grad of torch.ao.nn.qat.Linear change the layer's buffers.

The default QAT qconfig's weight fake quantizer (FusedMovingAvgObsFakeQuantize) writes its observer's running
min/max, scale and zero point in place on every forward, also inside a functional transform: the module comes out of
vmap or grad with its statistics updated (to the values an eager forward writes). The behaviour this suite checks
for vmap, grad, jvp and per-sample gradients: the transform leaves the module's state as it was.
https://github.com/pytorch/pytorch/blob/v2.13.0/torch/ao/quantization/fake_quantize.py
"""
import torch
from torch.ao.nn.qat import Linear as QATLinear
from torch.ao.quantization import get_default_qat_qconfig

torch.manual_seed(0)
linear = torch.nn.Linear(4, 3)
linear.qconfig = get_default_qat_qconfig("x86")
layer = QATLinear.from_float(linear)
x = torch.randn(2, 4)
changed = {}
for name, transform in (("vmap", lambda: torch.func.vmap(layer)(x)),
                        ("grad", lambda: torch.func.grad(lambda xi: layer(xi).sum())(x))):
    before = {key: t.clone() for key, t in layer.named_buffers()}
    transform()
    changed[name] = [key for key, t in layer.named_buffers() if not torch.equal(t, before[key])]
    layer = QATLinear.from_float(linear)  # a fresh observer for the next transform
assert not any(changed.values()), f"functional transforms changed the layer's buffers: {changed}"
# expect: AssertionError: functional transforms changed the layer's buffers
