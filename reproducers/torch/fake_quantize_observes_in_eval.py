"""A forward in eval mode changes torch.ao's FakeQuantize and qat.Linear: their observers go on observing.

FakeQuantize.forward runs its observer whenever observer_enabled is set, whatever the module's mode: eval() does not
stop it (the switch is torch.ao.quantization.disable_observer), so validation or inference data move min_val/max_val
and the scale and zero point a QAT model was trained with (Lightning's QAT callback met it:
https://github.com/Lightning-AI/pytorch-lightning/issues/8507). The correct behaviour: a forward in eval mode leaves
the module's state as it is.
https://github.com/pytorch/pytorch/blob/v2.13.0/torch/ao/quantization/fake_quantize.py
"""
# expect: AssertionError: a forward in eval mode changed
import torch
from torch.ao.nn.qat import Linear as QATLinear
from torch.ao.quantization import FakeQuantize, get_default_qat_qconfig

torch.manual_seed(0)
fake_quantize = FakeQuantize()
fake_quantize(torch.randn(8))  # trained: the observer has seen the training data
linear = QATLinear(4, 3, qconfig=get_default_qat_qconfig("x86"))
changed = []
cases = (("FakeQuantize", fake_quantize, 10 * torch.randn(8)),
         ("qat.Linear", linear, torch.randn(2, 4)))
for name, module, x in cases:
    before = {k: v.clone() for k, v in module.state_dict().items()}
    module.eval()
    module(x)
    changed += [f"{name}.{k}" for k, v in module.state_dict().items() if not torch.equal(v, before[k])]
assert not changed, f"a forward in eval mode changed {', '.join(changed)}"
print("eval forwards leave the fake quantizers as they are")
