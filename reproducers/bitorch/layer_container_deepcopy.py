"""copy.deepcopy of QLinear/QConv2d (and of every model holding them, e.g. LeNet) raises KeyError '_layer_implementation'.

QLinear(...) and QConv2d(...) return a LayerContainer whose __getattr__ reads self.__dict__['_layer_implementation'].
copy.deepcopy first creates an empty instance (no __dict__ entries yet) and asks hasattr(y, '__setstate__'):
__getattr__ then raises KeyError instead of AttributeError, so hasattr does not catch it. The correct behaviour:
the deep copy computes what the original computes and shares no tensor with it.
Reported with tracebacks in https://github.com/hpi-xnor/bitorch/pull/4
"""
# expect: KeyError: '_layer_implementation'
import copy

import torch
from bitorch.layers import QLinear

torch.manual_seed(0)
layer = QLinear(4, 2, bias=True, input_quantization="sign", weight_quantization="sign",
                gradient_cancellation_threshold=1.0)
clone = copy.deepcopy(layer)  # raises
x = torch.randn(3, 4)
assert torch.equal(clone(x), layer(x)), "the copy computes something else"
assert clone.weight.data_ptr() != layer.weight.data_ptr(), "the copy shares its weight"
print("QLinear deep-copies")
