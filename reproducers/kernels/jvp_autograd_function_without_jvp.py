"""torch.func.jvp through the kernels' modules raises: their autograd.Functions define no jvp staticmethod.

BinaryMatmul, BinaryLinear, BinaryConv2d (BinaryLinearFunction / BinaryConv2dFunction) and the fused LIF neurons
Leaky, SJLIF (LeakyFunction / SJLIFFunction) wrap their Triton kernels in an autograd.Function with setup_context
and backward (the STE / surrogate gradient) but no jvp, so forward-mode AD cannot go through them. The correct
behaviour: torch.func.jvp returns the tangent J u, equal to what reverse mode gives (<v, J u> == <J^T v, u>).
https://pytorch.org/docs/stable/notes/extending.html#forward-mode-ad
On the CPU the kernels run in Triton's interpreter, so the shapes are tiny.
"""
# expect: NotImplementedError: You must implement the jvp function for custom autograd.Function
import torch

from qsnn_kernels.binary import BinaryConv2d, BinaryLinear, BinaryMatmul
from qsnn_kernels.lif import SJLIF, Leaky

torch.manual_seed(0)
cases = [  # (module as the adapter builds it, input)
    (BinaryLinear(8, 4, bias=True, input_quant="ste", zero_value=1.0), torch.randn(3, 8)),
    (BinaryMatmul(8, 4, zero_value=1.0), torch.randn(3, 8)),
    (BinaryConv2d(2, 3, 3, padding=1, bias=True, input_quant="ste", zero_value=1.0), torch.randn(1, 2, 5, 5)),
    (Leaky(0.9, 1.0), torch.randn(4, 3) * 2),  # (T, N)
    (SJLIF(2.0), torch.randn(4, 3) * 2),
]
for module, x in cases:
    u = torch.randn_like(x)
    y, ju = torch.func.jvp(module, (x,), (u,))  # raises for every module above
    # what reverse mode says <v, J u> is
    v = torch.randn_like(y)
    xr = x.clone().requires_grad_(True)
    (module(xr) * v).sum().backward()
    assert torch.allclose((v * ju).sum(), (xr.grad * u).sum(), atol=1e-4), \
        f"{type(module).__name__}: forward and reverse mode disagree"
print("forward-mode AD works through every kernel module")
