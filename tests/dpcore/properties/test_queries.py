"""Property tests of dpcore.queries (QueryAnswer) and of its pandas reference
(tests/queries_reference.py): queries over data frames and the noisy mean.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcore import measures
from dpcore.measures import ZCDP, PureDP
from dpcore.mechanisms import CATALOGUE
from dpcore.mechanisms.base import _MAX_INTEGER_SCALE
from dpcore.queries import QueryAnswer
from tests import queries_reference as queries
from tests.dpcore.properties.oracle import (
    EDGE_ELEMENTS,
    HUGE,
    NAN,
    NICE_ELEMENTS,
    NON_FINITE_ELEMENTS,
    PROPERTY,
    TINY,
    Arg,
    any_arrays,
    array_tag,
    as_real,
    assert_finite,
    attempt,
    bounded_time,
    choices,
    covers,
    finite_real,
    names,
    numeric_or_none,
    ok,
    positive,
    probability,
    refused,
    rngs,
    run_regression,
    tagged,
    trial_counts,
)

COLUMN_KINDS = ("int", "float", "bool", "text", "mixed", "category", "nullable", "complex",
                "dates")



@st.composite
def frames(draw) -> pd.DataFrame:
    """Small frames with a column of each kind, missing values, inf and float64's extremes."""
    n = draw(st.integers(0, 6))
    floats = st.one_of(NICE_ELEMENTS, EDGE_ELEMENTS, NON_FINITE_ELEMENTS)
    words = st.sampled_from(["a", "b", "c", None])
    columns = {
        "int": draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n)),
        "float": draw(st.lists(floats, min_size=n, max_size=n)),
        "bool": draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        "text": draw(st.lists(words, min_size=n, max_size=n)),
        "mixed": draw(st.lists(st.one_of(words, st.integers(0, 3), st.just(NAN)), min_size=n,
                               max_size=n)),
    }
    frame = pd.DataFrame(columns)
    frame["int"] = frame["int"].astype(np.int64)
    frame["category"] = pd.Categorical(frame["text"], categories=["a", "b", "c", "d"])
    frame["nullable"] = pd.array(draw(st.lists(st.one_of(st.integers(-5, 5), st.none()),
                                               min_size=n, max_size=n)), dtype="Int64")
    frame["complex"] = np.array(draw(st.lists(NICE_ELEMENTS, min_size=n, max_size=n)),
                                dtype=float) * (1 + 1j)
    frame["dates"] = pd.to_datetime(np.arange(n), unit="D")
    return frame



def column_names() -> st.SearchStrategy[Arg]:
    return tagged(st.sampled_from(COLUMN_KINDS), None,
                  st.sampled_from(["missing", "", None, 0, ("int",), "INT"]))



def frame_args() -> st.SearchStrategy[Arg]:
    return tagged(frames(), None, st.sampled_from([None, {"int": [1, 2]}, [[1, 2]],
                                                   np.ones((2, 2)), "frame"]))



def category_lists() -> st.SearchStrategy[Arg]:
    """Declared categories: None (from the data), lists (maybe missing some values), or junk."""
    return tagged(
        st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c", "d", 0, 1, 2, 3, True]),
                                      min_size=1, max_size=5, unique_by=str)),
        None,
        st.sampled_from(["abc", [], ["a", "a"], ["a", None], ["a", NAN], {"a": 1}, 3,
                         ["1", 1]]),
    )



def column_arg(frame: Arg, column: Arg, *, numeric: bool) -> Arg:
    """A column that is present but not numeric is refused when numbers are needed."""
    if frame.tag == "bad" or column.tag == "bad":
        return column
    if column.value not in frame.value.columns:
        return Arg(column.value, "bad")
    dtype = frame.value[column.value].dtype
    if numeric and not (pd.api.types.is_numeric_dtype(dtype)
                        and not pd.api.types.is_complex_dtype(dtype)):
        return Arg(column.value, "bad")
    return column



@covers("queries.QueryAnswer")
@PROPERTY
@given(true_value=any_arrays(), l1=positive(), l2=positive())
def test_query_answer(true_value, l1, l2):
    answer = ok(lambda: queries.QueryAnswer(true_value=true_value, l1_sensitivity=l1.value,
                                            l2_sensitivity=l2.value, integer_valued=False),
                {"true_value": Arg(true_value, array_tag(true_value)), "l1_sensitivity": l1,
                 "l2_sensitivity": l2})
    if answer is not None:
        assert answer.true_value.dtype == np.float64 and not answer.true_value.flags.writeable
        np.testing.assert_array_equal(answer.true_value, numeric_or_none(true_value))
        if isinstance(true_value, np.ndarray):
            assert true_value.flags.writeable  # the caller's array is copied, not frozen



