"""Tests for dpcore.risk: posterior bounds and trade-off curves against independent closed forms.

Expected values are computed here from the formulas in the papers (or by brute force), never
taken from the code under test; the Gaussian curve is also checked against simulated releases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from dpcore.measures import ZCDP, ApproxDP, PureDP, zcdp_epsilon
from dpcore.risk import (
    DEFAULT_ZCDP_DELTA,
    PosteriorBound,
    advantage,
    describe_risk,
    gaussian_tradeoff,
    max_posterior,
    tradeoff,
)

FPR_GRID = np.linspace(0.0, 1.0, 2001)


def pure_posterior(epsilon: float, prior):
    prior = np.asarray(prior, dtype=float)
    return math.exp(epsilon) * prior / (math.exp(epsilon) * prior + 1 - prior)


def approx_curve(epsilon: float, delta: float, fpr):
    """Kairouz-Oh-Viswanath region: FNR >= max(0, 1-d-e^eps FPR, e^-eps (1-d-FPR))."""
    fpr = np.asarray(fpr, dtype=float)
    fnr = np.maximum.reduce([
        np.zeros_like(fpr),
        1 - delta - math.exp(epsilon) * fpr,
        math.exp(-epsilon) * (1 - delta - fpr),
    ])
    return 1 - fnr


def assert_region(tpr, fpr, epsilon: float, delta: float, tol: float = 1e-12):
    """Every (fpr, tpr) satisfies both (epsilon, delta)-DP inequalities.

    The second, 1 - fpr <= e^eps (1 - tpr) + delta, is checked divided by e^eps: a TPR near 1
    is stored to 1e-16, and multiplying that rounding by e^eps would swamp any tolerance.
    """
    e = math.exp(epsilon)
    assert np.all(tpr <= e * fpr + delta + tol)
    assert np.all((1 - fpr - delta) / e <= (1 - tpr) + tol)


def assert_tradeoff_shape(tpr, fpr, *, tpr_at_zero: float):
    assert np.all(tpr >= fpr - 1e-15)
    assert np.all(np.diff(tpr) >= -1e-13), "not monotone"
    # concave on the uniform grid: second differences <= 0 up to rounding
    assert np.all(np.diff(tpr, 2) <= 1e-10), "not concave"
    assert tpr[0] == pytest.approx(tpr_at_zero, abs=1e-12)
    assert tpr[-1] == pytest.approx(1.0, abs=1e-12)


# -- posterior ------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 3.0, 10.0])
def test_pure_posterior_matches_closed_form(epsilon):
    priors = np.array([1e-4, 0.01, 0.3, 0.5, 0.9, 0.999])
    bound = max_posterior(PureDP(epsilon), priors)
    assert isinstance(bound, PosteriorBound)
    np.testing.assert_allclose(bound.posterior, pure_posterior(epsilon, priors), rtol=1e-13)
    assert bound.certainty_probability == 0.0
    assert bound.epsilon == epsilon


def test_posterior_at_epsilon_one_is_73_percent():
    post = max_posterior(PureDP(1.0), 0.5).posterior
    assert isinstance(post, float)
    assert post == pytest.approx(math.e / (1 + math.e), rel=1e-14)
    assert post == pytest.approx(0.7310585786, abs=1e-10)


def test_posterior_keeps_the_shape_of_prior():
    priors = np.full((2, 3), 0.2)
    assert max_posterior(PureDP(1.0), priors).posterior.shape == (2, 3)


def test_posterior_finite_for_huge_epsilon():
    post = max_posterior(PureDP(1e6), 0.5).posterior
    assert post == 1.0 and math.isfinite(post)


def test_approx_posterior_is_tight_for_the_canonical_mechanism():
    """The four-output mechanism of Kairouz, Oh & Viswanath attains the bound exactly."""
    eps, delta, prior = 1.2, 1e-3, 0.3
    e = math.exp(eps)
    p_in = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    p_out = np.array([0.0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta])
    belief = prior * p_in / (prior * p_in + (1 - prior) * p_out)
    bound = max_posterior(ApproxDP(eps, delta), prior)
    assert bound.certainty_probability == delta
    # outside the reveal output (probability delta when Alice is in) the bound holds, tightly
    assert belief[1] == pytest.approx(bound.posterior, rel=1e-13)
    assert np.all(belief[1:] <= bound.posterior + 1e-15)
    assert belief[0] == 1.0 and p_in[0] == delta


def test_zcdp_posterior_through_its_conversion():
    rho = 0.5
    default = max_posterior(ZCDP(rho), 0.5)
    eps = ZCDP(rho).to_approx(DEFAULT_ZCDP_DELTA).epsilon
    assert DEFAULT_ZCDP_DELTA == 1e-6
    assert default.epsilon == pytest.approx(eps, rel=1e-12)
    assert default.certainty_probability == 1e-6
    assert default.posterior == pytest.approx(float(pure_posterior(eps, 0.5)), rel=1e-12)
    chosen = max_posterior(ZCDP(rho), [0.1, 0.5], delta=1e-3)
    eps3 = ZCDP(rho).to_approx(1e-3).epsilon
    np.testing.assert_allclose(chosen.posterior, pure_posterior(eps3, [0.1, 0.5]), rtol=1e-12)
    assert chosen.certainty_probability == 1e-3


def test_delta_only_for_zcdp():
    with pytest.raises(ValueError, match="delta"):
        max_posterior(PureDP(1.0), 0.5, delta=1e-6)
    with pytest.raises(ValueError, match="delta"):
        max_posterior(ZCDP(1.0), 0.5, delta=0.0)
    with pytest.raises(ValueError, match="delta"):
        max_posterior(ZCDP(1.0), 0.5, delta=float("nan"))


# -- describe_risk --------------------------------------------------------------------------


def test_describe_risk_plain_sentence():
    text = describe_risk(PureDP(1.0))
    assert f"{100 * math.e / (1 + math.e):.1f}%" == "73.1%"
    assert "starts at 50%" in text and "at most 73.1% certainty" in text
    assert "Alice" in text and "except" not in text


def test_describe_risk_mentions_delta_and_zcdp_reading():
    assert "probability at most 1e-05" in describe_risk(ApproxDP(1.0, 1e-5), 0.1)
    assert "starts at 10%" in describe_risk(ApproxDP(1.0, 1e-5), 0.1)
    text = describe_risk(ZCDP(0.5))
    eps = ZCDP(0.5).to_approx(1e-6).epsilon
    assert "ρ = 0.5" in text and f"ε = {eps:.3g}" in text and "1e-06" in text


def test_describe_risk_never_rounds_a_bound_to_certainty():
    # eps = 10: 1 - bound = 1/(1 + e^10) = 4.5e-5, which must not print as 100%
    text = describe_risk(PureDP(10.0))
    assert "100%" not in text and "99.9955%" in text
    assert "essentially certain" in describe_risk(PureDP(60.0))
    assert "0.101%" in describe_risk(PureDP(0.01), 0.001)


# -- trade-off curves -----------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("delta", [0.0, 1e-6, 0.05])
def test_approx_tradeoff_closed_form_and_region(epsilon, delta):
    privacy = PureDP(epsilon) if delta == 0 else ApproxDP(epsilon, delta)
    tpr = tradeoff(privacy, FPR_GRID)
    np.testing.assert_allclose(tpr, approx_curve(epsilon, delta, FPR_GRID), atol=1e-15)
    assert_region(tpr, FPR_GRID, epsilon, delta)
    assert_tradeoff_shape(tpr, FPR_GRID, tpr_at_zero=delta)


def test_region_check_catches_a_planted_bug():
    """A curve that forgets the high-FPR branch leaves the (eps, delta) region."""
    eps, delta = 1.0, 1e-3
    wrong = np.minimum(1.0, math.exp(eps) * FPR_GRID + delta)
    with pytest.raises(AssertionError):
        assert_region(wrong, FPR_GRID, eps, delta)


def test_pure_tradeoff_formula_from_the_brief():
    eps = 0.7
    expected = np.minimum(math.exp(eps) * FPR_GRID, 1 - math.exp(-eps) * (1 - FPR_GRID))
    np.testing.assert_allclose(tradeoff(PureDP(eps), FPR_GRID), expected, atol=1e-15)


def test_approx_tradeoff_attained_by_canonical_mechanism():
    """The likelihood-ratio tests of the four-output mechanism lie on the curve: it is tight."""
    eps, delta = 0.8, 0.01
    e = math.exp(eps)
    p_in = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    p_out = np.array([0.0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta])
    # "say in" on the first j outputs (ordered by likelihood ratio)
    tpr = np.cumsum(p_in)
    fpr = np.cumsum(p_out)
    np.testing.assert_allclose(tradeoff(ApproxDP(eps, delta), fpr), tpr, atol=1e-14)


def test_tradeoff_scalar_and_shape():
    assert isinstance(tradeoff(PureDP(1.0), 0.1), float)
    assert tradeoff(PureDP(1.0), np.full((3, 2), 0.1)).shape == (3, 2)
    assert tradeoff(PureDP(1e4), 0.0) == 0.0  # no overflow at a huge epsilon


@pytest.mark.parametrize("rho", [0.01, 0.5, 3.0])
def test_zcdp_envelope_below_every_conversion_and_equal_to_the_tightest(rho):
    zcdp = ZCDP(rho)
    envelope = tradeoff(zcdp, FPR_GRID)
    assert_tradeoff_shape(envelope, FPR_GRID, tpr_at_zero=0.0)
    curves = []
    # zcdp_epsilon is the conversion behind ZCDP.to_approx (which rejects an epsilon of 0)
    for delta in np.geomspace(1e-12, 0.2, 60):
        curve = approx_curve(zcdp_epsilon(rho, float(delta)), float(delta), FPR_GRID)
        assert np.all(envelope <= curve + 1e-12)
        curves.append(curve)
    # matching the tightest: the exact minimum over delta in (0, 1), found here by brute force
    # over logit(delta) (a large rho at a small FPR is best bounded by a delta near 1)
    for alpha in [1e-9, 1e-4, 0.01, 0.1, 0.4, 0.8]:
        def at(logit_delta, alpha=alpha):
            delta = 1 / (1 + math.exp(-logit_delta))
            return float(approx_curve(zcdp_epsilon(rho, delta), delta, alpha))

        grid = np.linspace(-35.0, 25.0, 241)
        values = [at(t) for t in grid]
        i = int(np.argmin(values))
        best = minimize_scalar(at, bounds=(grid[max(i - 1, 0)], grid[min(i + 1, 240)]),
                               method="bounded", options={"xatol": 1e-10})
        tightest = min(values[i], best.fun)
        assert float(tradeoff(zcdp, alpha)) == pytest.approx(tightest, rel=1e-9, abs=1e-15)


def test_gaussian_mechanism_lies_inside_its_zcdp_region():
    # The Gaussian mechanism with mu = sensitivity/sigma is (mu²/2)-zCDP.
    for mu in [0.3, 1.0, 2.5]:
        gdp = gaussian_tradeoff(mu, FPR_GRID)
        assert np.all(gdp <= tradeoff(ZCDP(mu**2 / 2), FPR_GRID) + 1e-12)


def test_gaussian_tradeoff_closed_form_and_dispatch():
    mu = 1.3
    thresholds = np.linspace(-4, 6, 41)
    fpr = norm.sf(thresholds)  # Alice out: output ~ N(0, 1); say "in" above t
    tpr = norm.sf(thresholds - mu)  # Alice in: output ~ N(mu, 1)
    np.testing.assert_allclose(gaussian_tradeoff(mu, fpr), tpr, rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(tradeoff(None, fpr, gaussian_mu=mu), gaussian_tradeoff(mu, fpr))
    assert gaussian_tradeoff(mu, 0.0) == 0.0 and gaussian_tradeoff(mu, 1.0) == 1.0
    assert_tradeoff_shape(gaussian_tradeoff(mu, FPR_GRID), FPR_GRID, tpr_at_zero=0.0)


def test_gaussian_tradeoff_against_simulated_releases():
    """Threshold tests on 10^6 simulated Gaussian-mechanism releases, within 5 standard errors."""
    sensitivity, sigma, n = 1.0, 0.8, 10**6
    mu = sensitivity / sigma
    rng = np.random.default_rng(20240613)
    out = rng.normal(0.0, sigma, n)  # neighbour without Alice: true value 0
    inside = rng.normal(sensitivity, sigma, n)  # neighbour with Alice: true value = sensitivity
    for t in [-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]:
        fpr_exact = norm.sf(t / sigma)
        fpr_hat, tpr_hat = np.mean(out > t), np.mean(inside > t)
        tpr_curve = gaussian_tradeoff(mu, fpr_exact)
        se_f = math.sqrt(fpr_exact * (1 - fpr_exact) / n)
        se_t = math.sqrt(tpr_curve * (1 - tpr_curve) / n)
        assert abs(fpr_hat - fpr_exact) <= 5 * se_f
        assert abs(tpr_hat - tpr_curve) <= 5 * se_t


def _gaussian_delta(mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism (Balle & Wang 2018, Theorem 8)."""
    return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gaussian_curve_below_its_approx_dp_curves(mu):
    gdp = gaussian_tradeoff(mu, FPR_GRID)
    for epsilon in [0.1, 0.5, 1.0, 2.0, 4.0]:
        delta = _gaussian_delta(mu, epsilon)
        curve = tradeoff(ApproxDP(epsilon, delta), FPR_GRID)
        assert np.all(gdp <= curve + 1e-12)
        # each (eps, delta(eps)) curve touches the Gaussian one (it is their envelope)
        assert np.min(curve - gdp) < 1e-3


