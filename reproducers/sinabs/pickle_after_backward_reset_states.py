"""A sinabs IAF layer pickled after forward+backward cannot be reset: reset_states() raises.

After a forward with an input that requires grad, the state buffer v_mem holds a non-leaf tensor of the autograd
graph (LIF.forward assigns `self.v_mem = state["v_mem"]`). Pickling (or torch.save) stores it as a leaf tensor that
requires grad, and StatefulLayer.reset_states() then calls `buffer.zero_()` before `buffer.detach_()`: autograd
refuses the in-place op on a leaf requiring grad. The correct behaviour: the unpickled layer resets and runs like
the original (reset_states() detaches, or zeroes under no_grad, before anything else).
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/stateful_layer.py
"""
import io
import pickle

import torch
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import IAF

torch.manual_seed(0)
layer = IAF(spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike, reset_fn=MembraneSubtract(),
            surrogate_grad_fn=SingleExponential(grad_width=0.1, grad_scale=0.5))
x = torch.rand(2, 4, 3, requires_grad=True)  # (batch, time, neurons)
layer.reset_states()
layer(x).sum().backward()  # one training step

buffer = io.BytesIO()
pickle.dump(layer, buffer)
buffer.seek(0)
copy = pickle.load(buffer)
copy.reset_states()  # start the next sample from a zero state
copy(x)
# expect: RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
