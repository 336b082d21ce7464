"""norse's neuron modules keep their parameters' tensors (LIFParameters, a NamedTuple) where .double() and .half()
do not reach them: they stay float32.

LIFCell, LIF and LIFBoxCell hold `p`, a NamedTuple of plain tensors, as an attribute: nn.Module's conversions
(.double(), .half(), .to(dtype)) convert parameters and buffers only, so after model.double() the neuron still holds
float32 parameters (and after .half() it computes in float32). The maintainers chose NamedTuples with their own .to
over buffers, noting "the tensors won't be moved if someone applies .to to the module":
https://github.com/norse/norse/pull/106. The correct behaviour: every tensor the module holds follows the conversion.
"""
import torch
from norse.torch import LIF, LIFBoxCell, LIFCell

torch.manual_seed(0)
stayed = []
for make in (LIFCell, LIF, LIFBoxCell):
    module = make().double()
    stayed += [f"{make.__name__}.p.{name} ({value.dtype})" for name, value in module.p._asdict().items()
               if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != torch.float64]
assert not stayed, f"kept their dtype through .double(): {', '.join(stayed)}"
# expect: AssertionError: kept their dtype through .double()
