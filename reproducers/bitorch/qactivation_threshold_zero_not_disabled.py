"""QActivation(gradient_cancellation_threshold=0.0) still cancels the gradient: 0.0 silently becomes 1.0.

QActivation documents gradient_cancellation_threshold as "threshold for input gradient cancellation. Disabled if
threshold is 0." (and 0.0 is its default), but __init__ does
`gradient_cancellation_threshold or config.gradient_cancellation_threshold`, so an explicit 0.0 is replaced by the
config's 1.0 and the gradient of every quantization (sign STE, SwishSign, InputDoReFa's identity STE) is zeroed
wherever |x| > 1. The correct behaviour: with cancellation disabled, QActivation's gradient is the quantization's
own gradient. https://github.com/hpi-xnor/bitorch/blob/v0.4.1/bitorch/layers/qactivation.py
"""
# expect: AssertionError: threshold 0 (documented 'disabled') still zeroes the Sign gradient
import torch
from bitorch.layers import QActivation
from bitorch.quantizations import InputDoReFa, Sign, SwishSign

x = torch.tensor([-3.0, -1.5, -0.5, 0.5, 1.5, 3.0])
for quantization in (Sign(), SwishSign(beta=1.0), InputDoReFa(bits=2)):
    layer = QActivation(quantization, gradient_cancellation_threshold=0.0)  # "Disabled if threshold is 0"

    x_layer = x.clone().requires_grad_()
    layer(x_layer).sum().backward()
    x_alone = x.clone().requires_grad_()
    quantization(x_alone).sum().backward()

    print(type(quantization).__name__, "threshold stored:", layer.gradient_cancellation_threshold)
    print("  gradient of the quantization alone:", x_alone.grad.tolist())
    print("  gradient through QActivation:      ", x_layer.grad.tolist())
    assert torch.equal(x_layer.grad, x_alone.grad), \
        f"threshold 0 (documented 'disabled') still zeroes the {type(quantization).__name__} gradient for |x| > 1"
print("threshold 0 disables gradient cancellation")
