"""Opacus' GradSampleModule refuses brevitas' QuantLinear/QuantConv2d as constructed by default.

Every brevitas quant proxy registers a StatelessBuffer submodule '_zero_hw_sentinel' (brevitas/proxy/quant_proxy.py),
so even a default QuantLinear or QuantConv2d is a trainable layer holding buffers, which Opacus' strict validation
refuses ("Model contains a trainable layer with buffers that Opacus doesn't currently support"). The correct
behaviour: GradSampleModule wraps the layer and gives per-sample gradients equal to one backward per sample.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/proxy/quant_proxy.py
"""
# expect: Model contains a trainable layer with buffers
import torch
from brevitas.nn import QuantConv2d, QuantLinear
from opacus import GradSampleModule

cases = [(lambda: QuantLinear(4, 3), torch.randn(2, 4)), (lambda: QuantConv2d(1, 2, 3), torch.randn(2, 1, 6, 6))]
for make, x in cases:
    torch.manual_seed(1)
    layer = make()
    wrapped = GradSampleModule(layer, batch_first=True, loss_reduction="sum")  # raises
    wrapped(x).sum().backward()
    for i in range(x.shape[0]):  # one backward per sample on an identical layer
        torch.manual_seed(1)
        single = make()
        single(x[i:i + 1]).sum().backward()
        for (name, p), (_, q) in zip(layer.named_parameters(), single.named_parameters()):
            assert torch.allclose(p.grad_sample[i], q.grad, atol=1e-5), \
                f"{type(layer).__name__}: Opacus' per-sample gradient of {name} differs from backward"
print("Opacus computes per-sample gradients of the default quant layers")
