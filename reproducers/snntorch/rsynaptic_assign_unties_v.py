"""After load_state_dict(assign=True), snntorch's RSynaptic(all_to_all=False) holds V as two separate parameters.

With all_to_all=False the recurrent weight V is one Parameter registered on the neuron and on its `recurrent`
submodule. load_state_dict(assign=True) (how tensor-subclass weights are meant to be loaded) assigns each key its own
new Parameter, so "V" and "recurrent.V" are no longer one parameter: the gradient reaches neuron.V only through one of
its two uses, and an optimizer updates two copies. torch's assign mode does not keep tied parameters tied:
https://github.com/pytorch/pytorch/issues/188346. The correct behaviour: the loaded neuron holds V once, as built.
"""
import snntorch
import torch

torch.manual_seed(0)
neuron = snntorch.RSynaptic(alpha=0.5, beta=0.5, V=0.5, all_to_all=False, reset_delay=False)
restored = snntorch.RSynaptic(alpha=0.5, beta=0.5, V=0.25, all_to_all=False, reset_delay=False)
assert restored.V is restored.recurrent.V
restored.load_state_dict(neuron.state_dict(), assign=True)
names = [name for name, _ in restored.named_parameters()]
assert restored.V is restored.recurrent.V, f"V is untied by the load: the neuron's parameters are now {names}"
# expect: AssertionError: V is untied by the load
