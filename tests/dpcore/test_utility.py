"""Tests for dpcore.utility: error sweeps against closed forms and the mechanisms themselves,
Monte Carlo bands around the analytic lines, and the smallest epsilon meeting a target.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpcore import Gaussian, make_mechanism
from dpcore.measures import PureDP
from dpcore.selection import noisy_max_scale, prob_best_selected
from dpcore.utility import (
    EPSILON_RANGE,
    error_sweep,
    monte_carlo_error_sweep,
    monte_carlo_sweep,
    selection_sweep,
    smallest_epsilon,
    smallest_epsilon_for_selection,
)

GRID = np.geomspace(0.01, 10, 13)

# kind → (options for make_mechanism, true value, sensitivity)
SETUPS = {
    "laplace": ({}, 40.0, 1.0),
    "gaussian": ({"delta": 1e-6}, 40.0, 1.0),
    "geometric": ({}, 40.0, 1),
    "bounded_laplace": ({"lower": 0.0, "upper": 100.0}, 30.0, 1.0),
    "bounded_laplace_delta": ({"lower": 0.0, "upper": 100.0, "delta": 1e-3}, 30.0, 1.0),
    "clamped_laplace": ({"lower": 0.0, "upper": 100.0}, 30.0, 1.0),
    "clamped_outside": ({"lower": 0.0, "upper": 100.0}, 104.0, 1.0),
}


def kind_of(name: str) -> str:
    return {"bounded_laplace_delta": "bounded_laplace",
            "clamped_outside": "clamped_laplace"}.get(name, name)


def build(name: str, eps: float):
    options, _, sens = SETUPS[name]
    return make_mechanism(kind_of(name), sensitivity=sens, epsilon=eps, **options)


def needs_truth(name: str) -> bool:
    return kind_of(name) in ("bounded_laplace", "clamped_laplace")


def sweep_kwargs(name: str) -> dict:
    options, truth, sens = SETUPS[name]
    return {"sensitivity": sens, "true_value": truth, **options}


# --------------------------------------------------------------------------------------------
# error_sweep
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SETUPS))
def test_sweep_matches_each_mechanisms_accuracy_and_mse(name):
    result = error_sweep(kind_of(name), epsilons=GRID, beta=0.05, **sweep_kwargs(name))
    truth = SETUPS[name][1]
    for i, eps in enumerate(GRID):
        mech = build(name, float(eps))
        q = truth if needs_truth(name) else None
        assert result["alpha"][i] == pytest.approx(float(mech.accuracy(0.05, q)), rel=1e-12)
        assert result["rmse"][i] == pytest.approx(math.sqrt(float(mech.mse(truth))), rel=1e-9)
        assert result["scale"][i] == pytest.approx(mech.scale, rel=1e-12)
    assert result["relative_alpha"] == pytest.approx(result["alpha"] / truth)
    assert np.all(np.diff(result["alpha"]) <= 0)  # more budget, never more error


@pytest.mark.parametrize("name", list(SETUPS))
def test_sweep_mae_against_numerical_integration(name):
    """E|error| = ∫₀^∞ P(|E| > t) dt, integrated from the mechanism's own error CDF."""
    truth = SETUPS[name][1]
    grid = np.array([0.05, 0.5, 3.0])
    result = error_sweep(kind_of(name), epsilons=grid, **sweep_kwargs(name))
    for i, eps in enumerate(grid):
        mech = build(name, float(eps))
        q = truth if needs_truth(name) else None
        if name == "geometric":
            k = np.arange(0, 20_000)
            expected = float(np.sum(2 * k[1:] * mech.error_pmf(k[1:])))
        else:
            def tail(t, mech=mech, q=q):
                return float(1 - mech.error_cdf(t, q) + mech.error_cdf(-t - 1e-300, q))
            # the bounds (at lower − q and upper − q) are kinks or jumps of the tail: split there
            upper = 60 * mech.scale + 200
            points = [abs(0.0 - truth), abs(100.0 - truth)]
            expected = integrate.quad(tail, 0, upper, points=points, limit=500)[0]
        assert result["mae"][i] == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_sweep_closed_forms_written_independently():
    eps = np.array([0.1, 1.0, 4.0])
    lap = error_sweep("laplace", epsilons=eps, sensitivity=2.0, beta=0.01)
    assert lap["alpha"] == pytest.approx(2.0 / eps * math.log(100))
    assert lap["rmse"] == pytest.approx(math.sqrt(2) * 2.0 / eps)
    assert lap["mae"] == pytest.approx(2.0 / eps)
    geo = error_sweep("geometric", epsilons=eps, sensitivity=1)
    r = np.exp(-eps)
    assert geo["rmse"] == pytest.approx(np.sqrt(2 * r) / (1 - r))
    gau = error_sweep("gaussian", epsilons=eps, sensitivity=1.0, delta=1e-5, l2_sensitivity=3.0)
    sigma = np.array([Gaussian(sensitivity=3.0, epsilon=e, delta=1e-5).scale for e in eps])
    assert gau["alpha"] == pytest.approx(sigma * stats.norm.ppf(0.975))
    assert gau["mae"] == pytest.approx(sigma * math.sqrt(2 / math.pi))


