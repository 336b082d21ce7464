"""signlib checked by the conformance kit: every cell of its layers under the transforms its users rely on.

Run with plain ``pytest`` (the kit's plugin registers itself when qsnn-conformance is installed).
"""

from conformance.api import Known, check_cell, parametrize_with_checks, subject

#: signlib's subjects, as its package publishes them (the ``conformance.subjects`` entry point in pyproject.toml).
SUBJECTS = [subject("signlib.SignSTE"), subject("signlib.LIF"), subject("signlib.MultiStepLIF")]

#: What signlib knows to be broken: each entry with its reason and a standalone reproducer.
KNOWN = {
    "signlib.SignSTE": [
        Known("vmap", cause="autograd-function-without-setup_context",
              reason="_SignFunction is an old-style autograd.Function (forward(ctx, x), no setup_context), which "
                     "torch.func transforms refuse",
              reproducer="reproducers/sign_ste_vmap.py"),
    ],
}


@parametrize_with_checks(SUBJECTS, transforms=["eager", "vmap"], known=KNOWN)
def test_conformance(cell, record_cell):
    check_cell(cell, record=record_cell)
