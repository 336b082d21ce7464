"""Separately constructed brevitas integer activation quantizers share one TensorClamp module instance.

IntQuant.__init__ (brevitas/core/quant/int_base.py) declares ``tensor_clamp_impl: Module = TensorClamp()``, a default
argument Python evaluates once: every integer activation quantizer built without its own clamp (QuantIdentity() and
QuantReLU() as constructed by default, Int8ActPerTensorFloat with a constant scale, ...) holds that one instance. A
forward hook registered on one layer's part then runs whenever any other such layer runs (and eval() or an attribute
set on it reaches them all). The correct behaviour: two layers constructed separately share no submodule.
https://github.com/Xilinx/brevitas/blob/v0.13.4/src/brevitas/core/quant/int_base.py
"""
# expect: a hook on one layer's part runs when another layer runs
import torch
from brevitas.nn import QuantIdentity, QuantReLU
from brevitas.quant import Int8ActPerTensorFloat

makers = {
    "QuantIdentity()": QuantIdentity,
    "QuantReLU()": QuantReLU,
    "QuantIdentity(Int8ActPerTensorFloat, bit_width=3, const scale)": lambda: QuantIdentity(
        act_quant=Int8ActPerTensorFloat, bit_width=3, scaling_impl_type="const", max_val=2.0, min_val=-2.0),
    "QuantReLU(bit_width=3, const scale)": lambda: QuantReLU(bit_width=3, scaling_impl_type="const", max_val=3.5),
}
reached = []
for label, make in makers.items():
    first, second = make(), make()
    part = "act_quant.fused_activation_quant_proxy.tensor_quant.int_quant.tensor_clamp_impl"
    calls = []
    handle = first.get_submodule(part).register_forward_hook(lambda *args: calls.append(1))
    second(torch.randn(2, 4))  # only the second layer runs
    handle.remove()
    if calls:
        reached.append(label)
assert not reached, f"a hook on one layer's part runs when another layer runs: {', '.join(reached)}"
print("separately constructed quantizers share no part")
