"""A brevitas activation quantizer restored from a state_dict taken during calibration computes otherwise.

QuantIdentity() and QuantReLU() as constructed by default (Int8ActPerTensorFloat / Uint8ActPerTensorFloat) set their
scale from running statistics of the first 300 training batches (ParameterFromRuntimeStatsScaling,
brevitas/core/scaling/standalone.py). A state_dict taken before those 300 steps saves the running statistic as the
scale parameter 'value' (not the step counter), and load_state_dict then ends the collection
("disable stats collection when a pretrained value is loaded"): the restored layer uses a fixed learned scale where
its source keeps collecting statistics from each batch, so the next training step differs (here the input gradient,
through the scale). The correct behaviour: a layer loaded from another's state_dict computes and differentiates as
the other does on the next call.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/core/scaling/standalone.py
"""
# expect: the restored layer differs from its source on the next call
import torch
from brevitas.nn import QuantIdentity, QuantReLU

torch.manual_seed(0)
differ = []
for make in (QuantIdentity, QuantReLU):
    source = make()
    source(torch.randn(3, 4))  # one training step: calibration has begun
    restored = make()
    restored.load_state_dict(source.state_dict())
    x, cot = torch.randn(3, 4), torch.randn(3, 4)
    runs = []
    for layer in (source, restored):
        xi = x.clone().requires_grad_(True)
        y = layer(xi)
        (y * cot).sum().backward()
        runs.append((y.detach(), xi.grad))
    same_output, same_grad = torch.equal(runs[1][0], runs[0][0]), torch.allclose(runs[1][1], runs[0][1])
    if not (same_output and same_grad):
        differ.append(f"{make.__name__} (same output: {same_output}, same input gradient: {same_grad})")
assert not differ, f"the restored layer differs from its source on the next call: {'; '.join(differ)}"
print("a layer restored from a state_dict taken during calibration computes as its source")
