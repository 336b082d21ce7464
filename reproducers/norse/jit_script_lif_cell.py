"""torch.jit.script of a norse LIFCell fails: its forward calls functions stored as module attributes.

``SNNCell.forward`` (LIFCell, LIFBoxCell) calls ``self.state_fallback`` (a bound method) and ``self.activation`` (a
Python function that reaches autograd.Functions such as SuperSpike), which TorchScript cannot compile. Correct:
the scripted module computes what the eager one does.
https://github.com/norse/norse/blob/main/norse/torch/module/snn.py
"""
import torch
from norse.torch import LIFCell, LIFParameters

t = lambda v: torch.tensor(float(v))  # noqa: E731
cell = LIFCell(LIFParameters(tau_syn_inv=t(100), tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0),
                             method="super", alpha=t(1.0)), dt=0.001)
# expect: return self.activation_sparse(input_tensor, state, self.p, self.dt)
scripted = torch.jit.script(cell)
