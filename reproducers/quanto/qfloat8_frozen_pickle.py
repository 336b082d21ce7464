"""pickle of a frozen optimum-quanto model with qfloat8 weights fails on loading: AttributeError "type object
'torch.storage.UntypedStorage' has no attribute 'dtype'".

The frozen weight keeps float8_e4m3fn codes; pickling a float8 tensor with the pickle module stores it through
torch's legacy path (torch.storage._load_from_bytes), which cannot read back a float8 storage (torch.save and
torch.load handle float8 since pytorch/pytorch#114662; plain pickle does not). The correct behaviour: the loaded
copy computes what the model computes.
https://github.com/pytorch/pytorch/blob/v2.13.0/torch/storage.py
"""
import pickle

import torch
from optimum.quanto import freeze, qfloat8, quantize

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 3))
quantize(model, weights=qfloat8)
freeze(model)
x = torch.randn(2, 8)
clone = pickle.loads(pickle.dumps(model))  # raises AttributeError
assert torch.equal(clone(x), model(x))
# expect: AttributeError: type object 'torch.storage.UntypedStorage' has no attribute 'dtype'
