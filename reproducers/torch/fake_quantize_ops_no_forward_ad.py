"""torch.func.jvp through torch's fake quantization ops raises: none of them has a forward-mode derivative.

fake_quantize_per_tensor_affine (tensor qparams: _fake_quantize_per_tensor_affine_cachemask_tensor_qparams),
fake_quantize_per_channel_affine (fake_quantize_per_channel_affine_cachemask) and
_fake_quantize_learnable_per_tensor_affine define a backward in derivatives.yaml but no forward derivative. The
correct behaviour: jvp returns the tangent through the straight-through estimator, tangent * 1[code in range], as
reverse mode's gradient does. https://github.com/pytorch/pytorch/blob/main/tools/autograd/derivatives.yaml
"""
import torch

x = torch.tensor([0.3, -1.2, 2.6, 40.0])
tangent = torch.ones_like(x)
scale, zero_point = torch.tensor([0.5]), torch.tensor([0], dtype=torch.int32)
ops = [
    lambda t: torch.fake_quantize_per_tensor_affine(t, scale, zero_point, -8, 7),
    lambda t: torch.fake_quantize_per_channel_affine(t.reshape(2, 2), torch.tensor([0.5, 0.25]),
                                                     torch.tensor([0, 1], dtype=torch.int32), 1, -8, 7),
    lambda t: torch._fake_quantize_learnable_per_tensor_affine(t, scale, torch.tensor([0.0]), -8, 7, 1.0),
]
for op in ops:
    _, out_tangent = torch.func.jvp(op, (x,), (tangent,))  # raises NotImplementedError for each op
    assert out_tangent.shape == op(x).shape
# expect: NotImplementedError: Trying to use forward AD with
