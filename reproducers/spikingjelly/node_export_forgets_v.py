"""A spikingjelly node (IFNode, LIFNode, ParametricLIFNode) exported with torch.export forgets its membrane between calls: every call starts from rest.

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
rand = torch.rand(4, 2, 3)  # (time, batch, neurons)
differ = []
# inputs no single step from rest brings to the threshold (IF: v += x; LIF/PLIF, tau 2: v += (x - v) / 2)
for node_type, x in ((neuron.IFNode, rand * 0.8), (neuron.LIFNode, 1.1 + rand * 0.8),
                     (neuron.ParametricLIFNode, 1.1 + rand * 0.8)):
    def fresh():
        return node_type(v_threshold=1.0, v_reset=0.0, step_mode="s")

    node, exported = fresh(), torch.export.export(fresh(), (x[0],)).module()
    eager = torch.stack([node(x_t) for x_t in x])
    from_export = torch.stack([exported(x_t) for x_t in x])
    if not torch.equal(from_export, eager):
        differ.append(f"{node_type.__name__} ({int(from_export.sum())} spikes instead of {int(eager.sum())})")
assert not differ, f"the exported node's spikes differ from the node's: {', '.join(differ)}"
