"""pickle of any snntorch neuron fails: it stores the local closure a snntorch.surrogate factory returns.

SpikingNeuron.__init__ keeps `self.spike_grad = atan()` by default (or the `spike_grad` passed, also a factory's
closure, e.g. `surrogate.fast_sigmoid(slope=25)`); that is the local function `atan.<locals>.inner`, which pickle
cannot serialise, so neither pickle.dumps nor torch.save(module) works on a neuron (used or not). The correct
behaviour: a neuron pickles and unpickles like any nn.Module (e.g. with the spike function a picklable object).
https://github.com/jeshraghian/snntorch/issues/420
"""
import pickle

import torch
import snntorch

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.9, threshold=1.0)  # spike_grad=None: snntorch's default atan surrogate
clone = pickle.loads(pickle.dumps(lif))
x = torch.randn(2, 3)
assert torch.equal(clone(x, torch.zeros(2, 3))[0], lif(x, torch.zeros(2, 3))[0])
# expect: AttributeError: Can't pickle local object 'atan.<locals>.inner'
