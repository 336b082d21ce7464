"""A torch.export that fails on a snntorch neuron still leaves a FakeTensor from tracing in its `reset` attribute.

Leaky.forward stores each step's reset signal as a plain tensor attribute (`self.reset = self.mem_reset(self.mem)`,
leaky.py L209) before the reset_delay=False branch on tensor data makes torch.export raise
(export_leaky_reset_delay_false_branch.py; RSynaptic does the same). A user who catches the error keeps a module
holding the tracer's FakeTensor. The correct behaviour: a failed export leaves the module as it was.
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L209
"""
import torch
from torch import nn
import snntorch


class Rollout(nn.Module):  # a Leaky layer (reset_delay=False) stepped over the time axis of x, from a zero membrane
    def __init__(self):
        super().__init__()
        self.lif = snntorch.Leaky(beta=0.9, threshold=1.0, reset_mechanism="zero", reset_delay=False)

    def forward(self, x):
        mem = torch.zeros_like(x[0])
        spikes = []
        for step in range(x.shape[0]):
            spk, mem = self.lif(x[step], mem)
            spikes.append(spk)
        return torch.stack(spikes)


torch.manual_seed(0)
model = Rollout()
x = torch.randn(3, 2, 4) * 2  # (T, B, N)
try:
    torch.export.export(model, (x,))
except Exception as error:  # the export's own, known failure (export_leaky_reset_delay_false_branch.py)
    print("export raised:", type(error).__name__, str(error).splitlines()[0][:120])
print("after the failed export, model.lif.reset is a", type(model.lif.reset).__name__)
assert type(model.lif.reset) is torch.Tensor, \
    f"the failed export left a {type(model.lif.reset).__name__} from tracing in the neuron's `reset` attribute"
# expect: AssertionError: the failed export left a FakeTensor from tracing in the neuron