def test_geometric_alpha_is_exactly_the_smallest_whole_bound():
    """Independent brute force: smallest whole a with P(|Z| > a) <= beta from the pmf."""
    eps = np.geomspace(0.02, 6, 40)
    alpha = error_sweep("geometric", epsilons=eps, sensitivity=1, beta=0.1)["alpha"]
    for e, a in zip(eps, alpha, strict=True):
        r = math.exp(-e)
        tails = [2 * r ** (m + 1) / (1 + r) for m in range(2000)]
        assert a == next(m for m, t in enumerate(tails) if t <= 0.1)


def test_sweep_validation():
    with pytest.raises(ValueError, match="epsilons"):
        error_sweep("laplace", epsilons=[1.0, -1.0], sensitivity=1.0)
    with pytest.raises(ValueError, match="epsilons"):
        error_sweep("laplace", epsilons=[1.0, float("nan")], sensitivity=1.0)
    with pytest.raises(ValueError, match="delta"):
        error_sweep("gaussian", epsilons=GRID, sensitivity=1.0)
    with pytest.raises(ValueError, match="true_value"):
        error_sweep("clamped_laplace", epsilons=GRID, sensitivity=1.0, lower=0, upper=1)
    with pytest.raises(ValueError, match="beta"):
        error_sweep("laplace", epsilons=GRID, sensitivity=1.0, beta=1.0)
    with pytest.raises(ValueError, match="kind"):
        error_sweep("cauchy", epsilons=GRID, sensitivity=1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        error_sweep("geometric", epsilons=GRID, sensitivity=1.5)
    with pytest.raises(TypeError, match="sensitivity"):
        error_sweep("laplace", epsilons=GRID, sensitivity="1")


# --------------------------------------------------------------------------------------------
# Monte Carlo
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SETUPS))
def test_monte_carlo_band_contains_the_analytic_lines(name):
    """20,000 releases per epsilon. The sample 95% quantile of |error| has relative standard
    error ~1.5% (Laplace: sqrt(0.05·0.95/n)/(0.05) / ln 20), the sample MAE ~0.7%: a 6%
    tolerance is > 4 standard errors, and the 90% bound must lie strictly inside the band."""
    kwargs = sweep_kwargs(name)
    grid = np.array([0.05, 0.5, 2.0])
    exact = error_sweep(kind_of(name), epsilons=grid, beta=0.05, **kwargs)
    inner = error_sweep(kind_of(name), epsilons=grid, beta=0.10, **kwargs)
    mc = monte_carlo_error_sweep(kind_of(name), epsilons=grid, trials=20_000,
                                 rng=np.random.default_rng(11), beta=0.05, **kwargs)
    # (1e-3 slack: outside the clamping bounds the error is almost always exactly 4)
    low, high = mc["p05"] * (1 - 1e-3), mc["p95"] * (1 + 1e-3)
    assert np.all(low <= inner["alpha"]) and np.all(inner["alpha"] <= high)
    assert np.all(low <= exact["mae"]) and np.all(exact["mae"] <= high)
    discrete = name == "geometric"  # the quantile of an integer error is a whole number
    assert mc["alpha"] == pytest.approx(exact["alpha"], rel=0.06, abs=1.0 if discrete else 0)
    assert mc["mae"] == pytest.approx(exact["mae"], rel=0.06)
    assert mc["rmse"] == pytest.approx(exact["rmse"], rel=0.06)


def test_monte_carlo_catches_a_planted_bug():
    """A release with noise 1.3× too wide must fall outside the 6% tolerance used above."""
    truth = 40.0

    def too_wide(eps, n, rng):
        return truth + rng.laplace(0.0, 1.3 / eps, size=(n,))

    grid = np.array([0.5, 2.0])
    mc = monte_carlo_sweep(too_wide, epsilons=grid, true_value=truth, trials=20_000,
                           rng=np.random.default_rng(3))
    exact = error_sweep("laplace", epsilons=grid, sensitivity=1.0)
    assert not np.allclose(mc["alpha"], exact["alpha"], rtol=0.06)


