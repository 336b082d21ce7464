"""torch.export.export of a snntorch neuron leaves a FakeTensor from tracing in the neuron's `reset` attribute, whether
the export succeeds or fails.

Leaky.forward stores each step's reset signal in a plain tensor attribute (`self.reset = self.mem_reset(self.mem)`,
leaky.py L209; the other neurons do the same) instead of a registered buffer, so torch.export (which warns that
such an attribute must be a buffer) traces the assignment with its fake tensors and leaves one in the module
it was given. With reset_delay=False the export then raises on a branch on tensor data
(export_leaky_reset_delay_false_branch.py; RSynaptic does the same), and the user who catches that error keeps the
FakeTensor too. The correct behaviour: exporting, successful or not, does not change the module: afterwards it
holds only real tensors (keeping the state in a registered buffer, or in a local variable, would do).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L209
"""
import torch
from torch import nn
import snntorch


class Rollout(nn.Module):  # a Leaky layer stepped over the time axis of x, from a zero membrane
    def __init__(self, **options):
        super().__init__()
        self.lif = snntorch.Leaky(beta=0.9, threshold=1.0, **options)

    def forward(self, x):
        mem = torch.zeros_like(x[0])
        spikes = []
        for step in range(x.shape[0]):
            spk, mem = self.lif(x[step], mem)
            spikes.append(spk)
        return torch.stack(spikes)


torch.manual_seed(0)
x = torch.randn(3, 2, 4) * 2  # (T, B, N)
left = []
for name, options, export_raises in (("default Leaky", {}, False),
                                     ("reset_delay=False", dict(reset_mechanism="zero", reset_delay=False), True)):
    model = Rollout(**options)
    if export_raises:
        try:
            torch.export.export(model, (x,))
        except Exception as error:  # the export's own, known failure; the module is what this script is about
            print(f"{name}: export raised", type(error).__name__, str(error).splitlines()[0][:100])
    else:
        torch.export.export(model, (x,))
    print(f"{name}: after export, model.lif.reset is a", type(model.lif.reset).__name__)
    if type(model.lif.reset) is not torch.Tensor:
        left.append(f"{name} ({type(model.lif.reset).__name__})")
assert not left, "export left a FakeTensor from tracing in the neuron's `reset` attribute: " + "; ".join(left)
# expect: AssertionError: export left a FakeTensor from tracing in the neuron's `reset` attribute
