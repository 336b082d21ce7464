"""A spikingjelly node (IFNode, LIFNode, ParametricLIFNode) traced with torch.jit.trace forgets its membrane between calls: every call starts from rest.

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
rand = torch.rand(4, 2, 3)  # (time, batch, neurons)
differ = []
# inputs no single step from rest brings to the threshold (IF: v += x; LIF/PLIF, tau 2: v += (x - v) / 2)
for node_type, x in ((neuron.IFNode, rand * 0.8), (neuron.LIFNode, 1.1 + rand * 0.8),
                     (neuron.ParametricLIFNode, 1.1 + rand * 0.8)):
    def fresh():
        return node_type(v_threshold=1.0, v_reset=0.0, step_mode="s")

    node, traced = fresh(), torch.jit.trace(fresh(), (x[0],), check_trace=False)
    eager = torch.stack([node(x_t) for x_t in x])
    from_jit_trace = torch.stack([traced(x_t) for x_t in x])
    if not torch.equal(from_jit_trace, eager):
        differ.append(f"{node_type.__name__} ({int(from_jit_trace.sum())} spikes instead of {int(eager.sum())})")
assert not differ, f"the traced node's spikes differ from the node's: {', '.join(differ)}"