# -- advantage ------------------------------------------------------------------------------


def test_advantage_closed_forms_and_curve_maximum():
    fine = np.linspace(0, 1, 200001)
    for privacy, expected in [
        (PureDP(1.0), (math.e - 1) / (math.e + 1)),
        (ApproxDP(1.0, 0.01), 0.01 + 0.99 * (math.e - 1) / (math.e + 1)),
    ]:
        assert advantage(privacy) == pytest.approx(expected, rel=1e-13)
        assert np.max(tradeoff(privacy, fine) - fine) == pytest.approx(expected, abs=1e-5)
    assert advantage(None, gaussian_mu=1.0) == pytest.approx(2 * norm.cdf(0.5) - 1, rel=1e-13)
    zcdp = ZCDP(0.5)
    coarse = np.linspace(0, 1, 2001)
    peak = coarse[np.argmax(tradeoff(zcdp, coarse) - coarse)]
    local = np.linspace(peak - 1e-3, peak + 1e-3, 20001)  # spacing 1e-7 around the maximum
    grid_max = np.max(tradeoff(zcdp, local) - local)
    assert grid_max - 1e-12 <= advantage(zcdp) <= grid_max + 1e-6


# -- validation -----------------------------------------------------------------------------

bad_probability = st.one_of(
    st.floats(max_value=0.0), st.floats(min_value=1.0),
    st.just(float("nan")), st.just(float("inf")), st.just(float("-inf")),
)


