"""Tests for dpcore.learning: the private Gaussian naive Bayes and its accuracy sweep.

Without noise the model must be scikit-learn's GaussianNB exactly; with noise, the released
statistics must carry the declared sensitivities and noise scales, checked here from the bounds.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.data
import pytest
from scipy import stats
from sklearn.naive_bayes import GaussianNB

from dpcore import BoundedLaplace, Laplace
from dpcore.learning import (
    MIN_VARIANCE_FRACTION,
    NOISE_FLOOR,
    PrivateGaussianNB,
    _bounded_domains,
    accuracy_vs_epsilon,
)
from dpcore.measures import PureDP, compose

ROOT = Path(__file__).resolve().parents[2]

IRIS_FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
# Public botanical ranges (cm), not read from the data.
IRIS_BOUNDS = {"sepal_length": (4.0, 8.0), "sepal_width": (2.0, 4.5),
               "petal_length": (1.0, 7.0), "petal_width": (0.0, 2.5)}
IRIS_CLASSES = ["setosa", "versicolor", "virginica"]

ADULT_FEATURES = ["age", "education_num", "hours_per_week", "capital_gain", "capital_loss"]
# The census codebook's ranges (capital gain is top-coded at 99999).
ADULT_BOUNDS = {"age": (17, 90), "education_num": (1, 16), "hours_per_week": (1, 99),
                "capital_gain": (0, 99999), "capital_loss": (0, 4356)}
ADULT_CLASSES = ["<=50K", ">50K"]


def split(frame: pd.DataFrame, seed: int, train_share: float):
    order = np.random.default_rng(seed).permutation(len(frame))
    cut = int(train_share * len(frame))
    return frame.iloc[order[:cut]], frame.iloc[order[cut:]]


@pytest.fixture(scope="module")
def iris():
    return split(plotly.data.iris(), seed=0, train_share=2 / 3)


@pytest.fixture(scope="module")
def adult():
    return split(pd.read_csv(ROOT / "data" / "adult.csv.gz"), seed=1, train_share=2 / 3)


def sklearn_on_clamped(train, features, bounds, target):
    lower = np.array([bounds[f][0] for f in features], dtype=float)
    upper = np.array([bounds[f][1] for f in features], dtype=float)
    clamped = np.clip(train[features].to_numpy(dtype=float), lower, upper)
    return GaussianNB().fit(clamped, train[target].to_numpy())


def assert_same_as_sklearn(model, reference, test, features):
    np.testing.assert_array_equal(model.classes_, reference.classes_)
    np.testing.assert_allclose(model.class_prior_, reference.class_prior_, rtol=1e-14)
    np.testing.assert_allclose(model.theta_, reference.theta_, rtol=1e-13)
    np.testing.assert_allclose(model.var_, reference.var_, rtol=1e-13)
    assert model.smoothing_ == pytest.approx(reference.epsilon_, rel=1e-13)
    data = test[features].to_numpy(dtype=float)
    np.testing.assert_allclose(
        model.predict_joint_log_proba(test), reference.predict_joint_log_proba(data), rtol=1e-12
    )
    predicted = model.predict(test)
    assert np.mean(predicted == reference.predict(data)) == 1.0


# -- without noise: exactly scikit-learn --------------------------------------------------


def test_no_noise_equals_sklearn_on_iris(iris):
    train, test = iris
    data = train[IRIS_FEATURES].to_numpy()
    for f, (lo, hi) in IRIS_BOUNDS.items():  # the bounds hold, so clamping changes nothing
        assert train[f].between(lo, hi).all() and test[f].between(lo, hi).all()
    model = PrivateGaussianNB(epsilon=None, bounds=IRIS_BOUNDS).fit(train, train["species"])
    reference = GaussianNB().fit(data, train["species"].to_numpy())
    assert_same_as_sklearn(model, reference, test, IRIS_FEATURES)
    assert_same_as_sklearn(model, reference, train, IRIS_FEATURES)
    assert model.privacy is None and model.budget_split == {}
    assert model.score(test, test["species"]) == pytest.approx(
        reference.score(test[IRIS_FEATURES].to_numpy(), test["species"].to_numpy()))


def test_no_noise_equals_sklearn_on_adult(adult):
    train, test = adult
    model = PrivateGaussianNB(epsilon=None, bounds=ADULT_BOUNDS).fit(train, train["income"])
    reference = sklearn_on_clamped(train, ADULT_FEATURES, ADULT_BOUNDS, "income")
    assert_same_as_sklearn(model, reference, test, ADULT_FEATURES)


def test_clamping_matches_sklearn_on_clamped_data(adult):
    train, test = adult
    tight = dict(ADULT_BOUNDS, capital_gain=(0, 20000), age=(20, 70))
    assert (train["capital_gain"] > 20000).any()  # the clamp really bites
    model = PrivateGaussianNB(epsilon=None, bounds=tight).fit(train, train["income"])
    reference = sklearn_on_clamped(train, ADULT_FEATURES, tight, "income")
    assert_same_as_sklearn(model, reference, test, ADULT_FEATURES)


def test_columns_by_name_or_position(iris):
    train, test = iris
    by_name = PrivateGaussianNB(epsilon=None, bounds=IRIS_BOUNDS).fit(
        train[IRIS_FEATURES[::-1] + ["species"]], train["species"])
    by_position = PrivateGaussianNB(epsilon=None, bounds=list(IRIS_BOUNDS.values())).fit(
        train[IRIS_FEATURES].to_numpy(), train["species"].to_numpy())
    np.testing.assert_array_equal(by_name.theta_, by_position.theta_)
    np.testing.assert_array_equal(by_name.predict(test),
                                  by_position.predict(test[IRIS_FEATURES].to_numpy()))


# -- with noise -----------------------------------------------------------------------------


@pytest.mark.parametrize("noise", ["laplace", "bounded_laplace"])
def test_accuracy_rises_with_epsilon(iris, noise):
    train, test = iris
    result = accuracy_vs_epsilon(
        train[IRIS_FEATURES], train["species"], test[IRIS_FEATURES], test["species"],
        epsilons=[0.01, 10.0], bounds=IRIS_BOUNDS, noise=noise, repetitions=20, seed=7,
        classes=IRIS_CLASSES,
    )
    assert result["accuracies"].shape == (2, 20)
    low, high = result["median"]
    assert low < 0.5 < 0.75 < high  # near chance (1/3) at 0.01, useful at 10
    assert np.all(result["p05"] <= result["median"]) and np.all(result["median"] <= result["p95"])
    assert result["baseline"] == pytest.approx(
        GaussianNB().fit(train[IRIS_FEATURES].to_numpy(), train["species"].to_numpy())
        .score(test[IRIS_FEATURES].to_numpy(), test["species"].to_numpy()))


def test_accuracy_sweep_on_adult_is_reproducible(adult):
    train, test = adult
    args = (train, train["income"], test, test["income"])
    kwargs = dict(epsilons=[0.01, 1.0], bounds=ADULT_BOUNDS, repetitions=5, seed=3,
                  classes=ADULT_CLASSES)
    first = accuracy_vs_epsilon(*args, **kwargs)
    np.testing.assert_array_equal(first["accuracies"], accuracy_vs_epsilon(*args, **kwargs)
                                  ["accuracies"])
    assert first["median"][1] >= first["median"][0] - 0.01
    assert first["median"][1] == pytest.approx(first["baseline"], abs=0.03)


@pytest.mark.parametrize("noise", ["laplace", "bounded_laplace"])
def test_budget_split_sums_to_epsilon(noise):
    epsilon, d = 0.9, len(IRIS_BOUNDS)
    model = PrivateGaussianNB(epsilon=epsilon, bounds=IRIS_BOUNDS, noise=noise)
    assert set(model.budget_split) == {"counts", "sums", "sums_of_squares"}
    assert math.fsum(model.budget_split.values()) == pytest.approx(epsilon, rel=1e-15)
    assert model.epsilon_per_feature == pytest.approx(epsilon / (3 * d), rel=1e-15)
    # counts (one histogram) + d sums + d sums of squares, composed sequentially
    parts = [PureDP(model.budget_split["counts"])] + [PureDP(model.epsilon_per_feature)] * 2 * d
    assert compose(*parts).epsilon == pytest.approx(epsilon, rel=1e-14)
    assert model.privacy == PureDP(epsilon)


SMALL_BOUNDS = [(-1.0, 3.0), (10.0, 20.0)]


def small_data(rows: int = 30, seed: int = 5):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(-1, 3, rows), rng.uniform(10, 20, rows)])
    y = rng.choice(np.array(["a", "b"]), rows)
    return X, y


def test_declared_sensitivities_match_brute_force_neighbours():
    """Add or remove one row: each released statistic moves by at most its sensitivity."""
    X, y = small_data()
    half_width = np.array([(3 - (-1)) / 2, (20 - 10) / 2])  # from the bounds, by hand
    model = PrivateGaussianNB(epsilon=1.0, bounds=SMALL_BOUNDS)
    assert model.sensitivities["counts"] == 1.0
    np.testing.assert_allclose(model.sensitivities["sums"], half_width)
    np.testing.assert_allclose(model.sensitivities["sums_of_squares"], half_width**2)

    def released(X_, y_):
        fit = PrivateGaussianNB(epsilon=None, bounds=SMALL_BOUNDS, classes=["a", "b"])
        return fit.fit(X_, y_).released_

    base = released(X, y)
    worst = {part: np.zeros(2) for part in ("counts", "sums", "sums_of_squares")}
    corners = [np.array([a, b]) for a in (-1.0, 1.0, 3.0, 50.0) for b in (10.0, 15.0, -40.0)]
    neighbours = [(np.vstack([X, c]), np.append(y, label)) for c in corners for label in "ab"]
    neighbours += [(np.delete(X, i, axis=0), np.delete(y, i)) for i in range(len(y))]
    for X2, y2 in neighbours:
        other = released(X2, y2)
        worst["counts"] = np.maximum(worst["counts"],
                                     np.abs(other["counts"] - base["counts"]).sum())
        for part in ("sums", "sums_of_squares"):
            # one row is in one class: the change is in one row of the (class, feature) table
            change = np.abs(other[part] - base[part]).max(axis=0)
            worst[part] = np.maximum(worst[part], change)
    assert np.all(worst["counts"] <= 1.0)
    np.testing.assert_allclose(worst["sums"], half_width)  # attained at a corner: tight
    np.testing.assert_allclose(worst["sums_of_squares"], half_width**2)


def test_laplace_noise_scales_are_sensitivity_over_epsilon():
    X, y = small_data()
    epsilon = 0.6
    model = PrivateGaussianNB(epsilon=epsilon, bounds=SMALL_BOUNDS, classes=["a", "b"])
    model.fit(X, y, rng=np.random.default_rng(0))
    half_width = np.array([2.0, 5.0])
    per_feature = epsilon / 3 / 2  # a third of epsilon, split over 2 features
    assert model.noise_scales_["counts"] == pytest.approx(1 / (epsilon / 3), rel=1e-14)
    np.testing.assert_allclose(model.noise_scales_["sums"],
                               np.broadcast_to(half_width / per_feature, (2, 2)), rtol=1e-14)
    np.testing.assert_allclose(model.noise_scales_["sums_of_squares"],
                               np.broadcast_to(half_width**2 / per_feature, (2, 2)), rtol=1e-14)


@pytest.mark.slow
def test_released_noise_is_laplace_with_the_declared_scale():
    """4000 private fits: released minus exact statistics follow Laplace(scale), by KS test.

    With a 20% wrong scale the same samples are rejected (the test has power), p < 1e-3.
    """
    X, y = small_data()
    exact = PrivateGaussianNB(epsilon=None, bounds=SMALL_BOUNDS, classes=["a", "b"])
    exact = exact.fit(X, y).released_
    epsilon = 1.5
    rng = np.random.default_rng(11)
    model = PrivateGaussianNB(epsilon=epsilon, bounds=SMALL_BOUNDS, classes=["a", "b"])
    draws = {"counts": [], "sums": [], "sums_of_squares": []}
    for _ in range(4000):
        model.fit(X, y, rng=rng)
        draws["counts"].append(model.released_["counts"][0] - exact["counts"][0])
        draws["sums"].append(model.released_["sums"][1, 1] - exact["sums"][1, 1])
        draws["sums_of_squares"].append(
            model.released_["sums_of_squares"][0, 0] - exact["sums_of_squares"][0, 0])
    scales = {"counts": 1 / (epsilon / 3), "sums": 5.0 / (epsilon / 6),
              "sums_of_squares": 2.0**2 / (epsilon / 6)}
    for part, scale in scales.items():
        noise = np.array(draws[part])
        assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > 1e-3, part
        assert stats.kstest(noise, stats.laplace(scale=1.2 * scale).cdf).pvalue < 1e-3, part


def test_bounded_laplace_stays_in_its_domains_with_calibrated_scales():
    X, y = small_data()
    epsilon = 0.5
    rng = np.random.default_rng(2)
    half_width = np.array([2.0, 5.0])
    for _ in range(50):
        model = PrivateGaussianNB(epsilon=epsilon, bounds=SMALL_BOUNDS, noise="bounded_laplace",
                                  classes=["a", "b"]).fit(X, y, rng=rng)
        counts = np.maximum(model.released_["counts"], 1.0)
        m = _bounded_domains(model.released_["counts"])[:, None]
        # the domain is the released count rounded up by less than one grid step (2^(1/64))
        assert np.all((counts <= m[:, 0]) & (m[:, 0] < counts * 2 ** (1 / 64) * (1 + 1e-12)))
        assert np.all(np.abs(model.released_["sums"]) <= m * half_width + 1e-9)
        sq = model.released_["sums_of_squares"]
        assert np.all((sq >= 0) & (sq <= m * half_width**2 + 1e-9))
        # the scale is the bounded Laplace calibration for that class's domain, in feature units
        for c in range(2):
            unit = BoundedLaplace(sensitivity=1.0, lower=-float(m[c, 0]), upper=float(m[c, 0]),
                                  epsilon=epsilon / 6)
            np.testing.assert_allclose(model.noise_scales_["sums"][c], unit.scale * half_width)
            assert np.all(model.noise_scales_["sums"][c] >= half_width / (epsilon / 6))
        assert unit.privacy == PureDP(epsilon / 6)


def test_bounded_domains_are_few_and_cover_the_released_counts():
    """Trials share calibrated mechanisms: 10,000 noisy counts fall on a few dozen domains."""
    counts = np.random.default_rng(3).laplace(50.0, 6.0, size=(5000, 2))
    domains = _bounded_domains(counts)
    assert np.all(domains >= np.maximum(counts, 1.0))
    assert np.unique(domains).size < 64 * math.log2(domains.max() / domains.min()) + 2
    steps = np.log2(np.unique(domains)) * 64  # on the grid 2^(i/64)
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-9)
    assert np.all(_bounded_domains(np.array([-5.0, 0.0, 1.0])) == 1.0)
    huge = _bounded_domains(np.array([1.79e308]))  # rounding up would overflow: kept as is
    assert huge[0] == 1.79e308


def test_post_processing_keeps_the_model_valid():
    """Tiny epsilon: priors, means and variances stay usable whatever the noise."""
    X, y = small_data()
    rng = np.random.default_rng(4)
    lower, upper = np.array([-1.0, 10.0]), np.array([3.0, 20.0])
    for noise in ("laplace", "bounded_laplace"):
        for _ in range(100):
            model = PrivateGaussianNB(epsilon=1e-3, bounds=SMALL_BOUNDS, noise=noise,
                                      classes=["a", "b"]).fit(X, y, rng=rng)
            assert np.all(model.class_prior_ > 0) and model.class_prior_.sum() == pytest.approx(1)
            assert np.all((model.theta_ >= lower) & (model.theta_ <= upper))
            floor = MIN_VARIANCE_FRACTION * ((upper - lower) / 2) ** 2
            assert np.all(model.var_ >= floor)
            m = np.maximum(model.released_["counts"], 1.0)[:, None]
            noise_sd = math.sqrt(2) * model.noise_scales_["sums_of_squares"] / m
            assert np.all(model.var_ >= NOISE_FLOOR * noise_sd)
            assert np.all(np.isfinite(model.predict_joint_log_proba(X)))


# -- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon_rejected(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        PrivateGaussianNB(epsilon=epsilon, bounds=SMALL_BOUNDS)


@pytest.mark.parametrize("bounds, error", [
    ([(1.0, 1.0)], ValueError), ([(2.0, 1.0)], ValueError), ([(float("nan"), 1.0)], ValueError),
    ([(0.0, float("inf"))], ValueError), ({"age": (0, 1, 2)}, TypeError), ("0,1", TypeError),
    ([], ValueError), ([(0.0, "1")], TypeError),
])
def test_bad_bounds_rejected(bounds, error):
    with pytest.raises(error, match="bounds"):
        PrivateGaussianNB(epsilon=1.0, bounds=bounds)


def test_bad_inputs_rejected():
    X, y = small_data()
    model = PrivateGaussianNB(epsilon=1.0, bounds=SMALL_BOUNDS, classes=["a", "b"])
    with pytest.raises(ValueError, match="noise"):
        PrivateGaussianNB(epsilon=1.0, bounds=SMALL_BOUNDS, noise="gaussian")
    with pytest.raises(ValueError, match="var_smoothing"):
        PrivateGaussianNB(epsilon=1.0, bounds=SMALL_BOUNDS, var_smoothing=float("nan"))
    with pytest.raises(RuntimeError, match="fit"):
        model.predict(X)
    with pytest.raises(TypeError, match="rng"):
        model.fit(X, y)
    with pytest.raises(TypeError, match="rng"):
        model.fit(X, y, rng=np.random.RandomState(0))
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        model.fit(bad, y, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="X"):
        model.fit(X[:, :1], y, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="y"):
        model.fit(X, y[:-1], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="classes"):
        model.fit(X, np.where(y == "a", "c", y), rng=np.random.default_rng(0))
    with pytest.warns(UserWarning, match="classes"):
        PrivateGaussianNB(epsilon=1.0, bounds=SMALL_BOUNDS).fit(X, y, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="X lacks"):
        PrivateGaussianNB(epsilon=None, bounds={"age": (0, 1)}).fit(
            pd.DataFrame({"height": [0.5]}), ["a"])


def test_bad_sweep_arguments_rejected():
    X, y = small_data()
    common = dict(bounds=SMALL_BOUNDS, seed=0, classes=["a", "b"])
    with pytest.raises(ValueError, match="epsilons"):
        accuracy_vs_epsilon(X, y, X, y, epsilons=[1.0, 0.0], **common)
    with pytest.raises(ValueError, match="epsilons"):
        accuracy_vs_epsilon(X, y, X, y, epsilons=[], **common)
    with pytest.raises(ValueError, match="repetitions"):
        accuracy_vs_epsilon(X, y, X, y, epsilons=[1.0], repetitions=0, **common)
    with pytest.raises(TypeError, match="seed"):
        accuracy_vs_epsilon(X, y, X, y, epsilons=[1.0], bounds=SMALL_BOUNDS, seed=1.5)


def test_what_a_fit_spends_adds_up_to_at_most_epsilon():
    """Counts at ε/3, then 2d sums at ε/(3d): in exact arithmetic never above ε (the float
    quotients round up about as often as down)."""
    from fractions import Fraction

    rng = np.random.default_rng(17)
    for _ in range(2000):
        epsilon, d = 10 ** rng.uniform(-3, 1.5), int(rng.integers(1, 15))
        model = PrivateGaussianNB(epsilon=epsilon, bounds=[(0.0, 1.0)] * d)
        counts = Laplace(sensitivity=1.0, epsilon=model.budget_split["counts"])
        per_feature = Laplace(sensitivity=1.0, epsilon=model.epsilon_per_feature)
        spent = Fraction(counts.privacy.epsilon) + 2 * d * Fraction(per_feature.privacy.epsilon)
        assert spent <= Fraction(epsilon)
        assert model.epsilon_per_feature == pytest.approx(epsilon / (3 * d), rel=1e-14)
