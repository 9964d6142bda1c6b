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
    assert bound.failure_probability == 0.0
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


def test_approx_posterior_holds_for_the_canonical_mechanism():
    """The four-output mechanism of Kairouz, Oh & Viswanath: its belief passes the bound only on
    the reveal output, with probability delta <= the stated 2 delta."""
    eps, delta, prior = 1.2, 1e-3, 0.3
    e = math.exp(eps)
    p_in = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    p_out = np.array([0.0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta])
    belief = prior * p_in / (prior * p_in + (1 - prior) * p_out)
    bound = max_posterior(ApproxDP(eps, delta), prior)
    assert bound.failure_probability == pytest.approx(2 * delta, rel=1e-15)
    assert bound.posterior == pytest.approx(float(pure_posterior(eps + math.log(2), prior)))
    passed = belief > bound.posterior
    assert belief[0] == 1.0 and passed.tolist() == [True, False, False, False]
    assert np.sum(p_in[passed]) <= bound.failure_probability


def test_zcdp_posterior_through_its_loss_tail():
    """ρ-zCDP is read through the tail of its privacy loss, P(L > ρ + 2√(ρ ln(1/f))) <= f, not
    through the (ε, δ) conversion (whose ε the loss passes more often than δ)."""
    rho = 0.5
    default = max_posterior(ZCDP(rho), 0.5)
    eps = rho + 2 * math.sqrt(rho * math.log(1e6))
    assert DEFAULT_ZCDP_DELTA == 1e-6
    assert default.epsilon == pytest.approx(eps, rel=1e-12)
    assert default.failure_probability == 1e-6
    assert default.posterior == pytest.approx(float(pure_posterior(eps, 0.5)), rel=1e-12)
    assert default.epsilon > ZCDP(rho).to_approx(1e-6).epsilon
    chosen = max_posterior(ZCDP(rho), [0.1, 0.5], delta=1e-3)
    eps3 = rho + 2 * math.sqrt(rho * math.log(1e3))
    np.testing.assert_allclose(chosen.posterior, pure_posterior(eps3, [0.1, 0.5]), rtol=1e-12)
    assert chosen.failure_probability == 1e-3


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
    # e/(1 + e) = 73.106%: a bound on a belief rounds up
    assert 100 * math.e / (1 + math.e) == pytest.approx(73.106, abs=1e-3)
    assert "starts at 50%" in text and "at most 73.2% certainty" in text
    assert "Alice" in text and "except" not in text


def test_describe_risk_states_the_true_failure_probability():
    """(ε, δ): the bound at ε + ln 2 with 2δ (issue 9: at ε = 1, prior 50%, "at most 84.5%,
    except with probability 2δ"); zCDP: the Rényi tail at 1e-6; the Gaussian: its exact law."""
    text = describe_risk(ApproxDP(1.0, 1e-6), 0.5)
    assert "at most 84.5% certainty" in text and "probability at most 2e-06" in text
    text = describe_risk(ApproxDP(1.0, 1e-5), 0.1)
    assert "starts at 10%" in text and "probability at most 2e-05" in text
    # prior 10%: posterior odds (1/9)·2e → 2e/(2e + 9) = 37.66% → "37.7%"
    assert "at most 37.7%" in text
    text = describe_risk(ZCDP(0.5))
    loss = 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))      # 5.7565
    assert "ρ = 0.5" in text and "5.76" in text and "probability at most 1e-06" in text
    assert f"{100 / (1 + math.exp(-loss)):.2f}" == "99.68"   # 99.684 → shown rounded up
    assert "at most 99.69%" in text
    mu = 1.0
    text = describe_risk(None, 0.5, gaussian_mu=mu, delta=1e-6)
    loss = mu * mu / 2 + mu * norm.isf(1e-6)                # 5.2534
    assert f"at most {math.ceil(1e4 / (1 + math.exp(-loss))) / 100}%" in text
    assert "probability 1e-06" in text


