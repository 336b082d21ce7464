"""Opacus' GradSampleModule refuses brevitas' binary-weight QuantLinear/QuantConv2d: "a trainable layer with buffers".

Every brevitas quant proxy registers a StatelessBuffer submodule '_zero_hw_sentinel' (brevitas/proxy/quant_proxy.py),
so a QuantLinear or QuantConv2d is a trainable layer holding buffers, which Opacus' strict validation refuses
("Model contains a trainable layer with buffers that Opacus doesn't currently support"), in hooks and in functorch
mode alike. The correct behaviour: GradSampleModule wraps the layer and gives per-sample gradients equal to one
backward per sample. https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/proxy/quant_proxy.py
"""
# expect: Model contains a trainable layer with buffers
import torch
from brevitas.nn import QuantConv2d, QuantLinear
from brevitas.quant import SignedBinaryWeightPerTensorConst
from opacus import GradSampleModule

torch.manual_seed(0)
cases = [
    (lambda: QuantLinear(6, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0),
     torch.randn(4, 6)),
    (lambda: QuantConv2d(2, 3, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0),
     torch.randn(4, 2, 5, 5)),
]
for make, x in cases:
    for functorch in (False, True):
        torch.manual_seed(1)
        layer = make()
        wrapped = GradSampleModule(layer, batch_first=True, loss_reduction="sum", force_functorch=functorch)  # raises
        cot = torch.randn_like(layer(x))
        (wrapped(x) * cot).sum().backward()
        for i in range(x.shape[0]):  # one backward per sample on an identical layer
            torch.manual_seed(1)
            single = make()
            (single(x[i:i + 1]) * cot[i:i + 1]).sum().backward()
            for (name, p), (_, q) in zip(layer.named_parameters(), single.named_parameters()):
                assert torch.allclose(p.grad_sample[i], q.grad, atol=1e-5), \
                    f"{type(layer).__name__}: Opacus' per-sample gradient of {name} differs from backward"
print("Opacus computes per-sample gradients of the binary-weight layers")
