"""torch.jit.script of a spikingjelly neuron fails: MemoryModule.forward(self, *args, **kwargs) takes variable
arguments, which TorchScript cannot compile.

The correct behaviour: torch.jit.script(node) returns a scripted module that computes what the eager node computes
(or the library documents the neurons as not scriptable).
https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based/base.py
"""
import torch
from spikingjelly.activation_based import neuron, surrogate

node = neuron.IFNode(v_threshold=0.25, v_reset=None, surrogate_function=surrogate.Sigmoid(alpha=4.0),
                     detach_reset=False, step_mode="m")
torch.jit.script(node)
# TorchScript's NotSupportedError ("Compiled functions can't take variable number of arguments ...") ends with the
# source lines it points at: the signature of MemoryModule.forward, then the first lines of its docstring.
# expect: <MemoryModule.forward-en>
