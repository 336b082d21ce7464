"""Opacus refuses a sinabs LIF layer: a trainable layer (tau_mem) that also holds buffers (the v_mem state).

LIF keeps its membrane state in registered buffers (StatefulLayer registers v_mem as a buffer) next to the trainable
parameter tau_mem; Opacus' GradSampleModule, in hooks mode and in functorch mode alike, rejects every trainable
module with buffers ("Model contains a trainable layer with buffers that Opacus doesn't currently support"). The
correct behaviour: GradSampleModule computes per-sample gradients of tau_mem (grad_sample), as for any trainable
layer whose state is not a buffer of the trainable module.
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/stateful_layer.py
"""
import torch
from opacus import GradSampleModule
from sinabs.activation import MembraneSubtract, MultiSpike, SingleExponential
from sinabs.layers import LIF

torch.manual_seed(0)
layer = LIF(tau_mem=3.0, norm_input=False, spike_threshold=torch.tensor(0.25), spike_fn=MultiSpike,
            reset_fn=MembraneSubtract(), surrogate_grad_fn=SingleExponential(grad_width=0.5, grad_scale=1.0))
wrapped = GradSampleModule(layer, batch_first=True, loss_reduction="sum")  # raises; force_functorch=True alike
wrapped(torch.rand(2, 4, 3) * 2).sum().backward()  # (batch, time, neurons)
assert layer.tau_mem.grad_sample is not None, "Opacus computed no per-sample gradient for tau_mem"
# expect: Model contains a trainable layer with buffers
