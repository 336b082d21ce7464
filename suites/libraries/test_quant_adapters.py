"""Unit tests of the bitorch and brevitas adapters: conventions mapped onto the specs, parameter loading, lazy imports.

Each test states one property of an adapter (not of the library); tests skip when their library is absent.
"""

from __future__ import annotations

import pytest
import torch

from conformance.core.types import Example
from conformance.subjects import bitorch as bitorch_adapters
from conformance.subjects import brevitas as brevitas_adapters
from qsnn_reference import binary, quant


def conv_example(*, pad_value: float, padding: int = 1) -> Example:
    x = torch.tensor([[[[0.5, -1.5, 0.0], [2.0, -0.25, 0.75], [-3.0, 0.1, 1.2]]]], dtype=torch.float64)
    weight = torch.tensor([[[[0.3, -0.7], [1.1, -0.2]]], [[[-0.4, 0.9], [0.6, 0.5]]]], dtype=torch.float64)
    hyper = dict(stride=1, padding=padding, dilation=1, groups=1, pad_value=pad_value, input_quant="clipped_ste",
                 threshold=1.0, zero_value=1.0, weight_scaling="none")
    return Example(x, {"weight": weight, "bias": torch.tensor([0.25, -0.5], dtype=torch.float64)}, hyper)


@pytest.mark.parametrize("adapters, library", [(bitorch_adapters, "bitorch"), (brevitas_adapters, "brevitas")])
def test_subjects_are_declared_without_importing_the_library(adapters, library):
    subjects = list(adapters.subjects())
    assert {s.library for s in subjects} == {library}
    assert all(s.requires == (library,) for s in subjects)
    assert len({s.id for s in subjects}) == len(subjects)
    assert all(s.id.startswith(f"{library}.") for s in subjects)


def test_declared_fixed_hyperparameters_are_the_specs_own():
    from conformance import registry

    for subject in (*bitorch_adapters.subjects(), *brevitas_adapters.subjects()):
        registry.specs()[subject.spec].examples(**subject.fixed)  # raises on a misspelt hyperparameter


def test_bitorch_qconv2d_pads_the_binarized_input_with_pad_value():
    pytest.importorskip("bitorch")
    for pad_value in (-1.0, 1.0):
        example = conv_example(pad_value=pad_value)
        module = bitorch_adapters.build_qconv2d(example)
        expected = binary.binary_conv2d(example.x.float(), example.params["weight"].float(),
                                        **{k: v for k, v in example.hyper.items()})
        torch.testing.assert_close(module(example.x.float()), expected)


def test_bitorch_qconv2d_loads_the_example_weight():
    pytest.importorskip("bitorch")
    example = conv_example(pad_value=-1.0)
    module = bitorch_adapters.build_qconv2d(example)
    torch.testing.assert_close(module.get_parameter("weight").double(), example.params["weight"])


def test_bitorch_qactivation_sign_maps_zero_to_plus_one():
    pytest.importorskip("bitorch")
    example = Example(torch.tensor([[-2.0, 0.0, 0.5]]), {}, {"zero_value": 1.0})
    module = bitorch_adapters._qactivation("sign", False)(example)
    torch.testing.assert_close(module(example.x), quant.sign_ste(example.x, zero_value=1.0))


def test_bitorch_lenet_builds_the_same_weights_every_time():
    pytest.importorskip("bitorch")
    example = Example(torch.zeros(2, 1, 28, 28), {}, {})
    first, second = bitorch_adapters.build_lenet(example), bitorch_adapters.build_lenet(example)
    assert not first.training
    for (name, a), (_, b) in zip(first.named_parameters(), second.named_parameters()):
        assert torch.equal(a, b), name


def test_brevitas_int_activation_scale_is_the_specs():
    pytest.importorskip("brevitas")
    hyper = dict(scale=0.5, zero_point=0, bits=3, signed=True, narrow_range=False, rounding="half_even",
                 channel_dim=None)
    x = torch.tensor([[-3.0, -0.6, 0.2, 0.8, 1.4, 2.6]])
    module = brevitas_adapters.build_identity_int(Example(x.double(), {}, hyper))
    torch.testing.assert_close(module(x), quant.uniform_quantize(x, **hyper))


def test_brevitas_binary_linear_uses_unscaled_signs_of_the_loaded_weight():
    pytest.importorskip("brevitas")
    weight = torch.tensor([[0.3, -0.7, 0.05], [-1.1, 0.2, 0.4]], dtype=torch.float64)
    example = Example(torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64),
                      {"weight": weight, "bias": torch.tensor([0.1, -0.2], dtype=torch.float64)}, {})
    module = brevitas_adapters.build_linear_binary(example)
    torch.testing.assert_close(module.quant_weight().value.double(), torch.sign(weight))
    expected = binary.binary_linear(example.x.float(), weight.float(), example.params["bias"].float(),
                                    input_quant="none")
    torch.testing.assert_close(module(example.x.float()), expected)


def test_bitorch_builds_leave_no_layer_in_bitorchs_registries():
    pytest.importorskip("bitorch")
    from bitorch.layers.register import all_layer_registries

    bitorch_adapters.build_qconv2d(conv_example(pad_value=-1.0))
    bitorch_adapters.build_lenet(Example(torch.zeros(1, 1, 28, 28), {}, {}))
    assert all(not registry.layer_instances for registry in all_layer_registries())
