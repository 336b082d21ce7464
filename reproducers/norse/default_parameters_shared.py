"""norse modules constructed with their default parameters share the parameter tensors.

LIFCell, LIF and LIFBoxCell declare ``p: LIFParameters = LIFParameters()`` (``LIFBoxParameters()``) in their
signatures (norse/torch/module/lif.py, lif_box.py): a default argument Python evaluates once, whose fields are
tensors the module keeps as they are. Every module built without its own ``p`` computes with the same tensors, so
an in-place change to one module's ``p.v_th`` (or any other field) changes every other such module's spikes. The
correct behaviour: two modules constructed separately share no tensor memory.
https://github.com/norse/norse/blob/main/norse/torch/module/lif.py
"""
# expect: changing one default cell's threshold in place changed another cell's spikes
import torch
from norse.torch import LIFBoxCell, LIFCell

x = torch.full((1, 3), 400.0)  # strong enough to cross v_th = 1 in a few steps of dt = 1e-3
changed = []
for make in (LIFCell, LIFBoxCell):
    first, second = make(), make()

    def spikes():
        state, total = None, 0.0
        for _ in range(20):
            z, state = second(x, state)
            total += float(z.sum())
        return total

    before = spikes()
    with torch.no_grad():
        first.p.v_th.mul_(100.0)  # raise the first cell's threshold only
    after = spikes()
    first.p.v_th.div_(100.0)
    if after != before:
        changed.append(f"{make.__name__} ({before:g} -> {after:g} spikes)")
assert not changed, f"changing one default cell's threshold in place changed another cell's spikes: {changed}"
print("separately constructed cells have their own parameters")
