"""A snntorch neuron that a torch.func transform fails on keeps that transform's wrapped tensors as its state.

Leaky.forward stores the new membrane in its `mem` buffer (`self.mem = self.state_function(input_)`, leaky.py
L210) before the spike function, an autograd.Function without setup_context, makes torch.func.vmap (and grad, jvp)
raise (torch_func_autograd_function_no_setup_context.py). A user who catches that error and goes on with the neuron
holds a module whose `mem` is a functorch-wrapped tensor of a transform that has ended (copy.deepcopy(lif) then
raises "Cannot access storage of BatchedTensorImpl"). The correct behaviour: a call that raises leaves the module's
state as it was (or at least holding plain tensors).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L210
"""
import torch
import snntorch

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.9, threshold=1.0)
x = torch.randn(2, 4) * 2  # (B, N): one time step
try:
    torch.func.vmap(lambda xi: lif(xi)[0])(x)
except RuntimeError as error:  # the transform's own, known failure; the module is what this script is about
    print("vmap raised:", str(error).splitlines()[0][:120])
wrapped = torch._C._functorch.is_functorch_wrapped_tensor(lif.mem)
print("after the failed vmap, lif.mem is functorch-wrapped:", wrapped)
assert not wrapped, "the failed vmap left a functorch-wrapped tensor in the neuron's `mem` buffer"
# expect: AssertionError: the failed vmap left a functorch-wrapped tensor in the neuron's `mem` buffer
