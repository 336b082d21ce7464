"""A spikingjelly node (IFNode, LIFNode, ParametricLIFNode) keeps its membrane v out of its state_dict.

A node holds v between calls until reset() in ``MemoryModule._memories`` (``register_memory``), which state_dict does
not save: a state_dict taken in the middle of a sequence and loaded into a fresh node restarts the rest of the
sequence from rest. Correct: the loaded node continues the sequence as the source does (or the docs say that a
state_dict carries no state and a mid-sequence checkpoint needs it saved apart).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/base.py
"""
# expect: AssertionError: the node loaded from a mid-sequence state_dict does not continue the sequence
import torch
from spikingjelly.activation_based import neuron

# (time, batch, neurons): no single step from rest reaches the threshold (IF: v += x; LIF/PLIF, tau 2:
# v += (x - v) / 2), two steps do
differ = []
for node_type, level in ((neuron.IFNode, 0.6), (neuron.LIFNode, 1.5), (neuron.ParametricLIFNode, 1.5)):
    x = torch.full((2, 2, 3), level)
    source = node_type(v_threshold=1.0, v_reset=0.0, step_mode="s")
    with torch.no_grad():
        source(x[0])  # the first step; the node holds v
        loaded = node_type(v_threshold=1.0, v_reset=0.0, step_mode="s")
        loaded.load_state_dict(source.state_dict())
        expected, got = source(x[1]), loaded(x[1])
    if not torch.equal(got, expected):
        differ.append(f"{node_type.__name__}: {int(got.sum())} spikes on step 2 instead of {int(expected.sum())}")
assert not differ, f"the node loaded from a mid-sequence state_dict does not continue the sequence: {differ}"
