"""torch.export cannot export snntorch.Leaky(reset_delay=False): forward branches on a tensor buffer.

With reset_delay=False, Leaky.forward picks the reset with `if self.reset_mechanism_val == 0:` (leaky.py L226),
where reset_mechanism_val is a registered tensor buffer: torch.export cannot resolve that data-dependent guard
(torch.export.export raises GuardOnDataDependentSymNode; its message runs over many lines and ends with a hint to
use draft_export, which this script does to list the guards on one line). The correct behaviour: the neuron
exports soundly, as it does with the default reset_delay=True (e.g. by branching on the Python string
`reset_mechanism`). https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/_neurons/leaky.py#L226
"""
import torch
import snntorch

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.5, threshold=0.25, reset_mechanism="zero", reset_delay=False, learn_beta=True)
x = torch.randn(2, 4)
program = torch.export.draft_export(lif, (x, torch.zeros_like(x)))  # torch.export.export(...) raises here
failures = program._report.failures  # what export could not resolve (the report draft_export prints)
where = sorted({f"{f.failure_type.name} at `{f.data['user_stack'][-1]['loc']}`" for f in failures})
assert not failures, f"torch.export: {len(failures)} unresolved guard(s): {where}"
print("Leaky(reset_delay=False) exports")
# expect: DATA_DEPENDENT_ERROR at `if self.reset_mechanism_val == 0:
