"""torch.jit.script of a spikingjelly surrogate function module (ATan) fails: SurrogateFunctionBase.forward calls
spiking_function(x, **self._sg_params), and TorchScript has no keyword-argument expansion.

The correct behaviour: torch.jit.script(surrogate.ATan()) returns a scripted module that computes what the eager
one does (or the library documents the surrogate modules as not scriptable).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/surrogate.py
"""
import torch
from spikingjelly.activation_based import surrogate

torch.jit.script(surrogate.ATan(alpha=2.0))
# TorchScript's NotSupportedError ("keyword-arg expansion is not supported") ends with the source lines it points at:
# SurrogateFunctionBase.forward, whose last line expands **self._sg_params again.
# expect: return self.primitive_function(x, **self._sg_params)
