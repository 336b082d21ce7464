"""copy.deepcopy of a frozen optimum-quanto model raises RuntimeError: the default __deepcopy__ for wrapper subclasses.

After freeze() the weight is a WeightQBytesTensor (qint8) or WeightQBitsTensor (qint4), wrapper tensor subclasses
whose clone() does not return an instance of the same subclass, so torch's default Tensor.__deepcopy__ refuses.
The correct behaviour: the copy computes what the model computes. Reported upstream:
https://github.com/huggingface/optimum-quanto/issues/358
"""
import copy

import torch
from optimum.quanto import freeze, qint8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qint8)
freeze(model)
x = torch.randn(2, 8)
clone = copy.deepcopy(model)  # raises RuntimeError
assert torch.equal(clone(x), model(x))
# expect: RuntimeError: The default implementation of __deepcopy__() for wrapper subclasses only works