@given(prior=bad_probability)
def test_prior_outside_open_interval_rejected(prior):
    with pytest.raises(ValueError, match="prior"):
        max_posterior(PureDP(1.0), prior)
    with pytest.raises(ValueError, match="prior"):
        max_posterior(PureDP(1.0), [0.5, prior])


@given(fpr=st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0 + 1e-12),
                     st.just(float("nan")), st.just(float("inf"))))
def test_fpr_outside_unit_interval_rejected(fpr):
    with pytest.raises(ValueError, match="fpr"):
        tradeoff(PureDP(1.0), [0.2, fpr])
    with pytest.raises(ValueError, match="fpr"):
        gaussian_tradeoff(1.0, fpr)


@settings(max_examples=60, deadline=None)
@given(epsilon=st.floats(1e-3, 20), delta=st.floats(0, 0.5),
       fpr=st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_region_property_holds_everywhere(epsilon, delta, fpr):
    fpr = np.array(fpr)
    assert_region(tradeoff(ApproxDP(epsilon, delta), fpr), fpr, epsilon, delta)


@given(epsilon=st.floats(1e-6, 50), prior=st.floats(1e-6, 1 - 1e-6))
def test_posterior_between_prior_and_one(epsilon, prior):
    post = max_posterior(PureDP(epsilon), prior).posterior
    assert prior - 1e-15 <= post <= 1.0


def test_wrong_types_and_conflicting_arguments():
    with pytest.raises(TypeError, match="privacy"):
        max_posterior(1.0, 0.5)
    with pytest.raises(TypeError, match="privacy"):
        tradeoff("eps=1", 0.5)
    with pytest.raises(TypeError, match="prior"):
        max_posterior(PureDP(1.0), "half")
    with pytest.raises(ValueError, match="gaussian_mu"):
        tradeoff(PureDP(1.0), 0.5, gaussian_mu=1.0)
    for mu in [0.0, -1.0, float("nan"), float("inf")]:
        with pytest.raises(ValueError, match="mu"):
            gaussian_tradeoff(mu, 0.5)
    with pytest.raises(TypeError, match="prior"):
        describe_risk(PureDP(1.0), np.array([0.1, 0.2]))
