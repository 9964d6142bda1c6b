"""Property tests of dpcore.learning: private Gaussian naive Bayes.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpcore import learning
from tests.dpcore.properties.oracle import (
    HUGE,
    INF,
    NAN,
    PROPERTY,
    TINY,
    Arg,
    any_arrays,
    as_real,
    assert_finite,
    attempt,
    bounded_time,
    choices,
    covers,
    epsilon_grids,
    grid_tag,
    names,
    numeric_or_none,
    ok,
    positive,
    refused,
    rngs,
    run_regression,
    tagged,
)

ROWS, LABELS = np.array([[0.0], [1.0], [0.5], [0.2]]), np.array([0, 1, 0, 1])



@st.composite
def classification_data(draw):
    """Declared bounds, training and test rows (some outside the bounds) and labels."""
    d = draw(st.integers(1, 3))
    lower = np.array(draw(st.lists(st.floats(-100, 0), min_size=d, max_size=d)))
    upper = lower + np.array(draw(st.lists(st.floats(0.1, 100), min_size=d, max_size=d)))
    labels = draw(st.sampled_from([[0, 1], [0, 1, 2], ["a", "b"]]))

    def rows(n):
        return (draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-200, 200))),
                np.array(draw(st.lists(st.sampled_from(labels), min_size=n, max_size=n))))

    x_train, y_train = rows(draw(st.integers(1, 8)))
    x_test, y_test = rows(draw(st.integers(1, 5)))
    return [tuple(pair) for pair in zip(lower, upper, strict=True)], labels, (x_train, y_train,
                                                                             x_test, y_test)



def feature_bounds(good: list) -> st.SearchStrategy[Arg]:
    d = len(good)
    return tagged(
        st.sampled_from([good, {f"f{i}": b for i, b in enumerate(good)}]),
        st.sampled_from([[(-1e150, 1e150)] * d, [(0.0, 1e-150)] * d, [(-1e300, 1e300)] * d,
                         [(-HUGE, HUGE)] * d, [(0.0, 1e-300)] * d]),
        st.sampled_from([[], [(1.0, 1.0)] * d, [(NAN, 1.0)] * d, [(0.0, INF)] * d, "ab",
                         [(0.0, 1.0, 2.0)] * d, [("0", 1.0)] * d, None, 3]),
    )



def too_wide_or_narrow(bounds: Arg) -> Arg:
    """Bounds whose half-width squared leaves float64 are refused (extreme → bad)."""
    if bounds.tag == "extreme":
        lo, hi = bounds.value[0]
        half = hi / 2 - lo / 2
        if not 0 < half * half < INF:
            return Arg(bounds.value, "bad")
    return bounds



def no_spread(model: learning.PrivateGaussianNB, x: np.ndarray, y: np.ndarray) -> bool:
    """Would the non-private (scikit-learn) model have a zero variance?"""
    clamped = np.clip(np.asarray(x, dtype=float), model.lower, model.upper)
    smoothing = model.var_smoothing * np.var(clamped, axis=0).max()
    return any(np.any(np.var(clamped[y == label], axis=0) + smoothing <= 0)
               for label in np.unique(y))



def rows_arg(X: object, d: int, name: str = "X") -> Arg:
    arr = numeric_or_none(X)
    ok_shape = arr is not None and arr.ndim == 2 and arr.shape[1] == d and arr.shape[0] >= 1
    return Arg(X, "nice" if ok_shape and np.all(np.isfinite(arr)) else "bad")



@pytest.mark.slow
@covers("learning.PrivateGaussianNB", "learning.PrivateGaussianNB.fit",
        "learning.PrivateGaussianNB.predict", "learning.PrivateGaussianNB.predict_joint_log_proba",
        "learning.PrivateGaussianNB.score", "learning.PrivateGaussianNB.privacy")
@PROPERTY
@given(case=classification_data(), epsilon=st.one_of(positive(), st.just(Arg(None, "nice"))),
       noise=choices(("laplace", "bounded_laplace")), var_smoothing=positive(zero_ok=True),
       declared=st.sampled_from(["none", "all", "more", "fewer", "junk"]), rng=rngs(),
       data=st.data())
def test_private_gaussian_nb(case, epsilon, noise, var_smoothing, declared, rng, data):
    good_bounds, labels, (x_train, y_train, x_test, y_test) = case
    epsilon = Arg(None, "nice") if epsilon.value is None else epsilon  # None: not private
    bounds = too_wide_or_narrow(data.draw(feature_bounds(good_bounds), label="bounds"))
    d = len(good_bounds)
    classes = {"none": Arg(None, "nice"), "all": Arg(labels, "nice"),
               "more": Arg([*labels, labels[0] * 3], "nice"),
               # (bad when y_train has a label outside it: y = [1] against classes [0] too)
               "fewer": Arg(labels[:1], "bad" if set(y_train.tolist()) - set(labels[:1])
                            else "nice"),
               "junk": Arg([[1, 2], "a"], "bad")}[declared]
    x = data.draw(st.one_of(st.just(x_train), st.just(x_train), any_arrays(max_dims=2)),
                  label="X")
    x_arg = rows_arg(x, d)
    if x_arg.tag != "bad" and np.shape(x)[0] != y_train.size:
        x_arg = Arg(x, "bad")  # one label per row
    model = ok(lambda: learning.PrivateGaussianNB(
        epsilon=epsilon.value, bounds=bounds.value, noise=noise.value,
        var_smoothing=var_smoothing.value, classes=classes.value),
        {"epsilon": epsilon, "bounds": bounds, "noise": noise, "var_smoothing": var_smoothing,
         "classes": classes if declared == "junk" else Arg(None, "nice")})
    if model is None:
        return
    assert model.privacy is None or model.privacy.epsilon == as_real(epsilon.value)
    private = epsilon.value is not None
    fit_args = {"X": x_arg, "classes": classes, "rng": rng if private else Arg(None, "nice"),
                "bounds": Arg(bounds.value, "nice" if bounds.tag == "nice" else "extreme")}
    if not private and classes.tag != "bad" and x_arg.tag != "bad":
        # Non-private: rows in every declared class. (Declared, deduplicated: "more" repeats
        # label 0 for [0, 1] (0 * 3), seed 27; without classes they are read from y.)
        if set(classes.value or ()) - set(y_train.tolist()):
            fit_args["classes"] = Arg(classes.value, "bad")
        elif no_spread(model, x, y_train):
            fit_args["X"] = Arg(x, "bad")
    fitted = ok(lambda: model.fit(x, y_train, rng=rng.value), fit_args,
                {"classes": ("class", "y")})
    if fitted is None:
        return
    k = model.classes_.size
    assert np.all(model.class_prior_ >= 0) and model.class_prior_.sum() == pytest.approx(1.0)
    assert np.all(model.var_ > 0) and model.theta_.shape == model.var_.shape == (k, d)
    lower, upper = np.array(good_bounds).T if bounds.tag == "nice" and isinstance(
        bounds.value, list) else (None, None)
    if lower is not None:  # means lie within the declared bounds
        assert np.all((lower - 1e-9 <= model.theta_) & (model.theta_ <= upper + 1e-9))
    test_rows = data.draw(st.one_of(st.just(x_test), any_arrays(max_dims=2)), label="X_test")
    test_arg = rows_arg(test_rows, d)
    jll = ok(lambda: model.predict_joint_log_proba(test_rows), {"X": test_arg})
    if jll is not None:
        assert jll.shape == (np.shape(test_rows)[0], k)
        predicted = model.predict(test_rows)
        assert set(predicted.tolist()) <= set(model.classes_.tolist())
        if np.shape(test_rows)[0] == y_test.size:
            assert 0 <= model.score(test_rows, y_test) <= 1



@pytest.mark.slow
@covers("learning.accuracy_vs_epsilon")
@PROPERTY
@given(case=classification_data(), epsilons=epsilon_grids(),
       noise=choices(("laplace", "bounded_laplace")),
       repetitions=tagged(st.integers(1, 5), None, st.sampled_from(
           [0, -1, 10**6 + 1, 2**63, 10**400, 2.0, None])),
       huge=st.sampled_from([None, None, None, 10**6, 10**5]),
       seed=tagged(st.integers(0, 2**64), st.sampled_from([2**200]),
                   st.sampled_from([-1, 1.5, None, "1", True])),
       declare=st.booleans())
def test_accuracy_vs_epsilon(case, epsilons, noise, repetitions, huge, seed, declare):
    good_bounds, labels, (x_train, y_train, x_test, y_test) = case
    if huge is not None:  # allowed by the bound on repetitions, but too much work for the data
        repetitions = Arg(huge, "nice")
    classes = labels if declare or set(labels) <= set(y_train.tolist()) else None
    args = {"epsilons": Arg(epsilons, grid_tag(epsilons)), "noise": noise,
            "repetitions": repetitions, "seed": seed, "classes": Arg(classes, "nice")}
    if classes is not None and set(classes) - set(y_train.tolist()):
        args["classes"] = Arg(classes, "bad")  # the baseline needs rows in each class
    elif no_spread(learning.PrivateGaussianNB(epsilon=None, bounds=good_bounds), x_train,
                   y_train):
        args["X"] = Arg(x_train, "bad")  # no baseline without spread
    with bounded_time():
        result, error = attempt(lambda: learning.accuracy_vs_epsilon(
            x_train, y_train, x_test, y_test, epsilons=epsilons, bounds=good_bounds,
            noise=noise.value, repetitions=repetitions.value, seed=seed.value,
            classes=classes))
    assert_finite(result)
    bad = [n for n, a in args.items() if a.tag == "bad"]
    if error is not None:
        assert bad or huge is not None or args["epsilons"].tag == "extreme", error
        if len(bad) == 1:
            assert names(error, bad[0]) or bad == ["classes"] and names(error, "class"), error
        elif huge is not None and not bad:
            # a subnormal epsilon in the grid is refused first, by name, before the work bound
            assert names(error, "repetitions") or names(error, "epsilon"), error
        return
    assert not bad, (bad, result)
    n = np.size(epsilons)
    assert result["accuracies"].shape == (n, int(repetitions.value))
    for key in ("median", "p05", "p95"):
        assert np.all((0 <= result[key]) & (result[key] <= 1))
    assert 0 <= result["baseline"] <= 1



def fitted_model():
    model = learning.PrivateGaussianNB(epsilon=1.0, bounds=[(0.0, 1.0)], classes=[0, 1])
    return model.fit(ROWS, LABELS, rng=np.random.default_rng(0))



#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: commit before it) and passes after it.
REGRESSIONS = {
    "PrivateGaussianNB(bounds ±1e300): -inf likelihoods": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=1.0, bounds=[(-1e300, 1e300)]), "bounds"),
    "PrivateGaussianNB(bounds (0, 1e-300)): 0/0": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=1.0, bounds=[(0.0, 1e-300)]), "bounds"),
    "PrivateGaussianNB(epsilon=5e-324): failed at fit, 'got 0.0'": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=TINY, bounds=[(0.0, 1.0)]), "epsilon"),
    "PrivateGaussianNB.predict([[1e300]]): class 0 by overflow": lambda: refused(
        lambda: fitted_model().predict([[1e300]]), "X"),
    "PrivateGaussianNB(epsilon=None).fit(one row): NaN likelihoods": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=None, bounds=[(0.0, 1.0)]).fit([[0.5]], [0]),
        "X"),
    "PrivateGaussianNB(classes=[1, None]): numpy's message": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=None, bounds=[(0.0, 1.0)], classes=[1, None]),
        "classes", TypeError),
    "accuracy_vs_epsilon(repetitions=10**6, bounded): minutes of work": lambda: refused(
        lambda: learning.accuracy_vs_epsilon(
            ROWS, LABELS, ROWS, LABELS, epsilons=[1.0], bounds=[(0.0, 1.0)],
            noise="bounded_laplace", repetitions=10**6, seed=0, classes=[0, 1]),
        "repetitions"),
    "accuracy_vs_epsilon(epsilons=1.0): a lone number taken as a grid": lambda: refused(
        lambda: learning.accuracy_vs_epsilon(ROWS, LABELS, ROWS, LABELS, epsilons=1.0,
                                             bounds=[(0.0, 1.0)], seed=0, classes=[0, 1]),
        "epsilons"),
    "accuracy_vs_epsilon(epsilons='1'): numpy's message": lambda: refused(
        lambda: learning.accuracy_vs_epsilon(ROWS, LABELS, ROWS, LABELS, epsilons="1",
                                             bounds=[(0.0, 1.0)], seed=0, classes=[0, 1]),
        "epsilons", TypeError),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    run_regression(check)
