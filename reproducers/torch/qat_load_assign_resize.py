"""torch.ao.nn.qat.Linear loaded with load_state_dict(assign=True) from torch.load(weights_only=True) raises on its
first forward: "Trying to resize storage that is not resizable".

The weight's per-channel observer (MovingAveragePerChannelMinMaxObserver, inside the default QAT qconfig's
FusedMovingAvgObsFakeQuantize) starts with empty min_val/max_val and scale/zero_point of one element, and the fused
kernel resizes them in place on the first forward (running_min.resize_(size)). With assign=True the module holds the
loaded tensors, whose storage torch.load made not resizable. The correct behaviour: the loaded layer computes what
the saved one computes (a strict load without assign does).
https://github.com/pytorch/pytorch/blob/v2.13.0/torch/ao/quantization/fake_quantize.py
"""
import io

import torch
from torch.ao.nn.qat import Linear as QATLinear
from torch.ao.quantization import get_default_qat_qconfig


def qat_linear():
    linear = torch.nn.Linear(4, 3)
    linear.qconfig = get_default_qat_qconfig("x86")
    return QATLinear.from_float(linear)


torch.manual_seed(0)
saved = qat_linear()
buffer = io.BytesIO()
torch.save(saved.state_dict(), buffer)
buffer.seek(0)
loaded = qat_linear()
loaded.load_state_dict(torch.load(buffer, weights_only=True), assign=True)
x = torch.randn(2, 4)
assert torch.equal(loaded(x), saved(x))  # raises RuntimeError in the forward
# expect: RuntimeError: Trying to resize storage that is not resizable
