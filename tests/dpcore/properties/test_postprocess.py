"""Property tests of dpcore.postprocess: clipping, rounding and rescaling released tables.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpcore import postprocess
from tests.dpcore.properties.oracle import (
    EDGE_ELEMENTS,
    HUGE,
    NICE_ELEMENTS,
    PROPERTY,
    TINY,
    Arg,
    any_arrays,
    array_tag,
    assert_finite,
    attempt,
    covers,
    finite,
    finite_real,
    flags,
    float_arrays,
    names,
    numeric_or_none,
    ok,
    refused,
    run_regression,
)

TABLE_ELEMENTS = st.one_of(NICE_ELEMENTS, NICE_ELEMENTS, EDGE_ELEMENTS,
                           st.integers(-3, 3).map(float))



@st.composite
def tables(draw) -> tuple[object, object, object, bool]:
    """(noisy, total, table_ndim, consistent): consistent triples, or anything at all."""
    if draw(st.booleans()):
        noisy = draw(float_arrays(TABLE_ELEMENTS, min_dims=1, max_dims=3, min_side=1,
                                  max_side=4))
        table_ndim = draw(st.integers(1, noisy.ndim))
        lead = noisy.shape[:noisy.ndim - table_ndim]
        total = draw(st.one_of(
            st.floats(0, 1e4), st.sampled_from([0.0, -5.0, 1e300, TINY]),
            hnp.arrays(np.float64, lead, elements=st.floats(-10, 1e4))))
        explicit = draw(st.booleans()) or np.ndim(total) not in (0, len(lead))
        return noisy, total, table_ndim if explicit or np.ndim(total) == 0 else None, True
    noisy = draw(any_arrays(max_dims=3))
    total = draw(st.one_of(finite_real().map(lambda a: a.value), any_arrays()))
    table_ndim = draw(st.one_of(st.none(), st.integers(-1, 4), st.sampled_from([1.0, "1",
                                                                                True])))
    return noisy, total, table_ndim, False



def per_table_target(noisy: np.ndarray, total: object, table_ndim: int | None) -> np.ndarray:
    total = np.asarray(total, dtype=np.float64)
    table_ndim = noisy.ndim - total.ndim if table_ndim is None else table_ndim
    lead = noisy.shape[:noisy.ndim - table_ndim]
    return np.broadcast_to(np.maximum(total, 0.0), lead), tuple(range(len(lead), noisy.ndim))



def table_outcome(call: Callable[[], object], consistent: bool, edge: bool) -> object | None:
    """Finite output, or a ValueError/TypeError naming one of the arguments (always allowed
    for arbitrary input; for consistent input only at float64's edges)."""
    result, error = attempt(call)
    assert_finite(result)
    if error is not None:
        assert not consistent or edge, error
        assert any(names(error, n) for n in ("noisy", "total", "table_ndim")), error
    return result



@covers("postprocess.clip_negative", "postprocess.round_counts")
@PROPERTY
@given(noisy=any_arrays(max_dims=3))
def test_clip_and_round(noisy):
    args = {"noisy": Arg(noisy, array_tag(noisy))}
    clipped = ok(lambda: postprocess.clip_negative(noisy), args)
    rounded = ok(lambda: postprocess.round_counts(noisy), args)
    if clipped is not None:
        assert clipped.shape == np.shape(noisy) and np.all(clipped >= 0)
        assert np.all(rounded == np.floor(rounded)) and np.all(np.abs(rounded - noisy) <= 0.5)



@pytest.mark.slow
@covers("postprocess.rescale_to_total", "postprocess.round_to_total", "postprocess.publish")
@PROPERTY
@given(case=tables(), clip=flags(), round_=flags())
def test_rescale_round_and_publish(case, clip, round_):
    noisy, total, table_ndim, consistent = case
    edge = consistent and (np.max(np.abs(noisy)) > 1e200 or np.max(np.abs(total)) > 1e200)
    scaled = table_outcome(lambda: postprocess.rescale_to_total(noisy, total,
                                                                table_ndim=table_ndim),
                           consistent, edge)
    if scaled is not None:
        target, axes = per_table_target(np.asarray(noisy, dtype=float), total, table_ndim)
        assert scaled.shape == np.shape(noisy) and np.all(scaled >= 0)
        np.testing.assert_allclose(scaled.sum(axis=axes), target, rtol=1e-9, atol=1e-300)
    rounded = table_outcome(lambda: postprocess.round_to_total(noisy, total,
                                                               table_ndim=table_ndim),
                            consistent, edge)
    if rounded is not None:
        target, axes = per_table_target(np.asarray(noisy, dtype=float), np.rint(total),
                                        table_ndim)
        assert np.all(rounded >= 0) and np.all(rounded == np.floor(rounded))
        exact = target < 2**52  # integer sums are exact only below 2**53
        assert np.array_equal(rounded.sum(axis=axes)[exact], target[exact])
    flags_bad = [name for name, a in (("clip", clip), ("round", round_)) if a.tag == "bad"
                 or not isinstance(a.value, bool)]
    for with_total in (None, total):
        published, error = attempt(lambda t=with_total: postprocess.publish(
            noisy, clip=clip.value, round=round_.value, total=t, table_ndim=table_ndim))
        assert_finite(published)
        if flags_bad:
            assert error is not None and any(names(error, n) for n in flags_bad), error
        elif error is not None:
            assert any(names(error, n) for n in ("noisy", "total", "table_ndim", "clip")), error
        elif clip.value:
            assert np.all(published >= 0)



@covers("postprocess.table_errors")
@PROPERTY
@given(true=any_arrays(), published=any_arrays(max_dims=3), trials=st.integers(0, 3))
def test_table_errors(true, published, trials):
    candidates = [published]
    if numeric_or_none(true) is not None:  # also a well-shaped release of the same table
        candidates.append(np.broadcast_to(np.asarray(true, dtype=float), (trials,
                                                                          *np.shape(true))) + 1)
    for released in candidates:
        errors, error = attempt(lambda r=released: postprocess.table_errors(true, r))
        if error is not None:
            assert any(names(error, n) for n in ("true", "published")), error
            continue
        assert np.all(np.isfinite(errors["l1_error"])) and np.all(errors["l1_error"] >= 0)
        relative = errors["relative_l1_error_percent"]
        if np.any(np.asarray(true, dtype=float) != 0):
            assert np.all(np.isfinite(relative)) and np.all(relative >= 0)
        else:  # documented: no relative error against an all-zero table
            assert np.all(np.isnan(relative))



#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: commit before it) and passes after it.
REGRESSIONS = {
    "rescale_to_total([1e300], 3e-277): 0 (underflow)": lambda: (
        finite(lambda: postprocess.rescale_to_total([1e300], 3e-277)).tolist() == [3e-277]),
    "rescale_to_total([1e308, 1e308], 10): zeros (sum overflow)": lambda: (
        finite(lambda: postprocess.rescale_to_total([1e308, 1e308], 10.0)).tolist()
        == [5.0, 5.0]),
    "rescale_to_total([0, 0, 0], 1.8e308): cells summing to inf": lambda: refused(
        lambda: postprocess.rescale_to_total([0.0, 0.0, 0.0], HUGE), "total"),
    "table_errors(true total beyond float64): relative error 0": lambda: (
        finite(lambda: postprocess.table_errors([HUGE, HUGE], [HUGE, 0.0]))[
            "relative_l1_error_percent"] == pytest.approx(50.0)),
    "table_errors(L1 beyond float64): inf": lambda: refused(
        lambda: postprocess.table_errors([HUGE], [-HUGE]), "published"),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    run_regression(check)
