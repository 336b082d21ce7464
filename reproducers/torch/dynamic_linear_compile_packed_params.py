"""torch.compile graph-breaks on torch.ao.nn.quantized.dynamic.Linear: "Failed to convert args/kwargs to proxy", so
fullgraph=True compilation fails.

The module's forward calls torch.ops.quantized.linear_dynamic with its packed weight, a TorchScript object
(LinearPackedParamsBase) that dynamo cannot put into a graph ("Missing as_proxy() implementation"). The correct
behaviour: the layer compiles into one graph (the packed weight as a constant or an opaque object), as torch.export
does for opaque objects that declare how they flatten.
https://github.com/pytorch/pytorch/blob/main/torch/ao/nn/quantized/dynamic/modules/linear.py
"""
import torch
import torch._dynamo
from torch._dynamo.utils import counters
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

torch.manual_seed(0)
linear = torch.nn.Linear(4, 3)
linear.qconfig = torch.ao.quantization.default_dynamic_qconfig
layer = DynamicLinear.from_float(linear)
x = torch.randn(2, 4)
counters.clear()
torch.compile(layer, backend="aot_eager")(x)
breaks = {reason.splitlines()[0].strip() for reason in list(counters["graph_break"])}
assert not breaks, f"torch.compile graph breaks in the dynamic Linear: {' | '.join(sorted(breaks))}"
# expect: Failed to convert args/kwargs to proxy
