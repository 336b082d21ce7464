"""bdpy's FeatureExtractor(detach=True) raises inside a brevitas layer's forward: quant proxies return tuples.

bdpy's FeatureExtractorHandleDetach (bdpy 0.26, bdpy/dl/torch/torch.py) stores module_out.detach().clone() for each
hooked module. brevitas' quantizer submodules return tuples (value, scale, zero point, bit width) and QuantTensors,
so the hook raises AttributeError inside the layer's forward. Asked here for the layer and each of its submodules
that runs, in the order their hooks fire. The correct behaviour: FeatureExtractor returns a detached copy of each
requested layer's output (or says which outputs it cannot take) without breaking the forward.
https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py#L138
"""
# expect: AttributeError: 'tuple' object has no attribute 'detach'
import torch
from bdpy.dl.torch import FeatureExtractor
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear, QuantReLU
from brevitas.quant import (Int8ActPerTensorFloat, SignedBinaryActPerTensorConst, SignedBinaryWeightPerTensorConst,
                            SignedTernaryActPerTensorConst)


class Net(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.subject = layer

    def forward(self, x):
        return self.subject(x)


def layers_in_hook_order(net, x):
    order = []
    handles = [m.register_forward_hook(lambda *_, n=n: order.append(n) if n not in order else None)
               for n, m in net.named_modules() if n.startswith("subject")]
    with torch.no_grad():
        net(x)
    for h in handles:
        h.remove()
    return order


torch.manual_seed(0)
x, image = torch.randn(4, 6), torch.randn(2, 2, 5, 5)
cases = [
    (QuantIdentity(act_quant=SignedBinaryActPerTensorConst), x),
    (QuantIdentity(act_quant=SignedTernaryActPerTensorConst, max_val=0.5, min_val=-0.5), x),
    (QuantIdentity(act_quant=Int8ActPerTensorFloat, bit_width=3, scaling_impl_type="const", max_val=2.0,
                   min_val=-2.0), x),
    (QuantReLU(bit_width=3, scaling_impl_type="const", max_val=3.5), x),
    (QuantLinear(6, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0), x),
    (QuantConv2d(2, 3, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0), image),
]
for layer, inp in cases:
    net = Net(layer)
    layers = layers_in_hook_order(net, inp)
    features = FeatureExtractor(net, layers, detach=True)(inp)  # raises inside forward
    assert torch.equal(torch.from_numpy(features["subject"]), layer(inp)), "the layer's feature is not its output"
print("bdpy extracts detached features of the quant layers")
