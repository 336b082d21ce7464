"""torch.jit.trace of brevitas' quant layers as constructed by default changes their gradients.

While torch.jit traces, brevitas' *_ste functions (brevitas/function/ops_ste.py) return the plain op (torch.round)
instead of the straight-through autograd.Function, a choice made for ONNX export. The default quantizers round, so the
traced layer differentiates torch.round (gradient 0) where the eager layer passes the gradient straight through: only
the scale's path is left (the input's gradient for QuantIdentity and QuantReLU, the weight's for QuantLinear and
QuantConv2d). The correct behaviour: the traced layer's gradients equal the eager layer's.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/function/ops_ste.py
"""
# expect: the traced layer's gradients differ from the eager ones
import torch
from brevitas.nn import QuantConv2d, QuantIdentity, QuantLinear, QuantReLU

x, image = torch.randn(2, 4, generator=torch.Generator().manual_seed(0)), torch.randn(2, 1, 6, 6)
makers = [(QuantIdentity, x), (QuantReLU, x), (lambda: QuantLinear(4, 3), x), (lambda: QuantConv2d(1, 2, 3), image)]


def fresh(make):
    torch.manual_seed(1)  # the same weights every time
    return make()


def gradients(layer, module, x):
    """The input's and every parameter's gradient of sum(module(x))."""
    xi = x.clone().requires_grad_(True)
    module(xi).sum().backward()
    return [xi.grad] + [p.grad for p in layer.parameters()]


differ = []
for make, x in makers:
    layer = fresh(make)
    eager = gradients(layer, layer, x)  # a fresh layer's first call (the activation scales start from its batch)
    source = fresh(make)
    traced = torch.jit.trace(source, (x,), check_trace=False)  # another fresh layer, traced on the same batch
    traced_grads = gradients(source, traced, x)
    if not all(torch.allclose(a, b) for a, b in zip(eager, traced_grads)):
        differ.append(f"{type(layer).__name__} (traced: {sum(g.abs().sum() for g in traced_grads):.3f} in total, "
                      f"eager: {sum(g.abs().sum() for g in eager):.3f})")
assert not differ, f"the traced layer's gradients differ from the eager ones: {'; '.join(differ)}"
print("the traced default layers keep their gradients")
