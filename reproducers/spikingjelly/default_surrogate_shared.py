"""spikingjelly nodes constructed with the default surrogate share one surrogate module.

IFNode, LIFNode and the other nodes declare ``surrogate_function: Callable = surrogate.Sigmoid()`` in their
signatures (spikingjelly/activation_based/neuron.py), a default argument Python evaluates once: every node built
without its own surrogate holds the same Sigmoid module, so setting one node's ``surrogate_function.alpha`` changes
the surrogate gradient of every other such node. The correct behaviour: two nodes constructed separately share no
submodule. https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/neuron.py
"""
# expect: setting one node's surrogate alpha changed another node's
from spikingjelly.activation_based import neuron

changed = []
for make in (neuron.IFNode, neuron.LIFNode):
    first, second = make(), make()
    before = second.surrogate_function.alpha
    first.surrogate_function.alpha = before * 2  # tune the first node only
    if second.surrogate_function.alpha != before:
        changed.append(f"{make.__name__} (alpha {before} -> {second.surrogate_function.alpha})")
assert not changed, f"setting one node's surrogate alpha changed another node's: {', '.join(changed)}"
print("separately constructed nodes have their own surrogates")