def test_monte_carlo_is_chunked_and_reproducible(monkeypatch):
    """With a tiny block size the trials run in many chunks, and the estimates stay close to
    those of a single block (weighted chunk quantiles, exact running sums)."""
    from dpcore import checks, utility

    kwargs = {"epsilons": [1.0], "sensitivity": 1.0, "true_value": np.zeros(10),
              "trials": 4000}
    a = monte_carlo_error_sweep("laplace", rng=np.random.default_rng(5), **kwargs)
    b = monte_carlo_error_sweep("laplace", rng=np.random.default_rng(5), **kwargs)
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    calls = []
    real_chunks = checks.trial_chunks

    def small_chunks(trials, per_trial):
        chunks = [500] * (trials // 500)
        calls.append(len(chunks))
        return chunks

    monkeypatch.setattr(utility, "trial_chunks", small_chunks)
    c = monte_carlo_error_sweep("laplace", rng=np.random.default_rng(5), **kwargs)
    assert calls == [8]
    assert real_chunks(4000, 10) == [4000]
    assert c["mae"] == pytest.approx(a["mae"], rel=0.05)
    assert c["p95"] == pytest.approx(a["p95"], rel=0.05)
    assert "relative_mae" not in c  # per-cell arrays have no single relative scale


def test_monte_carlo_validation():
    with pytest.raises(TypeError, match="rng"):
        monte_carlo_error_sweep("laplace", epsilons=[1.0], sensitivity=1.0, true_value=0.0,
                                trials=10, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match="trials"):
        monte_carlo_error_sweep("laplace", epsilons=[1.0], sensitivity=1.0, true_value=0.0,
                                trials=0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        monte_carlo_sweep(lambda e, n, rng: np.zeros(3), epsilons=[1.0], true_value=0.0,
                          trials=10, rng=np.random.default_rng(0))


# --------------------------------------------------------------------------------------------
# smallest_epsilon
# --------------------------------------------------------------------------------------------


def test_smallest_epsilon_laplace_is_the_closed_form():
    for sens, alpha, beta in [(1.0, 10.0, 0.05), (3.0, 0.5, 0.01), (1.0, 2.0, 0.3)]:
        got = smallest_epsilon("laplace", sensitivity=sens, alpha=alpha, beta=beta)
        assert got.epsilon == pytest.approx(sens * math.log(1 / beta) / alpha, rel=1e-12)
        assert not got.met_at_lower_end


@pytest.mark.parametrize("delta", [1e-5, 1e-8])
@pytest.mark.parametrize("alpha", [0.5, 5.0, 80.0])
def test_smallest_epsilon_gaussian_matches_the_analytic_calibration(alpha, delta):
    got = smallest_epsilon("gaussian", sensitivity=2.0, alpha=alpha, beta=0.05, delta=delta)
    at = Gaussian(sensitivity=2.0, epsilon=got.epsilon, delta=delta).accuracy(0.05)
    assert at == pytest.approx(alpha, rel=1e-6)
    assert at <= alpha


def test_smallest_epsilon_geometric_closed_forms():
    """m = floor(alpha) + 1: m = 1 gives r = beta/(2 − beta); m = 2 solves
    2r² − beta·r − beta = 0."""
    beta = 0.05
    got = smallest_epsilon("geometric", sensitivity=1, alpha=0.5, beta=beta)
    assert got.epsilon == pytest.approx(math.log((2 - beta) / beta), rel=1e-12)
    got = smallest_epsilon("geometric", sensitivity=2, alpha=1.0, beta=beta)
    r = (beta + math.sqrt(beta**2 + 8 * beta)) / 4
    assert got.epsilon == pytest.approx(-2 * math.log(r), rel=1e-10)


PLUG_BACK = [
    ("laplace", {}, None, 10.0, 0.05),
    ("laplace", {}, None, 0.3, 0.001),
    ("gaussian", {"delta": 1e-6}, None, 10.0, 0.05),
    ("gaussian", {"delta": 1e-9}, None, 0.7, 0.2),
    ("geometric", {}, None, 0.0001, 0.05),
    ("geometric", {}, None, 10.0, 0.05),
    ("geometric", {}, None, 3.7, 0.01),
    ("bounded_laplace", {"lower": 0.0, "upper": 100.0}, 30.0, 10.0, 0.05),
    ("bounded_laplace", {"lower": 0.0, "upper": 100.0}, 1.0, 10.0, 0.05),
    ("bounded_laplace", {"lower": 0.0, "upper": 100.0, "delta": 1e-4}, 50.0, 2.0, 0.1),
    ("clamped_laplace", {"lower": 0.0, "upper": 100.0}, 30.0, 10.0, 0.05),
    ("clamped_laplace", {"lower": 0.0, "upper": 100.0}, 98.0, 10.0, 0.05),
    ("clamped_laplace", {"lower": 0.0, "upper": 100.0}, 104.0, 10.0, 0.05),
]


@pytest.mark.parametrize(("kind", "options", "truth", "alpha", "beta"), PLUG_BACK)
def test_smallest_epsilon_plug_back(kind, options, truth, alpha, beta):
    """At the answer the mechanism meets the target; at 0.999× of it, it does not."""
    sens = 1 if kind == "geometric" else 1.0
    got = smallest_epsilon(kind, sensitivity=sens, alpha=alpha, beta=beta, true_value=truth,
                           **options)
    assert not got.met_at_lower_end

    def tail_at(eps: float) -> float:
        mech = make_mechanism(kind, sensitivity=sens, epsilon=eps, **options)
        if kind == "geometric":
            return float(2 * mech.error_pmf(math.floor(alpha) + 1) / (1 - math.exp(-eps)))
        return float(1 - mech.error_cdf(alpha, truth) + mech.error_cdf(-alpha - 1e-12, truth))

    mech = make_mechanism(kind, sensitivity=sens, epsilon=got.epsilon, **options)
    assert mech.accuracy(beta, truth) <= alpha
    assert tail_at(got.epsilon) <= beta * (1 + 1e-9)
    slightly_less = make_mechanism(kind, sensitivity=sens, epsilon=0.999 * got.epsilon,
                                   **options)
    assert slightly_less.accuracy(beta, truth) > alpha
    assert tail_at(0.999 * got.epsilon) > beta


def test_smallest_epsilon_met_at_any_epsilon():
    # The bounded Laplace output never leaves [0, 100]: the error is at most 70 from q = 30.
    got = smallest_epsilon("bounded_laplace", sensitivity=1.0, alpha=100.0, beta=0.05,
                           lower=0.0, upper=100.0, true_value=30.0)
    assert got == (EPSILON_RANGE[0], True)
    got = smallest_epsilon("laplace", sensitivity=1.0, alpha=1e6, beta=0.5)
    assert got == (EPSILON_RANGE[0], True)


def test_smallest_epsilon_unreachable_raises():
    with pytest.raises(ValueError, match="bias"):
        smallest_epsilon("clamped_laplace", sensitivity=1.0, alpha=3.0, beta=0.05,
                         lower=0.0, upper=100.0, true_value=110.0)
    with pytest.raises(ValueError, match="1000"):
        smallest_epsilon("laplace", sensitivity=1.0, alpha=1e-4, beta=0.05)
    with pytest.raises(ValueError, match="1000"):
        smallest_epsilon("gaussian", sensitivity=1.0, alpha=1e-4, beta=0.05, delta=1e-6)


def test_smallest_epsilon_validation():
    with pytest.raises(ValueError, match="alpha"):
        smallest_epsilon("laplace", sensitivity=1.0, alpha=float("nan"), beta=0.05)
    with pytest.raises(ValueError, match="alpha"):
        smallest_epsilon("laplace", sensitivity=1.0, alpha=0.0, beta=0.05)
    with pytest.raises(ValueError, match="beta"):
        smallest_epsilon("laplace", sensitivity=1.0, alpha=1.0, beta=0.0)
    with pytest.raises(ValueError, match="delta"):
        smallest_epsilon("gaussian", sensitivity=1.0, alpha=1.0, beta=0.05)
    with pytest.raises(ValueError, match="true_value"):
        smallest_epsilon("bounded_laplace", sensitivity=1.0, alpha=1.0, beta=0.05,
                         lower=0.0, upper=1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        smallest_epsilon("geometric", sensitivity=0.5, alpha=1.0, beta=0.05)


# --------------------------------------------------------------------------------------------
# selection
# --------------------------------------------------------------------------------------------

SCORES = np.array([120.0, 100.0, 95.0, 40.0, 3.0])


@pytest.mark.parametrize("noise", ["laplace", "exponential", "gumbel"])
def test_selection_sweep_increases_with_epsilon(noise):
    grid = np.geomspace(0.01, 10, 12)
    result = selection_sweep(SCORES, noise=noise, epsilons=grid, monotonic=True)
    p = result["p_correct"]
    assert np.all(np.diff(p) >= -1e-12)
    assert p[-1] > 0.999 and p[0] < 0.5
    assert p[0] > 1 / SCORES.size  # better than a blind guess at any epsilon


def test_selection_sweep_gumbel_closed_form():
    """Exponential mechanism: P(best) = 1 / Σ exp(ε (s_j − s_max) / Δ) for monotonic scores."""
    grid = np.array([0.05, 0.2, 1.0])
    result = selection_sweep(SCORES, noise="gumbel", epsilons=grid, monotonic=True)
    expected = [1 / np.sum(np.exp(e * (SCORES - SCORES.max()))) for e in grid]
    assert result["p_correct"] == pytest.approx(expected, rel=1e-12)


def test_selection_sweep_top_k_is_monte_carlo_and_needs_rng():
    grid = np.array([0.01, 1.0])
    with pytest.raises(ValueError, match="rng"):
        selection_sweep(SCORES, noise="gumbel", epsilons=grid, k=2)
    result = selection_sweep(SCORES, noise="gumbel", epsilons=grid, k=2, trials=4000,
                             rng=np.random.default_rng(2))
    # Gumbel top-2 is two draws of the exponential mechanism without replacement (weights
    # w = e^{s/b}, b = k·2Δ/ε): P({0, 1}) = w0/W·w1/(W − w0) + w1/W·w0/(W − w1). The Monte
    # Carlo standard error is at most 0.5/sqrt(4000) = 0.008; tolerance 0.035 (> 4 SE).
    for eps, p in zip(grid, result["p_correct"], strict=True):
        w = np.exp((SCORES - SCORES.max()) / (2 * 2 / eps))
        total = w.sum()
        exact = w[0] / total * w[1] / (total - w[0]) + w[1] / total * w[0] / (total - w[1])
        assert p == pytest.approx(exact, abs=0.035)


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["laplace", "exponential", "gumbel"])
@pytest.mark.parametrize("target", [0.6, 0.95])
def test_smallest_epsilon_for_selection_plug_back(noise, target):
    got = smallest_epsilon_for_selection(SCORES, noise=noise, monotonic=True, target=target)
    assert not got.met_at_lower_end

    def p_at(eps: float) -> float:
        scale = noisy_max_scale(PureDP(eps), noise=noise, monotonic=True)
        return prob_best_selected(SCORES, scale=scale, noise=noise)

    assert p_at(got.epsilon) >= target
    assert p_at(0.999 * got.epsilon) < target


def test_smallest_epsilon_for_selection_gumbel_closed_form():
    """Two candidates with gap g, monotonic: P = 1/(1 + e^{−ε g}) = target ⇒ ε = logit(t)/g."""
    got = smallest_epsilon_for_selection([10.0, 6.0], noise="gumbel", monotonic=True,
                                         target=0.9)
    assert got.epsilon == pytest.approx(math.log(9) / 4, rel=1e-8)


def test_selection_ties_count_as_correct_and_unreachable_targets_raise():
    # Two tied best: either is correct, so P -> 1 and any target below 1 is reachable.
    tied = smallest_epsilon_for_selection([5.0, 5.0, 1.0], noise="laplace", target=0.99)
    assert not tied.met_at_lower_end
    # At most the blind-guess share of best candidates (2 of 3): met at any epsilon.
    blind = smallest_epsilon_for_selection([5.0, 5.0, 1.0], noise="laplace", target=0.6)
    assert blind == (EPSILON_RANGE[0], True)
    # A lead of 1e-9 cannot be resolved even at epsilon = 1000.
    with pytest.raises(ValueError, match="lower the target"):
        smallest_epsilon_for_selection([5.0, 5.0 + 1e-9], noise="laplace", target=0.99)
    with pytest.raises(ValueError, match="target"):
        smallest_epsilon_for_selection(SCORES, noise="laplace", target=1.0)


def test_sweep_scales_are_the_built_mechanisms_scales():
    """The sweep computes its scales without building each mechanism: they must still be the
    very scales (to the ulp) that Laplace and Geometric use at each epsilon."""
    from dpcore import Geometric, Laplace

    grid = np.sort(10 ** np.random.default_rng(5).uniform(-2, 1, 200))
    for kind, cls, sens in (("laplace", Laplace, 3.0), ("geometric", Geometric, 3)):
        sweep = error_sweep(kind, epsilons=grid, sensitivity=sens)
        built = np.array([cls(sensitivity=sens, epsilon=float(e)).scale for e in grid])
        np.testing.assert_array_equal(sweep["scale"], built)