@pytest.mark.slow
@PROPERTY
@given(frame=frame_args(), column=column_names(),
       value=tagged(st.sampled_from(["a", 1, 0.5, NAN, None, True, pd.NA, np.int64(2)]), None,
                    st.sampled_from([(1, 2), [1], {"a"}, np.array([1.0])])))
def test_count_and_count_where(frame, column, value):
    answer = ok(lambda: queries.count(frame.value), {"frame": frame})
    if answer is not None:
        assert float(answer.true_value) == len(frame.value)
        assert answer.l1_sensitivity == answer.l2_sensitivity == 1
    matches = ok(lambda: queries.count_where(frame.value, column.value, value.value),
                 {"frame": frame, "column": column, "value": value})
    if matches is not None:
        assert 0 <= float(matches.true_value) <= len(frame.value)
        assert float(matches.true_value).is_integer()



@pytest.mark.slow
@PROPERTY
@given(frame=frame_args(), column=st.one_of(
           st.sampled_from(["int", "float", "bool", "nullable"]),
           st.sampled_from(COLUMN_KINDS + ("missing", None))).map(lambda c: Arg(c, "nice")),
       lower=finite_real(), upper=finite_real())
def test_bounded_sum_and_mean_parts(frame, column, lower, upper):
    if lower.tag == upper.tag == "nice" and as_real(lower.value) > as_real(upper.value):
        lower, upper = upper, lower  # mostly valid bounds
    args = {"frame": frame, "column": column_arg(frame, column, numeric=True), "lower": lower,
            "upper": upper}
    if lower.tag != "bad" and upper.tag != "bad" and not as_real(lower.value) < as_real(
            upper.value):
        args["upper"] = Arg(upper.value, "bad")  # any finite lower < upper will do for a sum
    answer = ok(lambda: queries.bounded_sum(frame.value, column.value, lower=lower.value,
                                            upper=upper.value), args)
    parts = ok(lambda: queries.bounded_mean_parts(frame.value, column.value, lower=lower.value,
                                                  upper=upper.value), args)
    if answer is None:
        assert parts is None
        return
    lo, hi = as_real(lower.value), as_real(upper.value)
    values = frame.value[column.value].to_numpy(dtype=np.float64, na_value=np.nan)
    present = values[~np.isnan(values)]
    assert answer.missing_rows == values.size - present.size
    assert answer.clamped_rows == np.count_nonzero((present < lo) | (present > hi))
    n = present.size
    total = float(answer.true_value)
    assert lo * n - 1e-9 * abs(lo * n) - 1e-300 <= total <= hi * n + 1e-9 * abs(hi * n) + 1e-300
    assert answer.l1_sensitivity == max(abs(lo), abs(hi))
    sum_part, count_part = parts
    assert float(sum_part.true_value) == total and float(count_part.true_value) == n



@pytest.mark.slow
@PROPERTY
@given(frame=frame_args(), row=column_names(), column=column_names(),
       row_categories=category_lists(), column_categories=category_lists())
def test_histogram_and_crosstab(frame, row, column, row_categories, column_categories):
    result, error = attempt(lambda: queries.histogram(frame.value, column.value,
                                                      categories=column_categories.value))
    assert_finite(result)
    if error is not None:
        assert any(names(error, n) for n in ("frame", "column", "categories")), error
    else:
        assert frame.tag == column.tag == column_categories.tag == "nice"
        assert result.true_value.ndim == 1 and len(result.labels) == result.true_value.size
        assert result.true_value.sum() == len(frame.value) - result.missing_rows
        assert np.all(result.true_value >= 0)
    table, error = attempt(lambda: queries.crosstab(
        frame.value, row.value, column.value, row_categories=row_categories.value,
        column_categories=column_categories.value))
    assert_finite(table)
    if error is not None:
        assert any(names(error, n) for n in ("frame", "row", "column", "row_categories",
                                             "column_categories")), error
    else:
        assert table.true_value.shape == (len(table.labels), len(table.column_labels))
        assert table.true_value.sum() == len(frame.value) - table.missing_rows



