"""snntorch's Leaky and Synaptic keep the state they hold between calls out of their state_dict.

A layer that holds its state itself (``init_hidden=True``, or called without the state as ``spk, mem = lif(x_t)``)
keeps ``mem`` (Synaptic: also ``syn``) as a non-persistent buffer (``register_buffer("mem", mem, False)``, since
https://github.com/jeshraghian/snntorch/pull/315): a state_dict taken in the middle of a sequence and loaded into a
fresh layer restarts the rest of the sequence from rest. Correct: the loaded layer continues the sequence as the
source does (or the docs say that a state_dict carries no state and a mid-sequence checkpoint needs it saved apart).
"""
# expect: AssertionError: the layer loaded from a mid-sequence state_dict does not continue the sequence
import snntorch
import torch

# (time, batch, neurons): no single step from rest reaches the threshold (1), two steps do
x = torch.full((2, 2, 3), 0.6)
differ = []
for name, make in (("Leaky(init_hidden=True)", lambda: snntorch.Leaky(beta=0.9, init_hidden=True)),
                   ("Leaky", lambda: snntorch.Leaky(beta=0.9)),
                   ("Synaptic", lambda: snntorch.Synaptic(alpha=0.8, beta=0.9))):
    source = make()
    with torch.no_grad():
        source(x[0])  # the first step; the layer holds its state
        loaded = make()
        loaded.load_state_dict(source.state_dict())
        rest_source = [source(x_t) for x_t in x[1:]]
        rest_loaded = [loaded(x_t) for x_t in x[1:]]
    spikes = [torch.stack([r[0] if isinstance(r, tuple) else r for r in rest]) for rest in (rest_source, rest_loaded)]
    if not torch.equal(spikes[0], spikes[1]):
        differ.append(f"{name}: {int(spikes[1].sum())} spikes on step 2 instead of {int(spikes[0].sum())}")
assert not differ, f"the layer loaded from a mid-sequence state_dict does not continue the sequence: {differ}"
