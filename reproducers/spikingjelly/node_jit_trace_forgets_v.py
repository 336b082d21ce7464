"""A spikingjelly node traced with torch.jit.trace forgets its membrane between calls: every call starts from rest.

A node keeps v between calls until reset() (functional.reset_net): fed one time step per call, the spikes of step t
depend on every earlier step. At rest v is the Python float v_reset, which the trace records as a constant
(`v = torch.full_like(x, v_reset)`), so the traced node's v never carries from one call to the next; nothing warns.
Correct: the traced node, fed the same steps, spikes as the node does (or tracing refuses the Python-float state).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/neuron.py
"""
# expect: AssertionError: the traced node's spikes differ from the node's
import torch
from spikingjelly.activation_based import neuron

torch.manual_seed(0)
x = torch.rand(4, 2, 3) * 0.8  # (time, batch, neurons): no single step reaches the threshold
node = neuron.IFNode(v_threshold=1.0, v_reset=0.0, step_mode="s")
traced = torch.jit.trace(neuron.IFNode(v_threshold=1.0, v_reset=0.0, step_mode="s"), (x[0],), check_trace=False)
eager = torch.stack([node(x_t) for x_t in x])
from_trace = torch.stack([traced(x_t) for x_t in x])
assert torch.equal(from_trace, eager), \
    f"the traced node's spikes differ from the node's: {int(from_trace.sum())} spikes instead of {int(eager.sum())}"
