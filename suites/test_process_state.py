"""A cell's cause does not depend on the cells that ran before it in the same process (TorchScript's per-class
type store, issue 40): the real error of a module that cannot be scripted is reported every time."""

import torch
from torch import nn

from conformance import registry
from conformance.core.types import Cell, Subject
from conformance.runner import run_cell

REAL_ERROR = "has no attribute 'qmin'"


class ScriptedWithoutQmin(nn.Module):
    """Cannot be scripted: its forward reads an attribute it never sets (what TorchScript says is the message)."""

    def forward(self, x):
        return x.clamp(min=self.qmin)


def _subjects(*names: str) -> list[str]:
    for name in names:
        registry.register(Subject(id=f"process_state.{name}", spec="quant.sign_ste", library="framework",
                                  build=lambda example: ScriptedWithoutQmin(), fixed={"zero_value": 1.0}))
    return [f"process_state.{name}" for name in names]


def _messages(subject_ids, check: str) -> list[tuple[str, str]]:
    found = []
    for sid in subject_ids:
        result = run_cell(Cell(sid, "jit_script", check))
        found.append((result.cause, result.message.strip()))
    return found


def test_a_class_that_failed_to_script_before_reports_its_real_error_again():
    first, second = _messages(_subjects("first", "second"), "preserves_forward")
    assert first[0] == second[0] == "jit-unsupported", (first, second)
    assert REAL_ERROR in first[1] and REAL_ERROR in second[1], (first, second)


def test_causes_and_messages_are_the_same_in_either_order():
    a, b = _subjects("order_a", "order_b")
    forward = _messages([a, b], "preserves_grad")
    backward = _messages([b, a], "preserves_grad")
    assert forward == backward[::-1] and forward[0] == forward[1], (forward, backward)
    assert REAL_ERROR in forward[0][1]


def test_a_scriptable_module_scripts_after_a_failure_of_its_class():
    """Forgetting the failed types does not break a later, scriptable instance of another class."""
    _messages(_subjects("before_good"), "preserves_forward")
    assert torch.jit.script(nn.Linear(2, 2))(torch.ones(1, 2)).shape == (1, 2)
