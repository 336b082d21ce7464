"""A sinabs layer that a torch.func transform fails on is left changed: re-initialised or holding wrapped tensors.

The layer sets up and updates its state (`v_mem`) before its spike function, an autograd.Function without
setup_context, makes torch.func.vmap, grad and jvp raise (torch_func_vmap_spike_fn.py and its siblings). After the
failed vmap, `v_mem` is re-initialised to a sample's shape; after the failed grad it holds a functorch-wrapped
tensor of a transform that has ended. A user who catches the error keeps that module. The correct behaviour: a call
that raises leaves the layer's state as it was.
https://github.com/synsense/sinabs/blob/develop/sinabs/layers/stateful_layer.py
"""
import torch
import sinabs.layers as sl

torch.manual_seed(0)
x = torch.randn(2, 3, 4)  # (batch, time, neurons)
problems = []
for name, transform in (("vmap", lambda layer: torch.func.vmap(layer)(x)),
                        ("grad", lambda layer: torch.func.grad(lambda t: layer(t).sum())(x))):
    layer = sl.LIF(tau_mem=2.0)
    before = layer.v_mem.detach().clone()
    try:
        transform(layer)
    except RuntimeError as error:  # the transform's own, known failure; the layer is what this script is about
        print(f"{name} raised:", str(error).splitlines()[0][:100])
    after = layer.v_mem
    if torch._C._functorch.is_functorch_wrapped_tensor(after):
        problems.append(f"after the failed {name}, v_mem is a functorch-wrapped tensor")
    elif after.shape != before.shape or not torch.equal(after, before):
        problems.append(f"after the failed {name}, v_mem changed from shape {tuple(before.shape)} to "
                        f"{tuple(after.shape)}")
print("\n".join(problems))
assert not problems, "a failed transform left the layer changed: " + "; ".join(problems)
# expect: AssertionError: a failed transform left the layer changed
