"""safetensors refuses the state_dict of snntorch's RSynaptic(all_to_all=False): it holds V under two keys.

With all_to_all=False the recurrent weight V is registered on the neuron and again on its `recurrent` submodule, so
the state_dict has "V" and "recurrent.V" over one memory, which safetensors.torch.save refuses ("Some tensors share
memory", https://huggingface.co/docs/safetensors/torch_shared_tensors). The correct behaviour: the state_dict of a
layer is saved by safetensors and loads back into a fresh layer.
"""
import snntorch
import torch
from safetensors.torch import load, save

torch.manual_seed(0)
neuron = snntorch.RSynaptic(alpha=0.5, beta=0.5, V=0.5, all_to_all=False, reset_delay=False)
restored = snntorch.RSynaptic(alpha=0.5, beta=0.5, V=0.25, all_to_all=False, reset_delay=False)
restored.load_state_dict(load(save(neuron.state_dict())))  # save raises
assert float(restored.V) == 0.5
# expect: RuntimeError:
