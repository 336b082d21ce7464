"""Bit packing, unpacking and the XNOR-popcount product against hand-computed words and float matmul."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.core import strategies as S
from qsnn_reference import packing

FAST = settings(max_examples=25, deadline=None)
WORD_DTYPES = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def words_by_hand(signs: list[float], word_bits: int, bit_order: str, pad: float) -> list[int]:
    """Python integers, reinterpreted as two's-complement words of ``word_bits``."""
    padded = signs + [pad] * (-len(signs) % word_bits)
    words = []
    for start in range(0, len(padded), word_bits):
        value = 0
        for j, s in enumerate(padded[start:start + word_bits]):
            position = j if bit_order == "lsb" else word_bits - 1 - j
            value |= int(s > 0) << position
        words.append(value - (1 << word_bits) if value >= 1 << (word_bits - 1) else value)
    return words


def test_pack_known_vectors_lsb_and_msb():
    x = torch.tensor([1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    # lsb: bits 0, 3..7 set = 0b11111001 = 249 -> int8 -7; msb: 0b10011111 = 159 -> int8 -97.
    assert packing.pack_signs(x, word_bits=8, bit_order="lsb").tolist() == [-7]
    assert packing.pack_signs(x, word_bits=8, bit_order="msb").tolist() == [-97]
    y = torch.tensor([1.0, -1.0, 1.0])
    assert packing.pack_signs(y, word_bits=8, pad=-1.0).tolist() == [0b101]
    assert packing.pack_signs(y, word_bits=8, pad=1.0).tolist() == [0b11111101 - 256]
    assert packing.pack_signs(y, word_bits=16, bit_order="msb", pad=-1.0).tolist() == [0b1010000000000000 - 65536]
    assert packing.pack_signs(torch.ones(64), word_bits=64).tolist() == [-1]
    assert packing.pack_signs(torch.ones(32), word_bits=32).dtype == torch.int32


@FAST
@given(data=st.data(), word_bits=st.sampled_from([8, 16, 32, 64]), bit_order=st.sampled_from(["lsb", "msb"]),
       pad=st.sampled_from([-1.0, 1.0]), length=st.integers(1, 70), dim=st.sampled_from([0, 1, -1, -2]))
def test_pack_unpack_round_trip_and_words_by_hand(data, word_bits, bit_order, pad, length, dim):
    other = data.draw(st.integers(1, 3))
    x = data.draw(S.signs((length, other) if dim in (0, -2) else (other, length)))
    packed = packing.pack_signs(x, dim=dim, word_bits=word_bits, bit_order=bit_order, pad=pad)
    assert packed.dtype == WORD_DTYPES[word_bits]
    assert packed.shape[dim] == -(-length // word_bits)
    rows = x.movedim(dim, -1).tolist()
    assert packed.movedim(dim, -1).tolist() == [words_by_hand(r, word_bits, bit_order, pad) for r in rows]
    back = packing.unpack_signs(packed, dim=dim, length=length, bit_order=bit_order, dtype=torch.float64)
    assert torch.equal(back, x)
    full = packing.unpack_signs(packed, dim=dim, bit_order=bit_order, dtype=torch.float64)
    assert full.shape[dim] == packed.shape[dim] * word_bits
    assert (full.movedim(dim, -1)[..., length:] == pad).all()


def test_zero_packs_as_minus_one():
    assert packing.pack_signs(torch.tensor([0.0, 2.0, -3.0, 0.5]), word_bits=8, pad=-1.0).tolist() == [0b1010]


@FAST
@given(data=st.data(), word_bits=st.sampled_from([8, 16, 32, 64]), bit_order=st.sampled_from(["lsb", "msb"]),
       k=st.integers(1, 70), pads=st.tuples(st.sampled_from([-1.0, 1.0]), st.sampled_from([-1.0, 1.0])))
def test_xnor_popcount_matmul_equals_float_matmul_of_signs(data, word_bits, bit_order, k, pads):
    a = data.draw(S.signs((data.draw(st.integers(1, 3)), k)))
    b = data.draw(S.signs((data.draw(st.integers(1, 3)), k)))
    pa = packing.pack_signs(a, word_bits=word_bits, bit_order=bit_order, pad=pads[0])
    pb = packing.pack_signs(b, word_bits=word_bits, bit_order=bit_order, pad=pads[1])
    out = packing.xnor_popcount_matmul(pa, pb, k=k, bit_order=bit_order)
    assert out.dtype == torch.int64
    assert torch.equal(out, (a @ b.T).to(torch.int64))


@FAST
@given(data=st.data(), word_bits=st.sampled_from([8, 16, 32, 64]), bit_order=st.sampled_from(["lsb", "msb"]),
       zero_value=st.sampled_from([-1.0, 1.0]))
def test_binary_matmul_exact_with_identity_ste(data, word_bits, bit_order, zero_value):
    k = data.draw(st.sampled_from([1, 7, 9, 33, 65]) | st.integers(1, 40))
    x = data.draw(S.tensors((2, 3, k), min_value=-1e4, max_value=1e4))
    w = data.draw(S.tensors((data.draw(st.integers(1, 3)), k)))
    x[0, 0, 0] = 0.0
    sign = lambda t: torch.where(t > 0, 1.0, torch.where(t < 0, -1.0, zero_value)).double()
    xs, ws = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    y = packing.binary_matmul(xs, ws, zero_value=zero_value, word_bits=word_bits, bit_order=bit_order)
    assert torch.equal(y.detach(), sign(x) @ sign(w).T)
    g = torch.linspace(-1, 2, y.numel(), dtype=torch.float64).reshape(y.shape)
    gx, gw = torch.autograd.grad(y, (xs, ws), g)
    torch.testing.assert_close(gx, g @ sign(w))
    torch.testing.assert_close(gw, torch.einsum("btn,btk->nk", g, sign(x)))


BAD_CALLS = [
    ("word_bits", lambda: packing.pack_signs(torch.ones(8), word_bits=12)),
    ("bit_order", lambda: packing.pack_signs(torch.ones(8), word_bits=8, bit_order="big")),
    ("pad", lambda: packing.pack_signs(torch.ones(8), word_bits=8, pad=0.0)),
    ("word_bits", lambda: packing.pack_signs(torch.ones(9), word_bits=8)),  # not divisible, pad=None
    ("dim", lambda: packing.pack_signs(torch.ones(8), word_bits=8, dim=1)),
    ("length", lambda: packing.unpack_signs(torch.zeros(1, dtype=torch.int8), length=9)),
    ("packed", lambda: packing.unpack_signs(torch.zeros(1, dtype=torch.uint8))),
    ("k", lambda: packing.xnor_popcount_matmul(torch.zeros(1, 2, dtype=torch.int8), torch.zeros(1, 2, dtype=torch.int8), k=8)),
    ("b_packed", lambda: packing.xnor_popcount_matmul(torch.zeros(1, 2, dtype=torch.int8), torch.zeros(1, 2, dtype=torch.int16), k=9)),
    ("zero_value", lambda: packing.binary_matmul(torch.ones(1, 3), torch.ones(2, 3), zero_value=0.0)),
    ("w", lambda: packing.binary_matmul(torch.ones(1, 3), torch.ones(2, 4))),
]


@pytest.mark.parametrize("name, call", BAD_CALLS, ids=[f"{i}-{name}" for i, (name, _) in enumerate(BAD_CALLS)])
def test_bad_parameter_raises_value_error_naming_it(name, call):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("word_bits", [8, 16, 32, 64])
def test_edge_examples_cross_word_boundaries_and_match_by_hand(word_bits):
    """The packing specs' edge examples (checked first in every cell) span 2-3 words, with and without a tail, in
    both bit orders and paddings; the spec matches the words computed by hand and the float product on them."""
    from conformance.specs.quant import binary_matmul_edges, pack_signs_edges

    examples = pack_signs_edges(word_bits=word_bits)
    assert {e.hyper["bit_order"] for e in examples} == {"lsb", "msb"} and {e.hyper["pad"] for e in examples} == {-1, 1}
    lengths = [e.x.shape[e.hyper["dim"]] for e in examples]
    assert lengths == [2 * word_bits + 5, 3 * word_bits]
    for e in examples:
        rows = e.x.movedim(e.hyper["dim"], -1).reshape(-1, e.x.shape[e.hyper["dim"]]).tolist()
        packed = packing.pack_signs(e.x, **e.hyper).movedim(e.hyper["dim"], -1)
        assert packed.reshape(len(rows), -1).tolist() == [
            words_by_hand(r, word_bits, e.hyper["bit_order"], e.hyper["pad"]) for r in rows]
    for e in binary_matmul_edges(word_bits=word_bits):
        assert e.x.shape[-1] > word_bits and (e.x == 0).any() and e.x.abs().max() >= 1e4
        zero = e.hyper["zero_value"]
        signs = lambda t: torch.where(t == 0, zero, torch.sign(t))  # noqa: E731
        assert torch.equal(packing.binary_matmul(e.x, e.params["w"], **e.hyper), signs(e.x) @ signs(e.params["w"]).T)
