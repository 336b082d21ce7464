"""The tolerance table separates dtypes: a module that computes in a lower precision than its cell's fails the
spec checks of that cell."""

import pytest

from conformance.core.tolerance import LOWER_PRECISION_ERROR, tolerance


@pytest.mark.parametrize("dtype", sorted(LOWER_PRECISION_ERROR))
@pytest.mark.parametrize("check", ["forward_matches_spec", "grad_matches_spec"])
def test_spec_tolerances_stay_below_what_a_lower_precision_computation_errs(dtype, check):
    lower, roundoff = LOWER_PRECISION_ERROR[dtype]
    tol = tolerance(dtype, "eager", check)
    assert tol.rtol < roundoff and tol.atol < roundoff, (
        f"{dtype} {check}: atol {tol.atol:g}, rtol {tol.rtol:g} let a computation in {lower} (relative error "
        f"{roundoff:.2g}) pass: {tol.reason}")
