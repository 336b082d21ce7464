"""QConv2d(pad_value=0.0) pads with -1.0: 'pad_value or config.padding_value' drops an explicit 0.0.

QConv2d_NoAct.__init__ does `self._pad_value = pad_value or config.padding_value`, so pad_value=0.0 (falsy) is
replaced by the config's default -1.0 and the binarized input is padded with -1: the border outputs differ from a
zero-padded convolution (and so does the weight gradient, which reads the padded input). The correct behaviour:
the layer pads with the pad_value it is given, as it does for pad_value=1.0.
https://github.com/hpi-xnor/bitorch/blob/v0.4.1/bitorch/layers/qconv2d.py
"""
# expect: AssertionError: QConv2d(pad_value=0.0) does not pad with 0.0
import torch
import torch.nn.functional as F
from bitorch.layers import QConv2d

torch.manual_seed(0)
x = torch.randn(1, 2, 5, 5)
for pad_value in (1.0, 0.0):
    layer = QConv2d(2, 3, 3, stride=1, padding=1, dilation=1, groups=1, bias=False, pad_value=pad_value,
                    input_quantization="sign", weight_quantization="sign", gradient_cancellation_threshold=1.0)
    # binarize the input and weight (no zeros in randn), then pad the binarized input with pad_value
    expected = F.conv2d(F.pad(torch.sign(x), (1, 1, 1, 1), value=pad_value), torch.sign(layer.weight))
    print(f"pad_value={pad_value}: stored {layer._pad_value}")
    assert torch.equal(layer(x), expected), f"QConv2d(pad_value={pad_value}) does not pad with {pad_value}"
print("QConv2d pads with the given pad_value")