@st.composite
def sum_and_count(draw) -> tuple[Arg, Arg]:
    """A bounded sum and count from a frame, or junk in their place."""
    frame = draw(frames())
    lower = draw(st.one_of(st.floats(-1e3, 0), st.integers(-100, 0).map(float),
                           st.sampled_from([-1e300, -TINY])))
    upper = draw(st.one_of(st.floats(1e-3, 1e3), st.integers(1, 100).map(float),
                           st.sampled_from([1e300, TINY])))
    column = draw(st.sampled_from(["int", "float", "bool", "nullable"]))
    total, how_many = queries.bounded_mean_parts(frame, column, lower=lower, upper=upper)
    edge = max(abs(lower), abs(upper)) > 1e6 or min(abs(upper), abs(lower) or 1) < 1e-6
    tag = "extreme" if edge else "nice"
    junk = draw(st.sampled_from([None, 1.0, "sum", queries.histogram(frame, "bool")
                                 if len(frame) else None]))
    which = draw(st.sampled_from(["both", "both", "both", "sum_junk", "count_junk",
                                  "count_for_sum"]))
    if which == "sum_junk":
        return Arg(junk, "bad"), Arg(how_many, "nice")
    if which == "count_junk":
        return Arg(total, tag), Arg(junk, "bad")
    if which == "count_for_sum":  # a count carries no bounds: sum_answer is refused
        return Arg(how_many, "bad"), Arg(how_many, "nice")
    return Arg(total, tag), Arg(how_many, "nice")



def _may_pass_the_integer_cap(spec, sum_answer: QueryAnswer, kwargs: dict,
                              share: float) -> bool:
    """Whether a part of an integer kind's budget may call for noise beyond its 1e12 scale
    cap (refused, naming the split): estimated generously, so that such a refusal is
    allowed, never required."""
    widest = 0.0
    with np.errstate(divide="ignore", over="ignore"):  # (a subnormal part: 0)
        for part in (share, 1 - share):
            sens = max(sum_answer.l1_sensitivity, sum_answer.l2_sensitivity, 1.0)
            if "rho" in kwargs:
                widest = max(widest, sens / np.sqrt(2 * np.float64(kwargs["rho"]) * part))
            elif "epsilon" in kwargs:
                eps = np.float64(kwargs["epsilon"]) * part
                spread = 1.0 + np.sqrt(2 * np.log(1.25 / (np.float64(kwargs.get("delta", 0.5))
                                                          * part)))
                widest = max(widest, sens / eps * spread)
    return not widest < _MAX_INTEGER_SCALE / 10


@pytest.mark.slow
@PROPERTY
@given(parts=sum_and_count(), mechanism=choices(queries.MEAN_MECHANISMS),
       epsilon=positive(), delta=probability(zero_ok=False), rho=positive(),
       sum_share=probability(zero_ok=False, nice_hi=0.99), budget=st.sampled_from(
           ["fits", "fits", "fits", "fits", "epsilon", "epsilon and delta", "rho", "none",
            "all"]), second_budget=st.booleans(), trials=trial_counts(), rng=rngs(),
       beta=probability(zero_ok=False))
