"""The blockwise weight quantization specs (NF4 / FP4 blocks, double quantization, LLM.int8 rows) against closed forms
written here with Python numbers (``struct`` rounds to float32, ``round`` is half to even) and the published tables."""

from __future__ import annotations

import struct

import pytest
import torch

from qsnn_reference import blockwise


def f32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


#: QLoRA's NF4 table (appendix E), as printed.
QLORA_NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
             -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
             0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023,
             1.0]


def sorted_code(quant_type: str) -> list[float]:
    return sorted(blockwise.code_book(quant_type).tolist())


# ----------------------------------------------------------------------------------------------- code books

def test_nf4_code_book_is_qloras_table_in_float32():
    assert blockwise.code_book("nf4").tolist() == [f32(v) for v in QLORA_NF4]


def test_fp4_code_book_is_sign_two_exponent_one_mantissa_bits_over_twelve():
    # bit patterns 0b000..0b111: 0, subnormal 0.0625, then 2**(e - 2) * (1 + m / 2) * 4 with e in 1..3, over 12
    magnitudes = [0.0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0]
    expected = [f32(m / 12) for m in magnitudes] + [-f32(m / 12) for m in magnitudes]
    assert blockwise.code_book("fp4").tolist() == expected
    assert blockwise.code_book("fp4")[3] == 1.0 and blockwise.code_book("fp4")[11] == -1.0


def test_dynamic_code_is_256_sorted_values_with_zero_one_and_decades():
    code = blockwise.dynamic_code().tolist()
    assert len(code) == 256 and code == sorted(code) and len(set(code)) == 256
    assert code[127] == 0.0 and code[255] == 1.0  # 127 negative values, 0, 127 positive values, 1
    # the smallest magnitudes: decade 10**-6, the midpoint of linspace(0.1, 1, 2) = 0.55
    assert code[126] == pytest.approx(-0.55e-6, rel=1e-6) and code[128] == pytest.approx(0.55e-6, rel=1e-6)
    # no -1: the most negative is the last midpoint of linspace(0.1, 1, 65): (0.9859375 + 1) / 2
    assert code[0] == f32(-0.99296875)
    assert code[254] == f32(0.99296875)


# ----------------------------------------------------------------------------------------------- 4-bit blocks

@pytest.mark.parametrize("quant_type", blockwise.QUANT_TYPES)
def test_a_midpoint_between_codes_takes_the_lower_code(quant_type):
    values = sorted_code(quant_type)
    ties = [f32((a + b) / 2) for a, b in zip(values, values[1:])]
    weight = torch.tensor([1.0] + ties + [-1.0], dtype=torch.float32)  # absmax 1: scaled values are the weights
    codes, absmax = blockwise.quantize_4bit(weight, quant_type=quant_type)
    got = blockwise.code_book(quant_type)[codes].tolist()
    assert absmax.tolist() == [1.0]
    assert got == [1.0] + values[:-1] + [-1.0]


@pytest.mark.parametrize("quant_type", blockwise.QUANT_TYPES)
def test_just_past_a_midpoint_takes_the_upper_code(quant_type):
    values = sorted_code(quant_type)
    past = [float(torch.nextafter(torch.tensor(f32((a + b) / 2)), torch.tensor(2.0))) for a, b in
            zip(values, values[1:]) if a != b]
    codes, _ = blockwise.quantize_4bit(torch.tensor([1.0] + past), quant_type=quant_type)
    upper = [b for a, b in zip(values, values[1:]) if a != b]
    assert blockwise.code_book(quant_type)[codes].tolist() == [1.0] + upper


def test_block_whose_absmax_is_one_element_maps_it_to_one_and_small_ones_to_zero():
    weight = torch.zeros(64)
    weight[10], weight[11], weight[12] = -3.0, 1e-3, 0.2
    codes, absmax = blockwise.quantize_4bit(weight, quant_type="nf4")
    values = blockwise.code_book("nf4")[codes]
    assert absmax.tolist() == [3.0]
    assert values[10] == -1.0 and values[11] == 0.0
    # 0.2 / 3 = 0.0667 lies between 0 and 0.0796 (midpoint 0.0398): the code 0.0796
    assert values[12] == f32(0.07958029955625534)
    assert blockwise.dequantize_4bit(codes, absmax, quant_type="nf4")[10] == -3.0


@pytest.mark.parametrize("quant_type", blockwise.QUANT_TYPES)
def test_zero_block_has_absmax_zero_and_dequantizes_to_zero(quant_type):
    weight = torch.cat([torch.zeros(64), torch.full((64,), 0.5)])
    codes, absmax = blockwise.quantize_4bit(weight, quant_type=quant_type)
    assert absmax.tolist() == [0.0, 0.5]
    assert blockwise.code_book(quant_type)[codes[:64]].abs().max() == 0.0
    assert blockwise.dequantize_4bit(codes, absmax, quant_type=quant_type).tolist() == [0.0] * 64 + [0.5] * 64


