"""torch.jit.script of norse's LIF (the sequence module) fails: its forward calls functions stored as attributes.

``SNN.forward`` calls ``self.state_fallback`` (a bound method) and ``self.activation`` (a Python function that
reaches autograd.Functions such as Triangle), which TorchScript cannot compile. Correct: the scripted module
computes what the eager one does.
https://github.com/norse/norse/blob/main/norse/torch/module/snn.py
"""
import torch
from norse.torch import LIF, LIFParameters

t = lambda v: torch.tensor(float(v))  # noqa: E731
layer = LIF(LIFParameters(tau_syn_inv=t(100), tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0),
                          method="triangle", alpha=t(1.0)), dt=0.001)
# expect: T = input_tensor.shape[0]
scripted = torch.jit.script(layer)
