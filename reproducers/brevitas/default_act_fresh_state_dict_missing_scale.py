"""A brevitas activation quantizer as constructed by default refuses the state_dict of another that has not run yet.

QuantIdentity() and QuantReLU() (Int8ActPerTensorFloat / Uint8ActPerTensorFloat) collect their scale from runtime
statistics (ParameterFromRuntimeStatsScaling); before the first training batch the scale parameter 'value' is not in
the state_dict, but load_state_dict (strict, the default) asks for it: saving a freshly built model and loading it
into another freshly built one raises "Missing key(s) ... scaling_impl.value". Reported upstream as
https://github.com/Xilinx/brevitas/issues/420. The correct behaviour: a module loads the state_dict of another
built the same way.
"""
import torch
from brevitas.nn import QuantIdentity, QuantReLU

torch.manual_seed(0)
for make in (QuantReLU, QuantIdentity):
    make().load_state_dict(make().state_dict())  # raises for the first
print("a freshly built layer loads the state_dict of another")
# expect: RuntimeError: Error(s) in loading state_dict for QuantReLU
