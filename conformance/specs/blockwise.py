"""Spec declarations for weight quantization by blocks (``qsnn_reference/blockwise.py``): bitsandbytes' 4-bit layers
(NF4 / FP4 codes, blocks of 64, the absmax double-quantized or not) and its LLM.int8 layer (row-wise int8 codes).

A layer's weight (N, K), bias (N,) and input x (B, K) come from one drawn seed; K is drawn from sizes that put
block edges inside rows and leave a tail block shorter than 64 (6, 48, 70) or fill whole blocks (64), N from 1 to 3.
K is even: for an odd K bitsandbytes' CPU backend dequantizes through a ``torch.compile``d function, which compiles
anew for every shape (tens of seconds each on two cores).
In half the examples one weight is far out (to 1e4): its block's other weights then fall on the codes nearest 0.
The spec reproduces the library's float32 rounding of the weight exactly, so no margin is declared: a weight on a
code midpoint is decided by the stated tie rule (the lower code), and the edge examples put weights exactly there.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from conformance.core import strategies as S
from conformance.core.types import Example, Spec
from qsnn_reference import blockwise

#: In-features that place the blocks of 64 across rows differently: a short row (6), a row that is 3/4 of a block
#: (48: a multiple of 16 that 64 does not divide), a row past a block (70) and exactly one block (64).
_IN_FEATURES = (6, 48, 70, 64)


def _layer(draw, k_choices=_IN_FEATURES) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    k = draw(st.sampled_from(k_choices))
    n = draw(st.integers(1, 3))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    x = torch.randn((draw(st.integers(1, 3)), k), generator=gen, dtype=torch.float64)
    weight = torch.randn((n, k), generator=gen, dtype=torch.float64) * draw(st.sampled_from([1.0, 0.05, 3.0]))
    if draw(st.booleans()):  # one weight far out (its block's others then fall near 0); one draw, not one per weight
        weight[draw(st.integers(0, n - 1)), draw(st.integers(0, k - 1))] = draw(st.sampled_from([64.0, -1e3, 1e4]))
    params = {"weight": weight, "bias": torch.randn((n,), generator=gen, dtype=torch.float64)}
    return x, params


def linear_4bit_examples(**fixed):
    """``quant_type`` nf4 or fp4, ``compress_statistics`` True or False, blocks of 64."""
    S.check_fixed(fixed, ("quant_type", "compress_statistics", "blocksize"), "blockwise.linear_4bit")

    @st.composite
    def draw_example(draw):
        x, params = _layer(draw)
        hyper = dict(quant_type=draw(S.hyper(fixed, "quant_type", st.sampled_from(blockwise.QUANT_TYPES))),
                     compress_statistics=draw(S.hyper(fixed, "compress_statistics", st.booleans())),
                     blocksize=draw(S.hyper(fixed, "blocksize", st.just(64))))
        return Example(x, params, hyper)

    return draw_example()


def _midpoints(quant_type: str) -> list[float]:
    """The values exactly halfway between neighbouring codes (float32, as the quantizer compares)."""
    code = torch.sort(blockwise.code_book(quant_type)).values
    return ((code[:-1] + code[1:]) / 2).tolist()


def linear_4bit_edges(**fixed) -> list[Example]:
    """Weights (3, 70): 210 weights, blocks of 64 across the rows and a tail of 18. Block 0: absmax 1 (one weight) and
    every code midpoint, each a tie, with both signs; block 1: all zeros; block 2: one weight of 1e4 (the absmax is
    one element) beside small ones (they fall on 0); the tail: -2 and the ties scaled by 2. Then weights (2, 48): a
    row of 48 (a multiple of 16 that the block does not divide) whose blocks straddle the rows."""
    quant_type = S.edge_hyper(fixed, "quant_type", "nf4")
    hyper = dict(quant_type=quant_type, compress_statistics=S.edge_hyper(fixed, "compress_statistics", True),
                 blocksize=S.edge_hyper(fixed, "blocksize", 64))
    ties = _midpoints(quant_type)
    flat = torch.zeros(210, dtype=torch.float64)
    first = [1.0] + ties + [-t for t in ties]
    flat[: len(first)] = torch.tensor(first, dtype=torch.float64)
    flat[128:192] = torch.linspace(-0.5, 0.5, 64, dtype=torch.float64)
    flat[150] = 1e4
    tail = [-2.0] + [2.0 * t for t in ties]
    flat[192:192 + len(tail)] = torch.tensor(tail, dtype=torch.float64)
    gen = torch.Generator().manual_seed(39)
    wide = {"weight": flat.reshape(3, 70), "bias": torch.tensor([0.5, -0.25, 1.0], dtype=torch.float64)}
    x_wide = torch.randn((2, 70), generator=gen, dtype=torch.float64)
    straddling = {"weight": torch.randn((2, 48), generator=gen, dtype=torch.float64),
                  "bias": torch.tensor([0.125, -1.0], dtype=torch.float64)}
    straddling["weight"][1, 20] = 4.0  # the second block's absmax is one element of the second row
    x_straddling = torch.randn((2, 48), generator=gen, dtype=torch.float64)
    return [Example(x_wide, wide, hyper), Example(x_straddling, straddling, hyper)]


def linear_int8_examples(**fixed):
    """``quantize_input`` True (LLM.int8's int8 product) or False (the dequantized weight)."""
    S.check_fixed(fixed, ("quantize_input",), "blockwise.linear_int8")

    @st.composite
    def draw_example(draw):
        x, params = _layer(draw)
        return Example(x, params, dict(quantize_input=draw(S.hyper(fixed, "quantize_input", st.booleans()))))

    return draw_example()


def linear_int8_edges(**fixed) -> list[Example]:
    """A weight row of zeros, a row whose absmax is one element of 1e4 beside small ones, a row of float16 ties
    (scaled values k + 0.5 of 127: the codes round half to even) and an input row of zeros beside one whose values
    fall on ties; outputs of magnitude up to ~100 (the rescale's constant shows in the relative error)."""
    hyper = dict(quantize_input=S.edge_hyper(fixed, "quantize_input", True))
    ties = torch.tensor([127.0, 0.5, 1.5, 2.5, -3.5, 64.5, -100.5, 126.5], dtype=torch.float64) / 127.0
    weight = torch.stack([torch.zeros(8, dtype=torch.float64), torch.tensor([1e4, 1.0, -0.5, 2.0, 0.0, -3.0, 0.25, 1.5],
                                                                              dtype=torch.float64), ties])
    x = torch.stack([torch.zeros(8, dtype=torch.float64), ties * 40.0,
                     torch.tensor([3.0, -2.0, 1.0, 5.0, -4.0, 2.5, -1.5, 6.0], dtype=torch.float64)])
    bias = torch.tensor([0.5, -0.25, 1.0], dtype=torch.float64)
    return [Example(x, {"weight": weight, "bias": bias}, hyper)]


SPECS = (
    Spec(id="blockwise.linear_4bit", fn=blockwise.linear_4bit, examples=linear_4bit_examples,
         edges=linear_4bit_edges,
         doc="bitsandbytes' Linear4bit: the weight as NF4 or FP4 codes, one absmax per block of 64 consecutive "
             "weights (row-major; a shorter tail block), scaled by a float32 reciprocal, nearest code (halfway: the "
             "lower), the absmax double-quantized (8-bit dynamic codes, blocks of 256, mean offset) where "
             "compress_statistics; y = x @ W.T + bias; gradient to x and bias, none to the frozen weight."),
    Spec(id="blockwise.linear_int8", fn=blockwise.linear_int8, examples=linear_int8_examples,
         edges=linear_int8_edges,
         doc="bitsandbytes' Linear8bitLt (threshold 0): the weight as LLM.int8 codes (float16 rows, absmax per "
             "row, round(row * 127 / absmax) half to even); y = x @ (C_w * s_w / 127).T + bias, or with "
             "quantize_input the exact int8 product rescaled by s_x * s_w / 127**2; gradient dL/dy @ (C_w * s_w / "
             "127) to x and the bias."),
)
