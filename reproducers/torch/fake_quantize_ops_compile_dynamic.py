"""torch.compile(dynamic=True) graph-breaks on torch's fake quantization ops: "Operator does not support running with
fake tensors", so fullgraph=True compilation fails.

With dynamic shapes dynamo traces the ops with fake tensors of symbolic sizes, and the fake-tensor implementations
of _fake_quantize_per_tensor_affine_cachemask_tensor_qparams, fake_quantize_per_channel_affine_cachemask and
_fake_quantize_learnable_per_tensor_affine refuse them (with static shapes they compile into one graph). The correct
behaviour: the ops compile with dynamic shapes as other elementwise ops do.
"""
import torch
import torch._dynamo
from torch._dynamo.utils import counters

x = torch.tensor([0.3, -1.2, 2.6, 40.0])
scale, zero_point = torch.tensor([0.5]), torch.tensor([0], dtype=torch.int32)
channel_scale, channel_zero_point = torch.tensor([0.5, 0.25]), torch.tensor([0, 1], dtype=torch.int32)
ops = {
    "per_tensor": lambda t: torch.fake_quantize_per_tensor_affine(t, scale, zero_point, -8, 7),
    "per_channel": lambda t: torch.fake_quantize_per_channel_affine(t.reshape(2, 2), channel_scale, channel_zero_point,
                                                                    1, -8, 7),
    "learnable": lambda t: torch._fake_quantize_learnable_per_tensor_affine(t, scale, torch.tensor([0.0]), -8, 7, 1.0),
}
broken = {}
for name, op in ops.items():
    counters.clear()
    torch._dynamo.reset()
    torch.compile(op, dynamic=True, backend="aot_eager")(x)
    reasons = {reason.splitlines()[0].strip() for reason in list(counters["graph_break"])}
    if reasons:
        broken[name] = sorted(reasons)
assert not broken, f"torch.compile(dynamic=True) graph breaks: {broken}"
# expect: Operator does not support running with fake tensors
