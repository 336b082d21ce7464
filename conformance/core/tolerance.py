"""The one tolerance table, keyed by (dtype, transform, check), read through :func:`tolerance`.

Defaults are ``torch.testing.assert_close``'s for the dtype. Every override carries its reason; the most
specific matching key wins (``"*"`` matches anything).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    reason: str = "torch.testing.assert_close default for the dtype"
    #: atol is relative to the largest expected magnitude (errors that scale with a reduction's operands); for
    #: gradients, the largest of all the module's gradients (checks.check_preserves_grad).
    scaled: bool = False
    #: with ``scaled``, the smallest atol: values below a low-precision format's normal range flush to zero there.
    floor: float = 0.0


#: torch.testing.assert_close's defaults.
DEFAULTS = {
    "float64": Tolerance(1e-7, 1e-7),
    "float32": Tolerance(1e-5, 1.3e-6),
    "bfloat16": Tolerance(1e-5, 1.6e-2),
    "float16": Tolerance(1e-5, 1e-3),
}

#: dtype -> (the next lower precision, its unit roundoff): the relative error a computation in that precision makes
#: at least on values it cannot hold exactly. A module of the cell's dtype that computes in the lower precision must
#: fail its spec checks, so their tolerances stay below it (suites/meta/test_tolerance_table.py).
LOWER_PRECISION_ERROR = {"float64": ("float32", 2.0**-24), "float32": ("float16", 2.0**-11)}

#: (dtype, transform, check) -> Tolerance, each with the reason it departs from the default.
OVERRIDES: dict[tuple[str, str, str], Tolerance] = {
    ("float64", "*", "forward_matches_spec"): Tolerance(
        1e-9, 1e-8, "float64 against the float64 spec; a float32 computation errs by up to 2^-24 = 6e-8 relative "
                    "(the largest float64 difference seen: 4.5e-9 relative, norse LIF[triangle]'s gradient through "
                    "T steps)"),
    ("float64", "*", "grad_matches_spec"): Tolerance(
        1e-9, 1e-8, "float64 against the float64 spec's formula: as forward_matches_spec, a float32 backward (a "
                    "float32 output rounds the cotangent) errs by up to 6e-8 relative"),
    ("float32", "*", "forward_matches_spec"): Tolerance(
        1e-5, 1e-5, "the spec runs in float64; float32 sums over time steps/channels accumulate ~T*eps rounding"),
    ("float32", "*", "grad_matches_spec"): Tolerance(
        1e-4, 1e-4, "float32 backward through T steps and reductions vs the float64 spec; surrogate slopes up to ~100 "
                    "amplify rounding"),
    ("bfloat16", "*", "forward_matches_spec"): Tolerance(
        5e-2, 5e-2, "bfloat16 has 8 mantissa bits; the membrane is rounded at every step"),
    ("bfloat16", "*", "grad_matches_spec"): Tolerance(
        1e-1, 1e-1, "bfloat16 gradients through several steps vs the float64 spec"),
    ("float32", "compile_inductor", "*"): Tolerance(
        1e-5, 1e-5, "inductor fuses and reorders float32 arithmetic (different rounding than eager)"),
    ("float32", "compile_dynamic", "*"): Tolerance(
        1e-5, 1e-5, "inductor fuses and reorders float32 arithmetic (different rounding than eager)"),
    ("float32", "*", "preserves_grad"): Tolerance(
        1e-5, 1e-5, "reductions in backward (vmap, per-sample, Opacus einsum) sum in a different order than the loop"),
    ("float32", "jvp", "preserves_grad"): Tolerance(
        1e-5, 1e-5, "jvp vs vjp inner products sum in different orders"),
    ("float32", "onnx", "*"): Tolerance(
        1e-5, 1e-5, "onnxruntime's GEMM/convolution/reduction kernels sum in another order than torch's (seen: "
                    "1.1e-4 on a binary conv's outputs of ~10): atol relative to the largest output", scaled=True),
    ("float32", "cpu_vs_cuda", "*"): Tolerance(
        1e-5, 1e-5, "CUDA kernels (cuBLAS/cuDNN, fused reductions) sum in a different order than the CPU's"),
    ("float32", "autocast_bf16", "*"): Tolerance(
        2e-2, 2e-2, "autocast rounds every matmul/conv operand to bfloat16 (8 mantissa bits, 2^-8 = 3.9e-3 relative "
                    "each): the error of a K-term sum scales with its operands, so atol is relative to the largest "
                    "output (for gradients: the largest gradient of any tensor, see check_preserves_grad); 2e-2 leaves room for ~5 units of bfloat16 rounding", scaled=True),
    ("float32", "autocast_fp16", "*"): Tolerance(
        4e-3, 4e-3, "autocast rounds every matmul/conv operand to float16 (11 significant bits, 2^-11 = 4.9e-4 "
                    "relative each): atol relative to the largest output (gradients: the largest gradient), ~8 units of float16 rounding; at least float16's "
                    "smallest normal (6.1e-5): smaller values flush to zero in float16 (seen: outputs of 6e-31)",
        scaled=True, floor=float(torch.finfo(torch.float16).tiny)),
    ("float32", "half", "*"): Tolerance(
        1e-2, 1e-2, "built in float32 and converted by .half(): parameters and input rounded to float16 (11 "
                    "significant bits, 4.9e-4 relative each) and every op rounded again: atol relative to the largest "
                    "expected value, ~20 units of float16 rounding; at least float16's smallest normal (6.1e-5)",
        scaled=True, floor=float(torch.finfo(torch.float16).tiny)),
}


def tolerance(dtype: str, transform: str, check: str) -> Tolerance:
    """The tolerance for a cell: the most specific override, else the dtype default."""
    best, best_score = DEFAULTS[dtype], -1
    for (d, t, c), tol in OVERRIDES.items():
        if d not in ("*", dtype) or t not in ("*", transform) or c not in ("*", check):
            continue
        score = (d != "*") * 4 + (t != "*") * 2 + (c != "*")
        if score > best_score:
            best, best_score = tol, score
    return best


#: How close (relative to the threshold scale) a spec membrane must be to its decision boundary for a spike
#: flip to be excused as a tie, per dtype. A flip farther from the boundary is a real mismatch.
TIE_MARGIN = {"float64": 1e-9, "float32": 1e-4, "bfloat16": 6e-2, "float16": 1e-2}


# Built in float32 and converted by .double() (transforms/conversions.py): float64 arithmetic on the float32 cell's own
# values, judged as a float64 module is, by the float64 entries of the same check.
for _check in ("forward_matches_spec", "grad_matches_spec"):
    OVERRIDES[("float32", "to_float64", _check)] = dataclasses.replace(
        tolerance("float64", "*", _check), reason="as float64's (converted by .double() from float32): "
                                                  + tolerance("float64", "*", _check).reason)