def test_describe_risk_never_rounds_a_bound_to_certainty():
    # eps = 10: 1 - bound = 1/(1 + e^10) = 4.5e-5, which must not print as 100%
    text = describe_risk(PureDP(10.0))
    assert "100%" not in text and "99.9955%" in text
    assert "essentially certain" in describe_risk(PureDP(60.0))
    # prior 0.1%: e^0.01·0.001/(e^0.01·0.001 + 0.999) = 0.101004% → rounded up 0.102%
    assert "at most 0.102%" in describe_risk(PureDP(0.01), 0.001)


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


@pytest.mark.slow
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


@pytest.mark.slow
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


# -- the failure probability of a belief bound, against the real mechanism ------------------


def simulated_beliefs(mechanism, prior: float, *, releases: int, seed: int) -> np.ndarray:
    """The attacker's realised belief after each of ``releases`` outputs of ``mechanism`` on
    the neighbouring input with Alice in (true value = sensitivity; without her: 0).

    The likelihood ratio of each output is read off scipy's normal density, independently of
    dpcore.risk: posterior log-odds = prior log-odds + log p_in(y) − log p_out(y).
    """
    rng = np.random.default_rng(seed)
    sigma, sensitivity = mechanism.scale, mechanism.sensitivity
    beliefs = []
    for chunk in np.array_split(np.arange(releases), 8):
        y = mechanism.sample(sensitivity, rng=rng, trials=chunk.size)
        loss = norm.logpdf(y, sensitivity, sigma) - norm.logpdf(y, 0.0, sigma)
        beliefs.append(1 / (1 + np.exp(-(math.log(prior / (1 - prior)) + loss))))
    return np.concatenate(beliefs)


def binomial_upper(count: int, n: int) -> float:
    """A one-sided 99.99% upper limit on a frequency (Clopper-Pearson)."""
    from scipy.stats import beta as beta_dist
    return float(beta_dist.ppf(1 - 1e-4, count + 1, n - count))


@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "delta", "issue_figure"),
                         [(1.0, 1e-6, 2.0e-5), (0.5, 1e-5, 2.9e-4)])
def test_gaussian_passes_the_epsilon_bound_as_its_privacy_loss_says(epsilon, delta,
                                                                    issue_figure):
    """Issue 9: the app's Gaussian mechanism at (ε, δ) passes the ε-only belief bound (73.1% at
    ε = 1, prior 50%) with probability ≈ 20·δ — not δ. The exact figure from the privacy-loss
    law N(μ²/2, μ²) agrees with a simulation of the mechanism within sampling error."""
    from dpcore.mechanisms.gaussian import Gaussian
    from dpcore.risk import exceed_probability

    mechanism = Gaussian(sensitivity=1.0, epsilon=epsilon, delta=delta)
    mu = 1.0 / mechanism.scale
    ceiling = float(pure_posterior(epsilon, 0.5))
    exact = exceed_probability(None, 0.5, ceiling, gaussian_mu=mu)
    assert exact == pytest.approx(issue_figure, rel=0.03)
    releases = 8_000_000 if epsilon == 1.0 else 1_000_000
    beliefs = simulated_beliefs(mechanism, 0.5, releases=releases, seed=9)
    count = int(np.count_nonzero(beliefs > ceiling))
    # ≈ 160 (ε = 1) and ≈ 290 (ε = 0.5) releases pass: within 4.5 Poisson standard errors
    assert abs(count - exact * releases) <= 4.5 * math.sqrt(exact * releases), count
    # ... and far above δ: the old claim ("except with probability at most δ") was wrong
    assert count / releases > 5 * delta


@pytest.mark.parametrize("prior", [0.01, 0.1, 0.5])
def test_approx_belief_bound_holds_for_the_apps_gaussian(prior):
    """The (ε, δ) statement — at most the bound, except with the stated probability — holds for
    the Gaussian mechanism calibrated to (1, 1e-6): the stated probability is at least the
    simulated frequency of passing the stated belief (a 99.99% upper limit of it)."""
    from dpcore.mechanisms.gaussian import Gaussian

    mechanism = Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6)
    posterior, failure, _ = max_posterior(ApproxDP(1.0, 1e-6), prior)
    beliefs = simulated_beliefs(mechanism, prior, releases=2_000_000, seed=11)
    passed = int(np.count_nonzero(beliefs > posterior))
    assert failure >= passed / beliefs.size
    # the statement is exact arithmetic, not luck: the exact tail is below it too
    from dpcore.risk import exceed_probability
    tail = exceed_probability(None, prior, posterior, gaussian_mu=1.0 / mechanism.scale)
    assert tail <= failure


