"""A layer whose weight is an integer Parameter (quantized codes, as bitsandbytes' Int8Params and Params4bit hold
them): functional_call lends the codes as they are (scaling codes gives no other layer, only a float tensor the layer
cannot read) and does not count them as lent state the module keeps; torch.func.grad differentiates the floating
parameters only (an integer tensor cannot require a gradient)."""

import pytest
import torch
from torch import nn

from conformance import registry
from conformance.core.types import Cell, Subject
from conformance.runner import run_cell
from qsnn_reference import blockwise


class Int8CodesLinear(nn.Module):
    """``blockwise.linear_int8`` (weight only) with the codes as an int8 Parameter and the row scales as a buffer."""

    def __init__(self, example):
        super().__init__()
        codes, scale = blockwise.quantize_int8_rows(example.params["weight"])
        self.codes = nn.Parameter(codes.to(torch.int8), requires_grad=False)
        self.register_buffer("scale", scale)
        self.bias = nn.Parameter(example.params["bias"].clone().float())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.codes.to(torch.float64) * self.scale.to(torch.float64).unsqueeze(1) / blockwise.INT8_LEVELS
        return nn.functional.linear(x, weight.to(x.dtype), self.bias)


SUBJECT = Subject(id="mutant.int8_codes_parameter", spec="blockwise.linear_int8", build=Int8CodesLinear,
                  library="mutants", fixed={"quantize_input": False}, param_map={"bias": "bias"},
                  dtypes=frozenset({"float32"}))


@pytest.mark.parametrize("transform, check", [("functional_call", "preserves_forward"),
                                              ("functional_call", "preserves_grad"),
                                              ("functional_call", "no_state_leak"),
                                              ("grad", "preserves_grad")])
def test_integer_codes_pass_through_the_functional_transforms(transform, check):
    registry.register(SUBJECT)
    assert run_cell(Cell(SUBJECT.id, "eager", "forward_matches_spec", "cpu", "float32")).outcome == "pass"
    result = run_cell(Cell(SUBJECT.id, transform, check, "cpu", "float32"))
    assert result.outcome == "pass", (result.cause, result.message)