def test_tail_block_shorter_than_blocksize_has_its_own_absmax():
    weight = torch.cat([torch.full((64,), 2.0), torch.tensor([0.25, -0.125, 0.0, 0.0, 0.0, 0.0])]).reshape(7, 10)
    codes, absmax = blockwise.quantize_4bit(weight, quant_type="nf4")
    assert codes.shape == (7, 10) and absmax.tolist() == [2.0, 0.25]
    dequantized = blockwise.dequantize_4bit(codes, absmax, quant_type="nf4").reshape(-1)
    # -0.125 / 0.25 = -0.5: between -0.5251 and -0.3949, nearer -0.5251
    assert dequantized[64:].tolist() == [0.25, f32(f32(-0.5250730514526367) * 0.25), 0.0, 0.0, 0.0, 0.0]


def test_blocks_run_over_the_flattened_rows():
    weight = torch.zeros(3, 48)  # blocks of 64: rows 0 and the first 16 of row 1, then the rest
    weight[1, 15], weight[1, 16] = 4.0, 0.5
    _, absmax = blockwise.quantize_4bit(weight, quant_type="fp4")
    # the zero tail block keeps bitsandbytes' lower bound 1e-38 as its absmax (a full zero block keeps 0)
    assert absmax.tolist() == [4.0, 0.5, f32(1e-38)]


def test_scaled_value_is_a_float32_reciprocal_product_in_full_blocks():
    absmax = 3.0
    inverse = f32(1.0 / absmax)
    weight = torch.tensor([absmax] + [f32(0.7 * k / 63) for k in range(63)], dtype=torch.float32)
    _, scaled = blockwise._blocks(weight, 64)
    assert scaled.tolist() == [min(max(f32(v * inverse), -1.0), 1.0) for v in weight.tolist()]


# ----------------------------------------------------------------------------------------------- double quantization

def test_double_quantization_subtracts_the_mean_and_quantizes_the_differences():
    # mean 2, differences -1 and 1, their absmax 1: 1 is a code, -1 is not (the most negative is -0.99296875)
    got = blockwise.double_quantized_absmax(torch.tensor([1.0, 3.0]))
    assert got.tolist() == [f32(f32(-0.99296875) + 2.0), 3.0]


def test_double_quantization_of_equal_absmax_is_exact():
    # every difference is 0: the block's absmax is 0, codes 0, and the mean comes back exactly
    assert blockwise.double_quantized_absmax(torch.full((5,), 0.75)).tolist() == [0.75] * 5


def lookup_code(v: float, absmax: float) -> float:
    """The 8-bit CPU rule written out: the lookup bin of v / absmax, then the code nearest the bin's centre."""
    code = blockwise.dynamic_code().tolist()
    s = min(max(f32(v * f32(1.0 / absmax)), -1.0), 1.0)
    i = int(f32(f32(f32(f32(s + 1.0) * 0.5) * 65535.0) + 0.5))
    centre = f32(-1.0 + f32(f32(2.0 * i) / 65535.0))
    midpoints = [f32((a + b) / 2) for a, b in zip(code, code[1:])]
    return code[sum(m < centre for m in midpoints)]


def test_8bit_codes_follow_the_lookup_table_rule():
    values = torch.tensor([1.0, -1.0, 0.5, -0.3, 0.0123, -4e-6, 0.996484375, 0.99648, 0.9965, 0.0])
    codes, absmax = blockwise.quantize_8bit_blockwise(values)
    got = blockwise.dynamic_code()[codes].tolist()
    assert absmax.tolist() == [1.0]
    assert got == [lookup_code(v, 1.0) for v in values.tolist()]


def test_8bit_value_within_half_a_bin_of_a_midpoint_takes_the_bins_code():
    code = blockwise.dynamic_code().tolist()
    midpoint = f32((code[254] + code[255]) / 2)  # 0.9964844
    below = float(torch.nextafter(torch.tensor(midpoint), torch.tensor(-2.0)))
    # nearer 0.99296875 than 1.0, but its bin (65420) is centred at 0.9964905, above the midpoint: the upper code
    assert int(f32(f32(f32(f32(below + 1.0) * 0.5) * 65535.0) + 0.5)) == 65420
    codes, _ = blockwise.quantize_8bit_blockwise(torch.tensor([1.0, below]))
    assert codes.tolist() == [255, 255]
    assert lookup_code(below, 1.0) == code[255]