def test_approx_belief_bound_is_the_issues_figure_and_tight():
    """ε = 1, δ = 1e-6, prior 50%: at most 84.5%, except with probability 2δ (t = ln 2 in
    P(L > ε + t) <= δ / (1 − e^−t)). A two-output mechanism that is exactly (ε, δ)-DP reaches
    the bound with probability exactly 2δ, so neither number can be improved at this t."""
    eps, delta, prior = 1.0, 1e-6, 0.5
    posterior, failure, loss = max_posterior(ApproxDP(eps, delta), prior)
    assert loss == pytest.approx(eps + math.log(2), rel=1e-15)
    assert posterior == pytest.approx(2 * math.e / (2 * math.e + 1), rel=1e-14)
    assert f"{100 * posterior:.1f}%" == "84.5%"
    assert failure == pytest.approx(2 * delta, rel=1e-15)
    q = delta / (1 - math.exp(-math.log(2)))                   # = 2δ
    p_in = np.array([q, 1 - q])
    p_out = np.array([q * math.exp(-eps - math.log(2)), 1 - q * math.exp(-eps - math.log(2))])
    # exactly (ε, δ)-DP in both directions
    assert np.sum(np.maximum(0, p_in - math.exp(eps) * p_out)) == pytest.approx(delta, rel=1e-9)
    assert np.sum(np.maximum(0, p_out - math.exp(eps) * p_in)) <= delta
    belief = prior * p_in / (prior * p_in + (1 - prior) * p_out)
    assert belief[0] == pytest.approx(posterior, rel=1e-12) and p_in[0] == pytest.approx(failure)
    assert belief[1] < posterior


@settings(max_examples=150, deadline=None)
@given(p_in=st.lists(st.floats(1e-6, 1.0), min_size=2, max_size=6),
       p_out=st.lists(st.floats(1e-6, 1.0), min_size=6, max_size=6),
       epsilon=st.floats(0.0, 3.0), prior=st.floats(1e-3, 0.999))
def test_approx_belief_bound_holds_for_any_finite_mechanism(p_in, p_out, epsilon, prior):
    """Any mechanism on a few outputs is (ε, δ(ε))-DP with δ(ε) = Σ (p_in − e^ε p_out)+ (and
    the same the other way); the belief bound at that (ε, δ) fails at most as often as said."""
    a = np.array(p_in) / np.sum(p_in)
    b = np.array(p_out[:len(p_in)]) / np.sum(p_out[:len(p_in)])
    delta = max(np.sum(np.maximum(0, a - math.exp(epsilon) * b)),
                np.sum(np.maximum(0, b - math.exp(epsilon) * a)))
    if not 0 < delta < 1:
        return
    posterior, failure, _ = max_posterior(ApproxDP(epsilon, float(delta)), prior)
    belief = prior * a / (prior * a + (1 - prior) * b)
    assert np.sum(a[belief > posterior * (1 + 1e-12)]) <= failure * (1 + 1e-9)


@pytest.mark.parametrize("rho", [0.005, 0.0242, 0.5, 3.0])
def test_zcdp_belief_bound_holds_for_the_gaussian(rho):
    """ρ-zCDP: the belief bound fails at most with the stated probability. Checked against the
    Gaussian mechanism with σ = Δ/√(2ρ), which is ρ-zCDP: its privacy loss is N(ρ, 2ρ)
    exactly (scipy), and a simulation. The old reading — ε(δ) of the (ε, δ) conversion, failing
    with probability δ — does not hold: at ρ = 0.5 the Gaussian passes it with probability
    1.2e-6 > 1e-6."""
    from dpcore.mechanisms.gaussian import Gaussian

    for prior in (0.01, 0.5):
        posterior, failure, _ = max_posterior(ZCDP(rho), prior)
        threshold = math.log(posterior / (1 - posterior)) - math.log(prior / (1 - prior))
        exact = norm.sf((threshold - rho) / math.sqrt(2 * rho))
        assert exact <= failure
    mechanism = Gaussian(sensitivity=1.0, rho=rho)
    posterior, failure, _ = max_posterior(ZCDP(rho), 0.5, delta=1e-2)
    beliefs = simulated_beliefs(mechanism, 0.5, releases=400_000, seed=13)
    passed = int(np.count_nonzero(beliefs > posterior))
    assert binomial_upper(passed, beliefs.size) <= failure or passed / beliefs.size <= failure
    assert passed / beliefs.size <= failure


