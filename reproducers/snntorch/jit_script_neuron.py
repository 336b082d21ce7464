"""torch.jit.script cannot compile a snntorch neuron (Leaky, with its default settings).

TorchScript cannot compile snntorch's neurons: the `reset_mechanism` property, the bound method held in the
`state_function` attribute and the spike function (a closure around a torch.autograd.Function, which TorchScript
does not support) are all unscriptable. The correct behaviour: torch.jit.script(neuron) returns a ScriptModule
that computes what the neuron computes (or the library documents that its neurons are not scriptable).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/neurons.py#L194
"""
import torch
import snntorch

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.9, threshold=1.0)
scripted = torch.jit.script(lif)
x, mem = torch.randn(2, 3), torch.zeros(2, 3)
assert torch.equal(scripted(x, mem)[0], lif(x, mem)[0])
# expect: SpikingNeuron.reset_dict[new_reset_mechanism]
