"""bdpy's FeatureExtractor hands back another module's output as a brevitas layer's feature: it pairs by position.

bdpy's FeatureExtractor.run() (bdpy 0.26, bdpy/dl/torch/torch.py) collects hook outputs in one list and labels
them by position (features[layer] = outputs[i]). Inside a brevitas quantizer a submodule runs twice per forward
(the scaling's restrict_value_impl and its apply_abs, once for the scale and once for the threshold), so every
feature after it, the quant layer's own included, is the output of some other module (a proxy's tuple, a
QuantTensor, a Parameter). Asked here for the layer and each of its submodules that runs, in the order their hooks
fire. The correct behaviour: each feature is the output of the layer it is labelled with.
https://github.com/KamitaniLab/bdpy/blob/d86199fc0683fe257dc0a3d474a1abdc81b0249f/bdpy/dl/torch/torch.py#L89
"""
# expect: AssertionError: bdpy labels other modules' outputs as the features of
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


def outputs_per_layer(net, x):
    """Each submodule of net.subject that runs, in the order its forward hook first fires, with all its outputs."""
    seen = {}
    handles = [m.register_forward_hook(lambda _m, _i, out, n=n: seen.setdefault(n, []).append(out))
               for n, m in net.named_modules() if n.startswith("subject")]
    with torch.no_grad():
        net(x)
    for h in handles:
        h.remove()
    return seen


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
    layers = list(outputs_per_layer(net, inp))  # the subject and its submodules, in hook order
    truth = {}  # what each layer really returned, recorded by hooks registered before bdpy's
    handles = [net.get_submodule(n).register_forward_hook(lambda _m, _i, out, n=n: truth.setdefault(n, []).append(out))
               for n in layers]
    features = FeatureExtractor(net, layers, detach=False)(inp)
    for h in handles:
        h.remove()
    wrong = [n for n in layers if not any(features[n] is out for out in truth[n])]
    assert not wrong, f"bdpy labels other modules' outputs as the features of {len(wrong)} of {len(layers)} " \
                      f"layers, the quant layer itself among them: {'subject' in wrong} (first: {wrong[0]})"
print("bdpy labels every feature of the quant layers correctly")
