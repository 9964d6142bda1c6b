"""Tests for dpcore.queries (QueryAnswer) and its pandas reference (tests/queries_reference.py):
true answers, sensitivities (brute-forced), and the noisy mean.

Expected values come from the dataset README, from hand computation or from plain pandas.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore import Gaussian, Geometric, Laplace
from dpcore.measures import ZCDP, ApproxDP, PureDP, compose
from dpcore.queries import QueryAnswer
from tests.conftest import ROOT
from tests.queries_reference import (
    bounded_mean_parts,
    bounded_sum,
    count,
    count_where,
    crosstab,
    histogram,
    mean_privacy,
    noisy_mean,
)


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(ROOT / "data" / "adult.csv.gz")


# --- the real data: figures from data/README.md and plain pandas ------------------------------


def test_adult_counts_match_the_dataset_readme(adult):
    assert count(adult).true_value == 48_842
    assert count_where(adult, "income", "<=50K").true_value == 37_155
    assert count_where(adult, "income", ">50K").true_value == 11_687
    assert count_where(adult, "education", "HS-grad").true_value == 15_784


def test_adult_histograms_match_the_dataset_readme(adult):
    income = histogram(adult, "income", categories=[">50K", "<=50K"])
    np.testing.assert_array_equal(income.true_value, [11_687, 37_155])
    assert income.labels == (">50K", "<=50K")
    education = histogram(adult, "education")  # categories from the data: sorted values
    by_label = dict(zip(education.labels, education.true_value, strict=True))
    assert by_label["HS-grad"] == 15_784
    assert by_label["Some-college"] == 10_878
    assert by_label["Bachelors"] == 8_025
    assert len(education.labels) == 16
    assert list(education.labels) == sorted(education.labels)
    assert education.true_value.sum() == 48_842


def test_adult_histogram_reports_missing_values(adult):
    workclass = histogram(adult, "workclass")
    assert workclass.missing_rows == adult["workclass"].isna().sum() == 2_799
    assert workclass.true_value.sum() == 48_842 - 2_799


def test_adult_crosstab_matches_pandas(adult):
    table = crosstab(adult, "sex", "income")
    expected = pd.crosstab(adult["sex"], adult["income"])
    np.testing.assert_array_equal(table.true_value, expected.to_numpy())
    assert table.labels == tuple(expected.index)
    assert table.column_labels == tuple(expected.columns)
    assert table.true_value.shape == (2, 2)


def test_adult_bounded_sum_matches_pandas(adult):
    answer = bounded_sum(adult, "age", lower=20, upper=60)
    assert answer.true_value == adult["age"].clip(20, 60).sum()
    assert answer.clamped_rows == ((adult["age"] < 20) | (adult["age"] > 60)).sum()
    assert answer.clamped_rows > 0
    assert answer.l1_sensitivity == answer.l2_sensitivity == 60
    assert answer.integer_valued
    # bounds wider than the data clamp nothing
    assert bounded_sum(adult, "age", lower=0, upper=120).clamped_rows == 0
    assert bounded_sum(adult, "age", lower=0, upper=120).true_value == adult["age"].sum()


# --- small frames, answers by hand ------------------------------------------------------------


@pytest.fixture
def people() -> pd.DataFrame:
    return pd.DataFrame({
        "age": [10.0, 25.0, np.nan, 70.0, 40.0],
        "city": ["a", "b", "a", None, "c"],
        "smoker": ["y", "n", "n", "y", "n"],
        "children": [0, 2, 1, 3, 0],
    })


def test_count_and_count_where_by_hand(people):
    assert count(people).true_value == 5
    assert count(people).true_value.shape == ()
    assert count_where(people, "smoker", "y").true_value == 2
    assert count_where(people, "city", "z").true_value == 0
    assert count_where(people, "city", np.nan).true_value == 0  # missing equals nothing
    assert count(people).integer_valued


def test_bounded_sum_by_hand(people):
    # 10 -> 20, 25, (missing dropped), 70 -> 60, 40: 20 + 25 + 60 + 40 = 145
    answer = bounded_sum(people, "age", lower=20, upper=60)
    assert answer.true_value == 145
    assert answer.clamped_rows == 2
    assert answer.missing_rows == 1
    assert (answer.lower, answer.upper) == (20, 60)
    assert not answer.integer_valued  # a float column
    # with a negative bound the sensitivity is the larger magnitude: max(|-5|, |3|) = 5
    signed = bounded_sum(people, "age", lower=-5, upper=3)
    assert signed.true_value == 3 * 4
    assert signed.l1_sensitivity == signed.l2_sensitivity == 5
    assert signed.clamped_rows == 4
    # an integer column with whole-number bounds is integer-valued: 0 + 2 + 1 + 2 + 0
    kids = bounded_sum(people, "children", lower=0, upper=2)
    assert kids.true_value == 5 and kids.integer_valued and kids.clamped_rows == 1
    assert not bounded_sum(people, "children", lower=0, upper=2.5).integer_valued


def test_histogram_keeps_zero_cells_for_declared_categories(people):
    answer = histogram(people, "city", categories=["a", "b", "c", "d"])
    np.testing.assert_array_equal(answer.true_value, [2, 1, 1, 0])
    assert answer.labels == ("a", "b", "c", "d")
    assert answer.missing_rows == 1
    assert answer.l1_sensitivity == answer.l2_sensitivity == 1


def test_histogram_default_categories_from_pandas_categorical():
    frame = pd.DataFrame({"grade": pd.Categorical(["x", "x", "z"], categories=["z", "y", "x"])})
    answer = histogram(frame, "grade")
    assert answer.labels == ("z", "y", "x")  # the declared order, the unused "y" kept
    np.testing.assert_array_equal(answer.true_value, [1, 0, 2])


def test_histogram_of_numbers_labels_them_as_text():
    frame = pd.DataFrame({"years": [13, 9, 13, 16]})
    answer = histogram(frame, "years", categories=[9, 13, 16, 20])
    np.testing.assert_array_equal(answer.true_value, [1, 2, 1, 0])
    assert answer.labels == ("9", "13", "16", "20")
    assert histogram(frame, "years").labels == ("9", "13", "16")


def test_crosstab_by_hand(people):
    answer = crosstab(people, "city", "smoker", row_categories=["a", "b", "c", "d"],
                      column_categories=["n", "y"])
    # a: n (row 2), y (row 0); b: n; c: n; d: nobody; row 3 (city missing) not counted
    np.testing.assert_array_equal(answer.true_value, [[1, 1], [1, 0], [1, 0], [0, 0]])
    assert answer.labels == ("a", "b", "c", "d")
    assert answer.column_labels == ("n", "y")
    assert answer.missing_rows == 1
    assert answer.l1_sensitivity == answer.l2_sensitivity == 1


def test_bounded_mean_parts_count_the_same_rows(people):
    total, n = bounded_mean_parts(people, "age", lower=20, upper=60)
    assert total.true_value == 145
    assert n.true_value == 4  # the missing age is in neither part
    assert n.l1_sensitivity == 1 and n.integer_valued


def test_true_value_is_read_only(people):
    answer = histogram(people, "smoker")
    with pytest.raises(ValueError):
        answer.true_value[0] = 99


def test_empty_frame():
    empty = pd.DataFrame({"v": pd.Series([], dtype=float), "c": pd.Series([], dtype=object)})
    assert count(empty).true_value == 0
    assert bounded_sum(empty, "v", lower=0, upper=1).true_value == 0
    np.testing.assert_array_equal(histogram(empty, "c", categories=["a", "b"]).true_value, [0, 0])
    with pytest.raises(ValueError, match="declare categories"):
        histogram(empty, "c")


# --- validation -------------------------------------------------------------------------------


def test_missing_column_is_named(people):
    with pytest.raises(ValueError, match="'salary'"):
        bounded_sum(people, "salary", lower=0, upper=1)
    with pytest.raises(ValueError, match="'salary'"):
        count_where(people, "salary", 3)
    with pytest.raises(ValueError, match="'salary'"):
        crosstab(people, "city", "salary")


@pytest.mark.parametrize(
    ("lower", "upper", "name"),
    [(5, 5, "lower"), (6, 5, "lower"), (np.nan, 5, "lower"), (0, np.inf, "upper"),
     (-np.inf, 0, "lower"), (0, np.nan, "upper")],
)
def test_bad_bounds(people, lower, upper, name):
    with pytest.raises(ValueError, match=name):
        bounded_sum(people, "age", lower=lower, upper=upper)


def test_sum_of_text_is_a_type_error(people):
    with pytest.raises(TypeError, match="'city' must be numeric"):
        bounded_sum(people, "city", lower=0, upper=1)


def test_not_a_frame():
    with pytest.raises(TypeError, match="DataFrame"):
        count([1, 2, 3])


def test_bad_categories(people):
    with pytest.raises(ValueError, match="not in categories"):
        histogram(people, "city", categories=["a", "b"])  # "c" is undeclared
    with pytest.raises(ValueError, match="repeat"):
        histogram(people, "city", categories=["a", "a", "b", "c"])
    with pytest.raises(ValueError, match="repeat"):
        histogram(people, "children", categories=[0, 1, 2, 3, 3.0])  # 3 == 3.0
    with pytest.raises(ValueError, match="at least one"):
        histogram(people, "city", categories=[])
    with pytest.raises(TypeError, match="categories"):
        histogram(people, "city", categories="abc")
    with pytest.raises(ValueError, match="missing"):
        histogram(people, "city", categories=["a", "b", "c", None])
    with pytest.raises(ValueError, match="column_categories"):
        crosstab(people, "city", "smoker", column_categories=["n"])


# --- the sensitivity claim, brute-forced over neighbours ------------------------------------


def _random_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    values = rng.uniform(-40, 40, size=n).round(1)
    values[rng.random(n) < 0.15] = np.nan
    colour = rng.choice(["red", "green", "blue"], size=n).astype(object)
    colour[rng.random(n) < 0.15] = None
    size = rng.choice(["S", "M", "L", "XL"], size=n)
    return pd.DataFrame({"value": values, "colour": colour, "size": size})


QUERIES = {
    "count": count,
    "count_where": lambda f: count_where(f, "size", "M"),
    "bounded_sum": lambda f: bounded_sum(f, "value", lower=-3.0, upper=10.0),
    "bounded_sum_negative": lambda f: bounded_sum(f, "value", lower=-25.0, upper=-5.0),
    "histogram": lambda f: histogram(f, "colour", categories=["red", "green", "blue", "grey"]),
    "crosstab": lambda f: crosstab(f, "colour", "size",
                                   row_categories=["red", "green", "blue"],
                                   column_categories=["S", "M", "L", "XL"]),
    "mean_count": lambda f: bounded_mean_parts(f, "value", lower=-3.0, upper=10.0)[1],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(QUERIES))
def test_no_neighbour_changes_an_answer_by_more_than_its_sensitivity(name):
    query = QUERIES[name]
    rng = np.random.default_rng(7)
    # rows to add: random ones plus extremes beyond both bounds and a missing value
    extra = pd.concat([
        _random_frame(rng, 12),
        pd.DataFrame({"value": [1e6, -1e6, np.nan], "colour": ["red", "blue", None],
                      "size": ["M", "S", "XL"]}),
    ], ignore_index=True)
    worst_l1 = worst_l2 = 0.0
    for n in [0, 1, 2, 5, 8] * 4:
        frame = _random_frame(rng, n)
        base = query(frame)
        neighbours = [frame.drop(index=i) for i in frame.index]
        neighbours += [pd.concat([frame, extra.iloc[[j]]], ignore_index=True)
                       for j in range(len(extra))]
        for neighbour in neighbours:
            change = (query(neighbour).true_value - base.true_value).ravel()
            l1, l2 = np.abs(change).sum(), math.sqrt((change**2).sum())
            assert l1 <= base.l1_sensitivity + 1e-9, (name, n)
            assert l2 <= base.l2_sensitivity + 1e-9, (name, n)
            worst_l1, worst_l2 = max(worst_l1, l1), max(worst_l2, l2)
    # the declared sensitivities are also attained: they are not loose
    assert worst_l1 == pytest.approx(base.l1_sensitivity)
    assert worst_l2 == pytest.approx(base.l2_sensitivity)


def test_sum_sensitivity_from_its_definition():
    frame = pd.DataFrame({"v": [1.0, 2.0]})
    for lower, upper in [(0, 1), (-7, 3), (-2, -1), (0.5, 90)]:
        answer = bounded_sum(frame, "v", lower=lower, upper=upper)
        assert answer.l1_sensitivity == answer.l2_sensitivity == max(abs(lower), abs(upper))


# --- noisy mean -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def age_parts(adult):
    return bounded_mean_parts(adult, "age", lower=17, upper=90)


def _delta_method_sd(true_mean: float, n: float, sum_sd: float, count_sd: float) -> float:
    # sd of S/C for S = n·mean + noise_S, C = n + noise_C, to first order in the noise
    return math.sqrt(sum_sd**2 + (true_mean * count_sd) ** 2) / n


@pytest.mark.parametrize(
    ("mechanism", "budget", "share", "sum_sd", "count_sd"),
    [
        # Laplace(b) has sd sqrt(2)·b; b = sensitivity / (epsilon share)
        ("laplace", {"epsilon": 1.0}, 0.5, math.sqrt(2) * 90 / 0.5, math.sqrt(2) / 0.5),
        ("laplace", {"epsilon": 1.0}, 0.2, math.sqrt(2) * 90 / 0.2, math.sqrt(2) / 0.8),
        # zCDP Gaussian: sigma = sensitivity / sqrt(2 rho share)
        ("gaussian", {"rho": 0.5}, 0.5, 90 / math.sqrt(0.5), 1 / math.sqrt(0.5)),
        # two-sided geometric with a = exp(-epsilon share / sensitivity): var = 2a / (1 - a)^2
        ("geometric", {"epsilon": 1.0}, 0.5,
         math.sqrt(2 * math.exp(-0.5 / 90)) / (1 - math.exp(-0.5 / 90)),
         math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5))),
    ],
)
def test_noisy_mean_is_nearly_unbiased_with_the_split_spread(
    adult, age_parts, mechanism, budget, share, sum_sd, count_sd
):
    total, n = age_parts
    true_mean = adult["age"].clip(17, 90).mean()
    trials = 20_000
    means = noisy_mean(total, n, mechanism=mechanism, sum_share=share, trials=trials,
                       rng=np.random.default_rng(42), **budget)
    assert means.shape == (trials,)
    expected_sd = _delta_method_sd(true_mean, len(adult), sum_sd, count_sd)
    # the mean of 20,000 draws is within 5 standard errors of the truth
    assert abs(means.mean() - true_mean) < 5 * expected_sd / math.sqrt(trials)
    # the spread matches the budget split (sd of a sample sd ≈ 0.5% here; 3% tolerance)
    assert means.std() == pytest.approx(expected_sd, rel=0.03)


def test_noisy_mean_shapes_and_clamping(people):
    total, n = bounded_mean_parts(people, "age", lower=20, upper=60)
    rng = np.random.default_rng(5)
    one = noisy_mean(total, n, mechanism="laplace", epsilon=1.0, rng=rng)
    assert one.shape == ()
    # a tiny budget on 4 rows: the noise dwarfs the data, yet every mean lies in the bounds
    many = noisy_mean(total, n, mechanism="laplace", epsilon=0.01, rng=rng, trials=10_000)
    assert many.shape == (10_000,)
    assert np.all(np.isfinite(many))
    assert many.min() >= 20 and many.max() <= 60
    assert many.min() == 20 and many.max() == 60  # the clamp is actually reached


def test_mean_privacy_is_the_composition_of_its_parts(age_parts):
    total, n = age_parts
    laplace = mean_privacy(total, n, mechanism="laplace", epsilon=1.0, sum_share=0.3)
    assert isinstance(laplace, PureDP)
    assert laplace.epsilon == pytest.approx(1.0, rel=1e-12) and laplace.epsilon <= 1.0
    parts = compose(Laplace(sensitivity=90, epsilon=0.3).privacy,
                    Laplace(sensitivity=1, epsilon=0.7).privacy)
    assert laplace.epsilon == pytest.approx(parts.epsilon, rel=1e-12)

    geometric = mean_privacy(total, n, mechanism="geometric", epsilon=2.0)
    parts = compose(Geometric(sensitivity=90, epsilon=1.0).privacy,
                    Geometric(sensitivity=1, epsilon=1.0).privacy)
    assert geometric.epsilon == pytest.approx(parts.epsilon) == pytest.approx(2.0)

    zcdp = mean_privacy(total, n, mechanism="gaussian", rho=0.5, sum_share=0.75)
    assert isinstance(zcdp, ZCDP)
    assert zcdp.rho == pytest.approx(0.5, rel=1e-12) and zcdp.rho <= 0.5
    parts = compose(Gaussian(sensitivity=90, rho=0.375).privacy,
                    Gaussian(sensitivity=1, rho=0.125).privacy)
    assert zcdp.rho == pytest.approx(parts.rho, rel=1e-12)

    approx = mean_privacy(total, n, mechanism="gaussian", epsilon=1.0, delta=1e-6)
    assert isinstance(approx, ApproxDP)
    assert approx.epsilon == pytest.approx(1.0) and approx.epsilon <= 1.0
    assert approx.delta == pytest.approx(1e-6) and approx.delta <= 1e-6


def test_budget_split_never_overspends():
    # shares whose products round: the two parts must never add to more than the budget
    frame = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
    total, n = bounded_mean_parts(frame, "v", lower=0, upper=5)
    for epsilon in [0.1, 0.3, 0.7, 1.1, 2.9, 3.3]:
        for share in [0.1, 0.3, 1 / 3, 0.7, 0.9]:
            measure = mean_privacy(total, n, mechanism="laplace", epsilon=epsilon,
                                   sum_share=share)
            assert measure.epsilon <= epsilon
            assert measure.epsilon == pytest.approx(epsilon, rel=1e-12)


def test_noisy_mean_validation(people, age_parts):
    total, n = age_parts
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="mechanism"):
        noisy_mean(total, n, mechanism="cauchy", epsilon=1.0, rng=rng)
    for share in [0.0, 1.0, float("nan"), 1.5]:
        with pytest.raises(ValueError, match="sum_share"):
            noisy_mean(total, n, mechanism="laplace", epsilon=1.0, sum_share=share, rng=rng)
    with pytest.raises(ValueError, match="epsilon"):
        noisy_mean(total, n, mechanism="laplace", epsilon=float("nan"), rng=rng)
    with pytest.raises(ValueError, match="epsilon"):
        noisy_mean(total, n, mechanism="laplace", rng=rng)
    with pytest.raises(ValueError, match="delta"):
        noisy_mean(total, n, mechanism="laplace", epsilon=1.0, delta=1e-5, rng=rng)
    with pytest.raises(ValueError, match="rho"):
        noisy_mean(total, n, mechanism="gaussian", epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="delta"):
        noisy_mean(total, n, mechanism="gaussian", epsilon=1.0, delta=1.0, rng=rng)
    with pytest.raises(ValueError, match="not both"):
        noisy_mean(total, n, mechanism="gaussian", rho=1.0, epsilon=1.0, rng=rng)
    float_total, float_n = bounded_mean_parts(people, "age", lower=20, upper=60)
    with pytest.raises(ValueError, match="integer"):
        noisy_mean(float_total, float_n, mechanism="geometric", epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="bounded_sum"):
        noisy_mean(n, n, mechanism="laplace", epsilon=1.0, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        noisy_mean(total, n, mechanism="laplace", epsilon=1.0, rng=np.random.RandomState(0))
    with pytest.raises(TypeError, match="QueryAnswer"):
        noisy_mean(45.0, n, mechanism="laplace", epsilon=1.0, rng=rng)
    histogram_answer = histogram(people, "smoker")
    with pytest.raises(ValueError, match="scalar"):
        noisy_mean(total, histogram_answer, mechanism="laplace", epsilon=1.0, rng=rng)


def test_query_answer_validates_sensitivity():
    with pytest.raises(ValueError, match="l1_sensitivity"):
        QueryAnswer(true_value=np.array(1.0), l1_sensitivity=0.0, l2_sensitivity=1.0,
                    integer_valued=True)
    with pytest.raises(ValueError, match="l2_sensitivity"):
        QueryAnswer(true_value=np.array(1.0), l1_sensitivity=1.0, l2_sensitivity=np.nan,
                    integer_valued=True)
