"""sinabs layers constructed with their defaults share the threshold's memory and the reset and surrogate objects.

IAF, IAFSqueeze and LIF declare ``spike_threshold: torch.Tensor = torch.tensor(1.0)``,
``reset_fn: Callable = MembraneSubtract()`` and ``surrogate_grad_fn: Callable = SingleExponential()`` in their
signatures (sinabs/layers/iaf.py, lif.py): default arguments Python evaluates once. The threshold is wrapped in an
``nn.Parameter`` without a copy and the two mutable dataclasses are kept as they are, so every layer built without
its own holds the same memory and objects: loading a state_dict with another threshold into one layer (any in-place
change) changes every other such layer's threshold, and setting one layer's ``surrogate_grad_fn.grad_width`` changes
every other's surrogate gradient. The correct behaviour: two layers constructed separately share no mutable part.
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/iaf.py
"""
# expect: one default layer's threshold or surrogate changed with another layer's
import torch
from sinabs.layers import IAF, LIF

changed = []
for make in (IAF, lambda: LIF(tau_mem=2.0)):
    first, second = make(), make()
    state = first.state_dict()
    state["spike_threshold"] = torch.tensor(2.0)
    first.load_state_dict(state)  # a checkpoint with another threshold, loaded into the first layer only
    if float(second.spike_threshold) != 1.0:
        changed.append(f"{type(second).__name__} threshold 1.0 -> {float(second.spike_threshold)}")
    before = second.surrogate_grad_fn.grad_width
    first.surrogate_grad_fn.grad_width = before * 2  # tune the first layer's surrogate only
    if second.surrogate_grad_fn.grad_width != before:
        changed.append(f"{type(second).__name__} grad_width {before} -> {second.surrogate_grad_fn.grad_width}")
assert not changed, f"one default layer's threshold or surrogate changed with another layer's: {changed}"
print("separately constructed layers have their own threshold and surrogate")
