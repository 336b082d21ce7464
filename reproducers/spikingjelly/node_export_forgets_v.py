"""A spikingjelly node exported with torch.export forgets its membrane between calls: every call starts from rest.

A node keeps v between calls until reset() (functional.reset_net): fed one time step per call, the spikes of step t
depend on every earlier step. At rest v is the Python float v_reset, which export records as a constant (v is a
plain attribute, not a buffer), so the exported program's v never carries from one call to the next.
Correct: the exported node, fed the same steps, spikes as the node does (or export refuses the unregistered state).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/neuron.py
"""
# expect: AssertionError: the exported node's spikes differ from the node's
import torch
from spikingjelly.activation_based import neuron

torch.manual_seed(0)
x = torch.rand(4, 2, 3) * 0.8  # (time, batch, neurons): no single step reaches the threshold
node = neuron.IFNode(v_threshold=1.0, v_reset=0.0, step_mode="s")
exported = torch.export.export(neuron.IFNode(v_threshold=1.0, v_reset=0.0, step_mode="s"), (x[0],)).module()
eager = torch.stack([node(x_t) for x_t in x])
from_export = torch.stack([exported(x_t) for x_t in x])
assert torch.equal(from_export, eager), \
    f"the exported node's spikes differ from the node's: {int(from_export.sum())} spikes instead of {int(eager.sum())}"
