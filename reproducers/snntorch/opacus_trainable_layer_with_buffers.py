"""Opacus' GradSampleModule refuses a snntorch neuron with a learnable parameter: the neuron also holds buffers.

A neuron built with learn_threshold=True (or learn_beta=True, or RSynaptic's learnable V) has that parameter in the
same module as snntorch's registered buffers (threshold or beta, mem, reset_mechanism_val, graded_spikes_factor,
...; neurons.py L131), and Opacus refuses trainable layers with buffers, so per-sample gradients (DP-SGD) cannot be
computed for it. The correct behaviour: GradSampleModule wraps the network and gives per-sample gradients of the
neuron's parameter (which needs the learnable parameter and the state in separate modules, or no buffers).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/neurons.py#L131
"""
import torch
from torch import nn
from opacus import GradSampleModule
import snntorch


class Rollout(nn.Module):  # a Leaky layer stepped over the time axis of x (T, B, N), from a zero membrane
    def __init__(self):
        super().__init__()
        self.neuron = snntorch.Leaky(beta=0.5, threshold=0.25, learn_threshold=True)

    def forward(self, x):
        mem = torch.zeros_like(x[0])
        spikes = []
        for step in range(x.shape[0]):
            spk, mem = self.neuron(x[step], mem)
            spikes.append(spk)
        return torch.stack(spikes)


torch.manual_seed(0)
model = GradSampleModule(Rollout(), batch_first=True, loss_reduction="sum")
# expect: Model contains a trainable layer with buffersthat Opacus doesn't currently support
