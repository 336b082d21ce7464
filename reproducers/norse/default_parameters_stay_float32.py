"""norse modules constructed with their default parameters compute a float64 membrane with float32 parameters.

``LIFCell()`` and ``LIF()`` take ``p=LIFParameters()``, a default argument whose tensors Python makes once, when
norse is imported: at torch's default dtype then, float32 in a program that sets float64 later. ``p`` is not
registered with the module, so ``.double()`` (or ``.to(torch.float64)``) leaves it float32, and the membrane of a
float64 input decays by ``dt * tau_mem_inv`` rounded to float32 (0.1 becomes 0.10000000149): it differs from the
same cell given float64 parameters, and a spike right at the threshold can flip. The correct behaviour: a cell
converted to float64 computes in float64 (or its parameters follow ``.to()``).
https://github.com/norse/norse/blob/main/norse/torch/module/lif.py
"""
# expect: the default cell's float64 membrane differs from a float64 computation
import torch
from norse.torch import LIFCell, LIFParameters

torch.set_default_dtype(torch.float64)  # after the import, as a float64 program sets it
default = LIFCell().double()
exact = LIFCell(LIFParameters(**{name: torch.as_tensor(float(value), dtype=torch.float64)
                                 for name, value in LIFCell().p._asdict().items() if name != "method"},
                              method="super")).double()
x = torch.full((1, 4), 10.0)  # one step of it brings v exactly to v_th = 1: 0.1 * 10 in float64
z_default, state_default = default(x, None)
z_exact, state_exact = exact(x, None)
assert torch.equal(state_default.v, state_exact.v) and torch.equal(z_default, z_exact), \
    (f"the default cell's float64 membrane differs from a float64 computation: v = {float(state_default.v[0, 0])!r} "
     f"against {float(state_exact.v[0, 0])!r}, {int(z_default.sum())} spikes against {int(z_exact.sum())} "
     f"(its v_th is {default.p.v_th.dtype})")
print("the default cell computes in float64")
