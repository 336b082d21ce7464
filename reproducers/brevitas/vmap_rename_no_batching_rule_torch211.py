"""With torch 2.11, torch.func.vmap over a brevitas quant layer raises: aten::rename has no batching rule.

Every brevitas quant layer strips dimension names from its input (QuantLayerMixin.unpack_input calls
brevitas.utils.torch_utils.rename_tensor(x, None), i.e. x.rename(None), named tensors), and vmap has no batching
rule for aten::rename ("Batching rule not implemented for aten::rename"). Torch 2.13 removed named tensors and
brevitas then skips the rename, so there vmap gets past it (to the STE Functions' missing setup_context). Seen on
CUDA with torch 2.11; nothing in the rename path depends on the device. The correct behaviour: vmap over the batch
equals a loop over samples.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/utils/torch_utils.py#L25
"""
# expect: Batching rule not implemented for aten::rename
import torch
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear, QuantReLU
from brevitas.quant import (Int8ActPerTensorFloat, SignedBinaryActPerTensorConst, SignedBinaryWeightPerTensorConst,
                            SignedTernaryActPerTensorConst)

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
x, image = torch.randn(4, 6, device=device), torch.randn(2, 2, 5, 5, device=device)
cases = [
    (QuantIdentity(act_quant=SignedBinaryActPerTensorConst), x),
    (QuantIdentity(act_quant=SignedTernaryActPerTensorConst, max_val=0.5, min_val=-0.5), x),
    (QuantIdentity(act_quant=Int8ActPerTensorFloat, bit_width=3, scaling_impl_type="const", max_val=2.0,
                   min_val=-2.0), x),
    (QuantReLU(bit_width=3, scaling_impl_type="const", max_val=3.5), x),
    (QuantLinear(6, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0), x),
    (QuantConv2d(2, 3, 3, bias=True, weight_quant=SignedBinaryWeightPerTensorConst, weight_scaling_const=1.0), image),
]
for layer, inp in cases:
    layer = layer.to(device)
    y = torch.func.vmap(lambda xi: layer(xi.unsqueeze(0)).squeeze(0))(inp)  # raises in x.rename(None)
    assert torch.equal(y, layer(inp)), f"{type(layer).__name__}: vmap differs from the eager layer"
print("vmap runs over every quant layer")