def test_noisy_mean_and_mean_privacy(parts, mechanism, epsilon, delta, rho, sum_share, budget,
                                     second_budget, trials, rng, beta):
    sum_answer, count_answer = parts
    spec = CATALOGUE[mechanism.value if mechanism.tag == "nice" else "laplace"]
    budgets = list(spec.budgets.values())
    if budget == "fits":  # one of the kind's own budgets
        given_ = budgets[min(int(second_budget), len(budgets) - 1)]
    else:
        given_ = {"epsilon": ("epsilon",), "epsilon and delta": ("epsilon", "delta"),
                  "rho": ("rho",), "none": (), "all": ("epsilon", "delta", "rho")}[budget]
    kwargs: dict[str, object] = {}
    args = {"sum_answer": sum_answer, "count_answer": count_answer, "mechanism": mechanism,
            "sum_share": sum_share}
    for name in given_:
        arg = {"epsilon": epsilon, "delta": delta, "rho": rho}[name]
        kwargs[name] = arg.value
        args[name] = arg
    # the budget the kind takes that is nearest what was given: the rest is missing or extra
    needs = max(budgets, key=lambda keywords: len(set(keywords) & set(given_)))
    for name in set(given_) ^ set(needs):
        args[name] = Arg(kwargs.get(name), "bad")
    if spec.integer_only and sum_answer.tag != "bad" and not (
            sum_answer.value.integer_valued):
        args["mechanism"] = Arg(mechanism.value, "bad")
    if spec.integer_only and all(a.tag != "bad" for a in args.values()) and (
            _may_pass_the_integer_cap(spec, sum_answer.value,
                                      {n: as_real(v) for n, v in kwargs.items()},
                                      as_real(sum_share.value))):
        args["sum_share"] = Arg(sum_share.value, "extreme")
    words = {"sum_answer": ("sensitivity", "lower", "upper")}
    privacy = ok(lambda: queries.mean_privacy(sum_answer.value, count_answer.value,
                                              mechanism=mechanism.value,
                                              sum_share=sum_share.value, **kwargs), args, words)
    built = ok(lambda: queries.mean_mechanisms(sum_answer.value, count_answer.value,
                                               mechanism=mechanism.value,
                                               sum_share=sum_share.value, **kwargs), args, words)
    assert (built is None) == (privacy is None)
    if built is not None:  # the parts noisy_mean samples from compose to mean_privacy
        assert measures.compose(*(m.privacy for m in built)) == privacy
    with bounded_time():
        mean, error = attempt(lambda: queries.noisy_mean(
            sum_answer.value, count_answer.value, mechanism=mechanism.value,
            sum_share=sum_share.value, rng=rng.value, trials=trials.value, **kwargs))
    assert_finite(mean)
    if privacy is None or any(a.tag == "bad" for a in (trials, rng)):
        assert mean is None and error is not None
        return
    assert error is None, error
    lo, hi = sum_answer.value.lower, sum_answer.value.upper
    assert mean.shape == (() if trials.value is None else (int(trials.value),))
    assert np.all((lo <= mean) & (mean <= hi))
    # the two halves compose to exactly the budget, never more
    if isinstance(privacy, PureDP):
        assert privacy.epsilon <= as_real(epsilon.value)
    elif isinstance(privacy, ZCDP):
        assert privacy.rho <= as_real(rho.value)
    else:
        assert privacy.epsilon <= as_real(epsilon.value)
        assert privacy.delta <= as_real(delta.value)
    # the same release as one object: its parts, its privacy, its simulated accuracy
    release = queries.NoisyMean(sum_answer.value, count_answer.value, mechanism=mechanism.value,
                                sum_share=sum_share.value, **kwargs)
    assert release.kind == mechanism.value and release.privacy == privacy
    assert [m.scale for m in release.parts] == [m.scale for m in built]
    assert release.lower == lo and release.upper == hi and lo <= release.true_value <= hi
    if rng.tag != "bad":
        alpha = ok(lambda: release.accuracy(beta.value, rng=rng.value, trials=50),
                   {"beta": beta})
        assert alpha is None or 0 <= alpha <= hi - lo


HUGE_FRAME = pd.DataFrame({"x": [HUGE, HUGE], "g": ["a", "b"]})



#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: commit before it) and passes after it.
REGRESSIONS = {
    "count_where(value=('a', 'b')): pandas' broadcasting error": lambda: refused(
        lambda: queries.count_where(HUGE_FRAME, "g", ("a", "b")), "value", TypeError),
    "bounded_sum overflowing float64: true value inf": lambda: refused(
        lambda: queries.bounded_sum(HUGE_FRAME, "x", lower=0.0, upper=HUGE), "lower"),
    "QueryAnswer(true_value=None): NaN": lambda: refused(
        lambda: queries.QueryAnswer(true_value=None, l1_sensitivity=1.0, l2_sensitivity=1.0,
                                    integer_valued=True), "true_value", TypeError),
    "mean_privacy(laplace, epsilon=3.7): 3.7000000000000006, above the budget": lambda: (
        queries.mean_privacy(*queries.bounded_mean_parts(
            pd.DataFrame({"x": [0, 1]}), "x", lower=0, upper=1), mechanism="laplace",
            epsilon=3.7).epsilon <= 3.7),
    "mean_privacy(geometric, epsilon=0.004, sum_share=1e-9): sum_share not named": lambda: (
        refused(lambda: queries.mean_privacy(*queries.bounded_mean_parts(
            pd.DataFrame({"x": [0]}), "x", lower=0, upper=4), mechanism="geometric",
            epsilon=0.00390625, sum_share=1e-9), "sum_share")),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    run_regression(check)
