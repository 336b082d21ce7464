"""torch.export.export of a snntorch neuron leaves a FakeTensor from tracing in the neuron's `reset` attribute.

Leaky.forward stores each step's reset signal in a plain tensor attribute (`self.reset = self.mem_reset(self.mem)`,
leaky.py L209; the other neurons do the same) instead of a registered buffer, so torch.export (which warns that
such an attribute must be a buffer) traces the assignment with its fake tensors and leaves one in the module
it was given. The correct behaviour: exporting does not change the module: afterwards it holds only real tensors
(keeping the state in a registered buffer, or in a local variable, would do).
https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L209
"""
import torch
from torch import nn
import snntorch


class Rollout(nn.Module):  # a Leaky layer stepped over the time axis of x, from a zero membrane
    def __init__(self):
        super().__init__()
        self.lif = snntorch.Leaky(beta=0.9, threshold=1.0)

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
torch.export.export(model, (x,))
print("after export, model.lif.reset is a", type(model.lif.reset).__name__)
assert type(model.lif.reset) is torch.Tensor, \
    f"export left a {type(model.lif.reset).__name__} from tracing in the neuron's `reset` attribute"
# expect: AssertionError: export left a FakeTensor from tracing in the neuron's `reset` attribute
