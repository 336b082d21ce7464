"""torch.export cannot export torch.ao.quantization.FakeQuantize: its forward branches on tensor buffers.

FakeQuantize.forward tests `if self.observer_enabled[0] == 1:` and `if self.fake_quant_enabled[0] == 1:`, where both
flags are registered tensor buffers: torch.export cannot resolve those data-dependent guards (torch.export.export
raises GuardOnDataDependentSymNode over many lines; draft_export, used here, lists the guards on one line). The
correct behaviour: the module exports soundly (the flags are fixed before export, or held as Python bools) and the
exported program computes what the module computes.
https://github.com/pytorch/pytorch/blob/main/torch/ao/quantization/fake_quantize.py
"""
import torch
from torch.ao.quantization import FakeQuantize

x = torch.tensor([[0.3, -1.2, 2.6, 4.0]])
program = torch.export.draft_export(FakeQuantize(), (x,))  # torch.export.export(...) raises here
failures = program._report.failures
where = sorted({f"{f.failure_type.name} on {f.data['expr']}" for f in failures})  # the flag tested == 1
assert not failures, f"torch.export: {len(failures)} unresolved guard(s): {where}"
# expect: DATA_DEPENDENT_ERROR on Eq(u0, 1)
