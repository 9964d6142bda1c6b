"""Property tests of dpcore.checks: the validation helpers at dpcore's public boundary.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcore import checks
from tests.dpcore.properties.oracle import (
    ANY_SCALAR,
    INF,
    PROPERTY,
    Arg,
    any_arrays,
    array_tag,
    as_real,
    attempt,
    bounded_time,
    choices,
    covers,
    judge,
    names,
    numeric_or_none,
    ok,
    refused,
    rngs,
    run_regression,
)


@covers("checks.check_real", "checks.check_finite", "checks.check_positive",
        "checks.check_delta", "checks.check_probability_open")
@PROPERTY
@given(value=ANY_SCALAR)
def test_real_number_checks(value):
    x = as_real(value)
    expectations = {
        checks.check_real: x is not None and not math.isinf(x) or x is not None and isinstance(
            value, float),
        checks.check_finite: x is not None and math.isfinite(x),
        checks.check_positive: x is not None and 0 < x < INF,
        lambda n, v: checks.check_positive(n, v, allow_zero=True): x is not None
        and 0 <= x < INF,
        checks.check_delta: x is not None and 0 <= x < 1,
        lambda n, v: checks.check_delta(n, v, allow_zero=False): x is not None and 0 < x < 1,
        checks.check_probability_open: x is not None and 0 < x < 1,
    }
    for check, valid in expectations.items():
        result, error = attempt(lambda c=check: c("widget", value))
        if valid:
            assert error is None, (check, value, error)
            assert isinstance(result, float) and (result == x or math.isnan(x))
        else:
            assert error is not None, (check, value, result)
            assert names(error, "widget"), error



@covers("checks.check_bounds")
@PROPERTY
@given(lower=ANY_SCALAR, upper=ANY_SCALAR)
def test_bounds_check(lower, upper):
    lo, hi = as_real(lower), as_real(upper)
    result, error = attempt(lambda: checks.check_bounds(lower, upper))
    lower_ok = lo is not None and math.isfinite(lo)
    upper_ok = hi is not None and math.isfinite(hi)
    if lower_ok and upper_ok and lo < hi:
        assert error is None and result == (lo, hi)
    else:
        assert error is not None
        if not lower_ok:
            assert names(error, "lower") or not upper_ok
        if lower_ok and not upper_ok:
            assert names(error, "upper")



@covers("checks.check_int", "checks.check_trials")
@PROPERTY
@given(value=ANY_SCALAR, minimum=st.integers(-5, 5), span=st.one_of(st.none(),
                                                                     st.integers(0, 10**9)))
def test_integer_checks(value, minimum, span):
    maximum = None if span is None else minimum + span
    is_int = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    valid = is_int and minimum <= int(value) and (maximum is None or int(value) <= maximum)
    result, error = attempt(lambda: checks.check_int("widget", value, minimum=minimum,
                                                      maximum=maximum))
    if valid:
        assert error is None and type(result) is int and result == int(value)
    else:
        assert error is not None and names(error, "widget")
    trials_valid = value is None or is_int and 1 <= int(value) <= checks.MAX_TRIALS
    result, error = attempt(lambda: checks.check_trials(value))
    if trials_valid:
        assert error is None and result == (None if value is None else int(value))
    else:
        assert error is not None and names(error, "trials")



@covers("checks.check_rng", "checks.check_choice")
@PROPERTY
@given(rng=rngs(), choice=choices(("laplace", "gaussian")))
def test_rng_and_choice_checks(rng, choice):
    result = judge(lambda: checks.check_rng(rng.value), {"rng": rng})
    assert rng.tag == "bad" or result is rng.value
    result = judge(lambda: checks.check_choice("noise", choice.value, ("laplace", "gaussian")),
                   {"noise": choice})
    assert choice.tag == "bad" or result == choice.value



@covers("checks.check_progress")
@PROPERTY
@given(progress=st.sampled_from([None, print, len, 0, 1.5, "done", object()]))
def test_progress_check(progress):
    """None becomes a callback that does nothing; any callable passes through; anything else
    is a TypeError naming progress."""
    result, error = attempt(lambda: checks.check_progress(progress))
    if progress is None:
        assert error is None and result(0.5) is None
    elif callable(progress):
        assert error is None and result is progress
    else:
        assert isinstance(error, TypeError) and names(error, "progress")



@covers("checks.finite_array", "checks.numeric_array")
@PROPERTY
@given(values=any_arrays(max_dims=3), min_size=st.integers(0, 3))
def test_finite_array(values, min_size):
    tag = array_tag(values, min_size=min_size)
    result = ok(lambda: checks.finite_array("widget", values, min_size=min_size),
                {"widget": Arg(values, "bad" if tag == "bad" else "nice")})
    if result is not None:
        assert result.dtype == np.float64 and result.size >= min_size
        np.testing.assert_array_equal(result, numeric_or_none(values))
    raw, error = attempt(lambda: checks.numeric_array("widget", values))
    if error is not None:
        assert names(error, "widget") and numeric_or_none(values) is None
    else:  # NaN and inf pass through unchanged; objects such as None inside a list become NaN
        assert raw.dtype == np.float64 and raw.shape == np.shape(values)
        if numeric_or_none(values) is not None:
            np.testing.assert_array_equal(raw, numeric_or_none(values))



WORK_SIZES = st.one_of(st.integers(0, 10**7), st.sampled_from([
    0, 1, 2**22, 2**22 + 1, 2**27, 2**27 + 1, 10**9, 10**9 + 1, 2**63, 10**30, 10**400]))



@covers("checks.trial_chunks", "checks.check_returned_size")
@PROPERTY
@given(trials=WORK_SIZES, elements=WORK_SIZES)
def test_work_bounds_refuse_at_once_and_chunk_within_the_block(trials, elements):
    per_trial = max(1, elements)
    with bounded_time():
        chunks, error = attempt(lambda: checks.trial_chunks(trials, elements))
    if trials * per_trial > checks.MAX_DRAWS:
        assert error is not None and names(error, "trials")
    else:
        assert error is None
        assert sum(chunks) == trials and all(c >= 1 for c in chunks)
        assert all(c * per_trial <= max(checks.MAX_BLOCK_ELEMENTS, per_trial) for c in chunks)
    _, error = attempt(lambda: checks.check_returned_size(trials, elements))
    assert (error is not None) == (trials * per_trial > checks.MAX_RETURNED_ELEMENTS)
    if error is not None:
        assert names(error, "trials")



#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: commit before it) and passes after it.
REGRESSIONS = {
    "check_real(10**400): OverflowError": lambda: refused(
        lambda: checks.check_real("epsilon", 10**400), "epsilon"),
    "finite_array(complex array): imaginary part dropped": lambda: refused(
        lambda: checks.finite_array("values", np.array([1 + 2j])), "values", TypeError),
    "finite_array(10**400): OverflowError": lambda: refused(
        lambda: checks.finite_array("total", [10**400]), "total"),
    "finite_array(['1.0']): text read as a number": lambda: refused(
        lambda: checks.finite_array("values", ["1.0"]), "values", TypeError),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    run_regression(check)