def test_8bit_tail_block_and_zero_block():
    values = torch.cat([torch.zeros(256), torch.tensor([0.5, -0.25])])
    codes, absmax = blockwise.quantize_8bit_blockwise(values)
    assert absmax.tolist() == [0.0, 0.5]
    assert codes[:256].tolist() == [0] * 256  # code 0 (the most negative value) times absmax 0
    assert blockwise.dequantize_8bit_blockwise(codes, absmax)[:256].abs().max() == 0.0
    assert blockwise.dequantize_8bit_blockwise(codes, absmax)[256].item() == 0.5


# ----------------------------------------------------------------------------------------------- LLM.int8 rows

def test_int8_rows_round_half_to_even_after_float16():
    rows = torch.tensor([[2.0, 1.0, -0.5, 0.0], [254.0, 1.0, 3.0, -5.0], [1.0001, 0.5, 0.0, 0.0],
                         [0.0, 0.0, 0.0, 0.0]])
    codes, absmax = blockwise.quantize_int8_rows(rows)
    # 127 / 2 = 63.5 -> 64 (even); 127 / 254 = 0.5: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2; 1.0001 is 1.0 in float16
    assert absmax.tolist() == [2.0, 254.0, 1.0, 0.0]
    assert codes.tolist() == [[127, 64, -32, 0], [127, 0, 2, -2], [127, 64, 0, 0], [0, 0, 0, 0]]


def test_int8_scale_is_the_float32_reciprocal_times_127():
    # torch computes 127.0 / row_absmax as reciprocal(row_absmax) * 127: for absmax 1.01171875 that is 125.52509 (not
    # 125.52510), and 0.505859375 (exactly half the absmax) lands just below 63.5: code 63, where 127 / absmax gives 64
    assert f32(f32(1.0 / 1.01171875) * 127) != f32(127 / 1.01171875)
    codes, _ = blockwise.quantize_int8_rows(torch.tensor([[1.01171875, 0.505859375]]))
    assert codes.tolist() == [[127, 63]]


def test_linear_int8_closed_forms_with_and_without_the_quantized_input():
    weight = torch.tensor([[2.0, 1.0, -0.5, 0.0]], dtype=torch.float64)
    x = torch.tensor([[1.0, -2.0, 4.0, 0.5]], dtype=torch.float64, requires_grad=True)
    bias = torch.tensor([0.25], dtype=torch.float64)
    w = [c * 2.0 / 127 for c in (127, 64, -32, 0)]
    plain = blockwise.linear_int8(x, weight, bias, quantize_input=False)
    assert plain.item() == pytest.approx(1.0 * w[0] - 2.0 * w[1] + 4.0 * w[2] + 0.25, rel=1e-12)
    # the input's codes: absmax 4, 127 / 4 = 31.75: [31.75 -> 32, -63.5 -> -64, 127, 15.875 -> 16]
    product = 32 * 127 + (-64) * 64 + 127 * (-32) + 16 * 0
    quantized = blockwise.linear_int8(x, weight, bias, quantize_input=True)
    assert quantized.item() == pytest.approx(product * 4.0 * 2.0 / 127**2 + 0.25, rel=1e-12)
    quantized.backward()
    assert x.grad[0].tolist() == pytest.approx(w, rel=1e-12)  # dL/dx: the dequantized weight, both ways


@pytest.mark.parametrize("compress", [False, True])
def test_linear_4bit_gradient_is_the_dequantized_weight_and_none_for_the_weight(compress):
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn((3, 70), generator=gen, dtype=torch.float64).requires_grad_(True)
    x = torch.randn((2, 70), generator=gen, dtype=torch.float64, requires_grad=True)
    y = blockwise.linear_4bit(x, weight, None, quant_type="nf4", compress_statistics=compress)
    w = blockwise.dequantized_weight_4bit(weight.detach().float(), quant_type="nf4", compress_statistics=compress)
    assert torch.equal(y.detach(), x.detach() @ w.double().T)
    grad_x, grad_w = torch.autograd.grad(y.sum(), (x, weight), allow_unused=True)
    assert torch.equal(grad_x, torch.ones(2, 3, dtype=torch.float64) @ w.double())
    assert grad_w is None


def test_float16_values_are_the_float16_cast_written_out():
    # ties to even at 11 significant bits (2049 -> 2048, 2051 -> 2052), subnormal steps of 2**-24, overflow past 65520
    values = [2049.0, 2051.0, 1.0001, 2.0**-24, 3 * 2.0**-26, 2.0**-25, 65504.0, 65519.0, 65520.0, -0.0, -3.14159]
    got = blockwise.float16_values(torch.tensor(values)).tolist()
    assert got == torch.tensor(values).to(torch.float16).to(torch.float32).tolist()
    assert got[:2] == [2048.0, 2052.0] and got[8] == float("inf")
