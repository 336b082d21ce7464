"""pickle of QLinear/QConv2d (and of every model holding them, e.g. LeNet) fails: LayerContainer fakes __class__.

QLinear(...) and QConv2d(...) return a LayerContainer whose __class__ is a property returning the wrapped layer's
class (QLinearBase, ...). pickle's __reduce_ex__ emits that class as __newobj__'s argument for an object whose real
type is LayerContainer, and pickle refuses: "args[0] from __newobj__ args has the wrong class". torch.save fails
the same way. The correct behaviour: the unpickled layer computes what the original computes.
https://github.com/hpi-xnor/bitorch/blob/v0.4.1/bitorch/layers/extensions/layer_container.py
"""
# expect: PicklingError: args[0] from __newobj__ args has the wrong class
import pickle

import torch
from bitorch.layers import QLinear

torch.manual_seed(0)
layer = QLinear(4, 2, bias=True, input_quantization="sign", weight_quantization="sign",
                gradient_cancellation_threshold=1.0)
print("type:", type(layer).__name__, "__class__:", layer.__class__.__name__)
restored = pickle.loads(pickle.dumps(layer))  # raises
x = torch.randn(3, 4)
assert torch.equal(restored(x), layer(x)), "the unpickled layer computes something else"
print("QLinear pickles")
