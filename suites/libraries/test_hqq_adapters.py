"""The HQQ adapters, and what the matrix's spec cannot judge of HQQ's default layer (its optimizer on, any weight): the
codes lie in the ``nbits`` range, the scale is the min/max rule's (the optimizer moves only the zero), the layer
dequantizes as ``(W_q - zero) * scale`` with its own stored meta and computes ``x @ W.T + bias`` with that weight.
The 4-bit packing's odd group count, which the matrix's examples avoid, is a strict xfail. Tests that build a layer
skip where hqq is not installed."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import registry
from conformance.subjects import hqq as hqq_adapters
from qsnn_reference import halfquadratic

needs_hqq = pytest.mark.skipif(importlib.util.find_spec("hqq") is None, reason="hqq is not installed")
FAST = settings(max_examples=10, deadline=None)


def test_subjects_are_declared_without_importing_the_library():
    subjects = list(hqq_adapters.subjects())
    assert {s.library for s in subjects} == {"hqq"} and all(s.requires == ("hqq",) for s in subjects)
    for subject in subjects:
        registry.specs()[subject.spec].examples(**subject.fixed)  # raises on a misspelt hyperparameter


def default_layer(weight: torch.Tensor, nbits: int):
    """The README's HQQLinear (its optimizer on) of a float32 Linear holding ``weight`` and a zero bias."""
    from hqq.core.quantize import BaseQuantizeConfig, HQQLinear

    linear = torch.nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        linear.weight.copy_(weight)
        linear.bias.zero_()
    return HQQLinear(linear, quant_config=BaseQuantizeConfig(nbits=nbits, group_size=hqq_adapters.GROUP_SIZE),
                     compute_dtype=torch.float32, device="cpu")


@needs_hqq
@FAST
@given(st.integers(0, 2**16), st.sampled_from([4, 8]), st.integers(1, 2))
def test_the_optimized_layer_keeps_codes_in_range_the_minmax_scale_and_its_own_dequantization(seed, nbits, rows):
    weight = torch.randn(2 * rows, 2 * hqq_adapters.GROUP_SIZE, generator=torch.Generator().manual_seed(seed))
    layer = default_layer(weight, nbits)
    groups = weight.numel() // hqq_adapters.GROUP_SIZE
    codes = layer.unpack(dtype=torch.float32)[:groups]
    assert codes.min() >= 0 and codes.max() <= 2 ** nbits - 1 and torch.equal(codes, codes.round())
    _, scale, _ = halfquadratic.quantize_weight(weight, nbits=nbits, group_size=hqq_adapters.GROUP_SIZE,
                                                round_zero=nbits == 4)
    assert torch.equal(layer.meta["scale"], scale)
    stored = halfquadratic.dequantize_weight(codes, layer.meta["scale"], layer.meta["zero"], shape=tuple(weight.shape))
    assert torch.equal(layer.dequantize(), stored)
    x = torch.randn(3, weight.shape[1], generator=torch.Generator().manual_seed(seed + 1))
    assert torch.equal(layer(x), torch.matmul(x, stored.t()) + layer.bias)


@needs_hqq
@pytest.mark.xfail(strict=True, raises=RuntimeError,
                   reason="hqq packs 4-bit codes two groups to a byte, the first half of the groups with the second "
                          "(BitPack.pack_4bit_u8): with an odd number of groups it raises (shape mismatch), when built "
                          "or when called")
@pytest.mark.parametrize("out_features", [1, 3])
def test_a_4bit_layer_with_an_odd_number_of_groups_computes(out_features):
    layer = default_layer(torch.randn(out_features, hqq_adapters.GROUP_SIZE), 4)
    x = torch.randn(2, hqq_adapters.GROUP_SIZE)
    assert torch.equal(layer(x), torch.matmul(x, layer.dequantize().t()) + layer.bias)