def test_zcdp_belief_bound_is_the_renyi_tail():
    """P(L > ρ + 2√(ρ ln(1/δ))) <= δ for ρ-zCDP (Bun & Steinke 2016), read as a belief bound."""
    for rho, delta in [(0.5, 1e-6), (0.0242, 1e-6), (2.0, 1e-3)]:
        loss = rho + 2 * math.sqrt(rho * math.log(1 / delta))
        posterior, failure, epsilon = max_posterior(ZCDP(rho), 0.5, delta=delta)
        assert epsilon == pytest.approx(loss, rel=1e-12)
        assert posterior == pytest.approx(1 / (1 + math.exp(-loss)), rel=1e-12)
        assert failure == delta


@pytest.mark.parametrize("mu", [0.05, 0.2367, 1.0, 3.0])
def test_gaussian_exact_belief_statement(mu):
    """The Gaussian mechanism's own statement: its belief passes b with probability
    Q((logit b − logit p − μ²/2)/μ) exactly, and the bound at failure f is that tail's inverse."""
    from dpcore.risk import exceed_probability

    for prior in (0.01, 0.5):
        posterior, failure, loss = max_posterior(None, prior, gaussian_mu=mu, delta=1e-6)
        assert failure == 1e-6
        assert loss == pytest.approx(mu * mu / 2 + mu * norm.isf(1e-6), rel=1e-12)
        assert exceed_probability(None, prior, posterior, gaussian_mu=mu) == pytest.approx(
            1e-6, rel=1e-9)
        for belief in (0.6, 0.9, 0.999):
            s = math.log(belief / (1 - belief)) - math.log(prior / (1 - prior))
            assert exceed_probability(None, prior, belief, gaussian_mu=mu) == pytest.approx(
                norm.sf((s - mu * mu / 2) / mu), rel=1e-12, abs=1e-300)


def test_exceed_probability_of_the_guarantees():
    """What a guarantee alone says about passing a belief: pure DP never passes its bound and
    promises nothing below it; (ε, δ) gives δ / (1 − e^−t) beyond e^(ε+t); zCDP the Rényi tail."""
    from dpcore.risk import exceed_probability

    bound = float(pure_posterior(1.0, 0.5))
    assert exceed_probability(PureDP(1.0), 0.5, bound + 1e-9) == 0.0
    assert exceed_probability(PureDP(1.0), 0.5, 0.7) == 1.0
    belief = 1 / (1 + math.exp(-(1.0 + 0.3)))             # ε + t with t = 0.3
    assert exceed_probability(ApproxDP(1.0, 1e-6), 0.5, belief) == pytest.approx(
        1e-6 / (1 - math.exp(-0.3)), rel=1e-9)
    assert exceed_probability(ApproxDP(1.0, 1e-6), 0.5, bound) == 1.0
    belief = 1 / (1 + math.exp(-3.0))
    assert exceed_probability(ZCDP(0.5), 0.5, belief) == pytest.approx(
        math.exp(-(3.0 - 0.5) ** 2 / 2.0), rel=1e-9)
    np.testing.assert_allclose(
        exceed_probability(PureDP(1.0), np.array([0.1, 0.5]), np.array([0.99, 0.6])), [0.0, 1.0])
    for privacy in (PureDP(1.0), ApproxDP(1.0, 1e-3), ZCDP(1.0)):  # nobody passes certainty
        assert exceed_probability(privacy, 0.5, 1.0) == 0.0
    assert exceed_probability(None, 0.5, 1.0, gaussian_mu=2.0) == 0.0
