"""torch.jit.script fails on every bitorch quantization (and so on QActivation): the deprecated 'bitwidth' property.

Quantization (the base of Sign, ApproxSign, SwishSign, InputDoReFa, WeightDoReFa, SteHeaviside) has a deprecated
property 'bitwidth' that calls warn(..., DeprecationWarning, stacklevel=2); TorchScript compiles a module's
properties and cannot script that call ("Python exception cannot be used as a value"), so scripting QActivation,
a quantization, or a layer or model holding one fails. The correct behaviour: torch.jit.script(module) returns a
ScriptModule that computes what the module computes (e.g. by listing 'bitwidth' in __jit_unused_properties__).
https://github.com/hpi-xnor/bitorch/blob/v0.4.1/bitorch/quantizations/base.py
"""
# TorchScript's error spans several lines ("Python exception cannot be used as a value:", then the source it
# could not compile), so the traceback ends with that source line: Quantization.bitwidth's return.
# expect: return self.bit_width
import torch
from bitorch.layers import QActivation
from bitorch.quantizations import Sign

torch.manual_seed(0)
layer = QActivation(Sign(), gradient_cancellation_threshold=1.0)
scripted = torch.jit.script(layer)  # raises
x = torch.randn(3, 4)
assert torch.equal(scripted(x), layer(x)), "the scripted QActivation computes something else"
print("QActivation scripts")
