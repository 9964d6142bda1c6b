"""Tests for dpcore.additive: closed forms, calibrations against OpenDP and diffprivlib,
samplers against their analytic laws, shapes, chunking and validation at the boundary.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from dpcore import _checks
from dpcore.additive import (
    BoundedLaplace,
    ClampedLaplace,
    Gaussian,
    Geometric,
    Laplace,
    make_mechanism,
)
from dpcore.measures import ZCDP, ApproxDP, PureDP

# Statistical tests below use fixed seeds and reject at p < P_MIN: a correct sampler fails one
# of them with probability ~1e-3 per seed, i.e. never for the fixed seeds used here.
P_MIN = 1e-3

HYPOTHESIS = settings(max_examples=60, deadline=None)


def all_mechanisms():
    return [
        Laplace(sensitivity=1.0, epsilon=0.7),
        Gaussian(sensitivity=1.0, epsilon=0.7, delta=1e-6),
        Geometric(sensitivity=1, epsilon=0.7),
        BoundedLaplace(sensitivity=1.0, lower=-5.0, upper=20.0, epsilon=0.7),
        ClampedLaplace(sensitivity=1.0, lower=-5.0, upper=20.0, epsilon=0.7),
    ]


MECHANISM_IDS = ["laplace", "gaussian", "geometric", "bounded", "clamped"]


# --------------------------------------------------------------------------------------------
# independent reference formulas (written here, never taken from the code under test)
# --------------------------------------------------------------------------------------------


def gaussian_delta_by_integration(sigma: float, sens: float, eps: float) -> float:
    """Hockey-stick divergence of N(0, σ²) from N(Δ, σ²) at ε, by quadrature of the densities.

    δ(ε) = ∫ p(x) (1 − e^{ε − L(x)})₊ dx with L(x) = log p(x)/q(x) = (Δ² − 2xΔ)/(2σ²), which is
    positive exactly for x < x* = Δ/2 − εσ²/Δ; substitute x = x* − tσ.
    """
    x_star = sens / 2 - eps * sigma**2 / sens

    def integrand(t: float) -> float:
        x = x_star - t * sigma
        loss = (sens**2 - 2 * x * sens) / (2 * sigma**2)
        return stats.norm.pdf(x, scale=sigma) * -math.expm1(eps - loss) * sigma

    value, _ = integrate.quad(integrand, 0, np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return value


def truncated_laplace_cdf(x, q, b, lo, hi):
    """CDF of Laplace(q, b) conditioned on [lo, hi], from scipy's Laplace CDF."""
    law = stats.laplace(loc=q, scale=b)
    x = np.clip(x, lo, hi)
    return (law.cdf(x) - law.cdf(lo)) / (law.cdf(hi) - law.cdf(lo))


def truncated_laplace_moments(q, b, lo, hi):
    """Mean and variance of the error of the bounded Laplace at true value q, by quadrature."""
    law = stats.laplace(loc=q, scale=b)
    mass = law.cdf(hi) - law.cdf(lo)
    pts = [q] if lo < q < hi else None
    # absolute tolerance: the mean error is exactly 0 for a centred true value
    m1 = integrate.quad(lambda x: (x - q) * law.pdf(x), lo, hi, points=pts,
                        epsabs=1e-13, epsrel=1e-10)[0] / mass
    m2 = integrate.quad(lambda x: (x - q - m1) ** 2 * law.pdf(x), lo, hi, points=pts,
                        epsabs=1e-13, epsrel=1e-10)[0] / mass
    return m1, m2


def clamped_laplace_moments(q, b, lo, hi):
    """Mean and variance of clip(q + L, lo, hi) − q: point masses plus quadrature of the middle."""
    law = stats.laplace(loc=q, scale=b)
    p_lo, p_hi = law.cdf(lo), law.sf(hi)
    pts = [q] if lo < q < hi else None

    def moment(g):
        inner = integrate.quad(lambda x: g(x - q) * law.pdf(x), lo, hi, points=pts,
                               epsabs=1e-13, epsrel=1e-10)[0]
        return g(lo - q) * p_lo + g(hi - q) * p_hi + inner

    mean = moment(lambda e: e)
    return mean, moment(lambda e: (e - mean) ** 2)


def discrete_laplace_pmf_table(scale: float, k_max: int):
    """P(Z = k) for |k| <= k_max by explicit normalisation of exp(−|k|/scale)."""
    k = np.arange(-k_max, k_max + 1)
    weights = np.exp(-np.abs(k) / scale)
    # the mass beyond ±k_max, summed as a geometric series, completes the normaliser
    r = math.exp(-1 / scale)
    tail = 2 * r ** (k_max + 1) / (1 - r)
    return k, weights / (weights.sum() + tail)


# --------------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sens, eps", [(1.0, 1.0), (2.5, 0.1), (0.3, 7.0)])
@pytest.mark.parametrize("beta", [0.5, 0.05, 1e-6])
def test_laplace_accuracy_scale_and_variance_closed_forms(sens, eps, beta):
    mech = Laplace(sensitivity=sens, epsilon=eps)
    b = sens / eps
    assert mech.scale == pytest.approx(b, rel=1e-15)
    assert mech.accuracy(beta) == pytest.approx(b * math.log(1 / beta), rel=1e-14)
    # the bound is tight: P(|Z| > alpha) is beta itself
    assert 2 * stats.laplace.sf(mech.accuracy(beta), scale=b) == pytest.approx(beta, rel=1e-12)
    assert mech.variance([1.0, 2.0]) == pytest.approx([2 * b * b] * 2, rel=1e-15)
    assert np.all(mech.bias(np.ones((2, 3))) == 0)
    assert mech.mse(3.0) == pytest.approx(2 * b * b, rel=1e-15)
    assert mech.privacy == PureDP(eps)
    assert mech.integer_output is False


def test_laplace_error_distribution_matches_scipy():
    mech = Laplace(sensitivity=1.0, scale=1.7)
    x = np.linspace(-30, 30, 601)
    np.testing.assert_allclose(mech.error_cdf(x), stats.laplace.cdf(x, scale=1.7), rtol=1e-12)
    np.testing.assert_allclose(mech.error_pdf(x), stats.laplace.pdf(x, scale=1.7), rtol=1e-12)
    assert mech.error_cdf(-np.inf) == 0 and mech.error_cdf(np.inf) == 1
    assert mech.privacy.epsilon == pytest.approx(1 / 1.7)


@pytest.mark.parametrize("beta", [0.3, 0.05, 1e-9])
def test_gaussian_accuracy_variance_and_rho(beta):
    mech = Gaussian(sensitivity=2.0, rho=0.125)
    sigma = 2.0 / math.sqrt(2 * 0.125)
    assert mech.scale == pytest.approx(sigma, rel=1e-15)
    assert mech.accuracy(beta) == pytest.approx(sigma * stats.norm.isf(beta / 2), rel=1e-12)
    assert mech.variance(np.zeros(3)) == pytest.approx([sigma**2] * 3, rel=1e-15)
    assert mech.privacy == ZCDP(0.125) and mech.zcdp == ZCDP(0.125)
    x = np.linspace(-40, 40, 401)
    np.testing.assert_allclose(mech.error_cdf(x), stats.norm.cdf(x, scale=sigma), rtol=1e-12,
                               atol=1e-300)
    np.testing.assert_allclose(mech.error_pdf(x), stats.norm.pdf(x, scale=sigma), rtol=1e-12)


@pytest.mark.parametrize("scale", [0.2, 1.0, 3.7, 40.0])
def test_geometric_pmf_variance_cdf_and_tails_closed_forms(scale):
    mech = Geometric(sensitivity=1, scale=scale)
    k_max = int(60 * scale) + 60
    k, table = discrete_laplace_pmf_table(scale, k_max)
    np.testing.assert_allclose(mech.error_pmf(k), table, rtol=1e-12, atol=1e-300)
    assert mech.error_pmf(k).sum() == pytest.approx(1.0, abs=1e-12)
    assert mech.error_pmf([0.5, -1.5]) == pytest.approx([0.0, 0.0])
    np.testing.assert_allclose(mech.error_cdf(k), np.cumsum(table), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(mech.error_cdf(k + 0.5), np.cumsum(table), rtol=1e-10,
                               atol=1e-15)
    r = math.exp(-1 / scale)
    variance = 2 * r / (1 - r) ** 2
    assert mech.variance(0) == pytest.approx(variance, rel=1e-10)
    assert float(np.sum(k.astype(float) ** 2 * table)) == pytest.approx(variance, rel=1e-9)
    for beta in (0.5, 0.05, 1e-4):
        alpha = mech.accuracy(beta)
        assert isinstance(alpha, int)
        tail = table[np.abs(k) > alpha].sum()
        assert tail <= beta * (1 + 1e-12)
        if alpha > 0:  # smallest: one less fails
            assert table[np.abs(k) > alpha - 1].sum() > beta
    assert mech.integer_output is True
    assert mech.privacy == PureDP(1 / scale)


def test_geometric_scale_is_capped_where_int64_sampling_would_saturate():
    # numpy's geometric saturates at 2**63 − 1 for success probabilities below ~1e-18, which
    # would silently make the noise 0; the cap keeps draws far from that.
    assert Geometric(sensitivity=1, scale=1e12).accuracy(0.05) == pytest.approx(
        1e12 * math.log(20), rel=1e-9)
    with pytest.raises(ValueError, match="scale"):
        Geometric(sensitivity=1, scale=1e13)
    with pytest.raises(ValueError, match="scale"):
        Geometric(sensitivity=1, epsilon=1e-13)


def test_geometric_accepts_integral_float_sensitivity_and_scales_epsilon():
    mech = Geometric(sensitivity=3.0, epsilon=1.5)
    assert mech.sensitivity == 3 and mech.scale == pytest.approx(2.0)
    assert mech.privacy.epsilon == pytest.approx(1.5)


# --------------------------------------------------------------------------------------------
# accuracy against OpenDP
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def test_laplace_accuracy_matches_opendp(opendp):
    rng = np.random.default_rng(11)
    for _ in range(50):
        scale, beta = 10 ** rng.uniform(-3, 3), 10 ** rng.uniform(-10, -0.01)
        ours = Laplace(sensitivity=1.0, scale=scale).accuracy(beta)
        assert ours == pytest.approx(opendp.laplacian_scale_to_accuracy(scale, beta), rel=1e-12)


def test_discrete_laplace_accuracy_is_floor_of_opendp(opendp):
    """OpenDP returns the real t with P(|Z| >= t) = alpha at whole t; "take the floor without
    affecting coverage". Ours is the smallest whole a with P(|Z| > a) <= beta, and
    P(|Z| > a) = P(|Z| >= a + 1), so a = ceil(t) − 1 = floor(t) unless t is a whole number."""
    rng = np.random.default_rng(12)
    checked = 0
    for _ in range(50):
        scale, beta = 10 ** rng.uniform(-1, 3), 10 ** rng.uniform(-10, -0.01)
        t = opendp.discrete_laplacian_scale_to_accuracy(scale, beta)
        if abs(t - round(t)) < 1e-9:
            continue
        assert Geometric(sensitivity=1, scale=scale).accuracy(beta) == max(0, math.floor(t))
        checked += 1
    assert checked >= 45


# --------------------------------------------------------------------------------------------
# Gaussian: analytic calibration
# --------------------------------------------------------------------------------------------


def test_gaussian_sigma_matches_diffprivlib_analytic():
    """Over eps in [1e-3, 10], delta in [1e-8, 0.5], where diffprivlib's erf-based Φ is exact
    enough; outside it diffprivlib drifts (e.g. 2.8% at eps=10, delta=1e-15) — the quadrature
    test below shows ours is the right one there."""
    from diffprivlib.mechanisms import GaussianAnalytic

    rng = np.random.default_rng(21)
    for _ in range(50):
        eps, delta = 10 ** rng.uniform(-3, 1), 10 ** rng.uniform(-8, math.log10(0.5))
        sens = 10 ** rng.uniform(-2, 2)
        ours = Gaussian(sensitivity=sens, epsilon=eps, delta=delta).scale
        ref = GaussianAnalytic(epsilon=eps, delta=delta, sensitivity=sens)._scale
        assert ours == pytest.approx(ref, rel=1e-6)


def test_gaussian_calibration_is_private_and_tight_by_quadrature():
    """δ(ε) at the calibrated sigma, integrated numerically from the two densities, is at most
    delta and within 1e-6 of it, over the whole advertised range."""
    rng = np.random.default_rng(22)
    eps_grid = np.concatenate([[1e-3, 100.0], 10 ** rng.uniform(-3, 2, 40)])
    delta_grid = np.concatenate([[1e-15, 0.5], 10 ** rng.uniform(-15, math.log10(0.5), 40)])
    for eps, delta in zip(eps_grid, delta_grid, strict=True):
        sigma = Gaussian(sensitivity=1.0, epsilon=eps, delta=delta).scale
        reference = gaussian_delta_by_integration(sigma, 1.0, eps)
        assert reference <= delta * (1 + 1e-8), (eps, delta)
        assert reference >= delta * (1 - 1e-6), (eps, delta)
    # power: 1% less noise than calibrated must break the delta budget at every corner
    for eps, delta in [(1e-3, 1e-15), (100.0, 1e-15), (1e-3, 0.5), (100.0, 0.5), (1.0, 1e-5)]:
        sigma = Gaussian(sensitivity=1.0, epsilon=eps, delta=delta).scale
        assert gaussian_delta_by_integration(0.99 * sigma, 1.0, eps) > delta * (1 + 1e-4)


def test_gaussian_is_not_the_classic_calibration():
    eps, delta = 0.5, 1e-5
    classic = math.sqrt(2 * math.log(1.25 / delta)) / eps
    sigma = Gaussian(sensitivity=1.0, epsilon=eps, delta=delta).scale
    assert sigma < 0.9 * classic
    # and it works beyond eps = 1, where the classic formula does not hold at all
    assert Gaussian(sensitivity=1.0, epsilon=20.0, delta=1e-5).scale > 0


@pytest.mark.parametrize("sigma", [0.05, 0.7, 3.0, 250.0])
def test_gaussian_profile_and_its_inverse(sigma):
    mech = Gaussian(sensitivity=1.3, scale=sigma)
    for eps in (0.0, 1e-3, 0.5, 4.0):
        ref = gaussian_delta_by_integration(sigma, 1.3, eps) if eps > 0 else (
            2 * stats.norm.cdf(1.3 / (2 * sigma)) - 1)
        assert mech.delta_for_epsilon(eps) == pytest.approx(ref, rel=1e-8)
    for delta in (1e-12, 1e-6, 1e-2):
        eps = mech.epsilon_for_delta(delta)
        if eps == 0.0:
            assert mech.delta_for_epsilon(0.0) <= delta
            continue
        assert mech.delta_for_epsilon(eps) <= delta
        assert mech.delta_for_epsilon(eps * (1 - 1e-9)) > delta  # smallest such epsilon


def test_gaussian_round_trip_and_privacy_measure():
    mech = Gaussian(sensitivity=2.0, epsilon=0.8, delta=1e-7)
    assert mech.privacy == ApproxDP(0.8, 1e-7)
    assert mech.epsilon_for_delta(1e-7) == pytest.approx(0.8, rel=1e-9)
    assert mech.zcdp.rho == pytest.approx(2.0**2 / (2 * mech.scale**2), rel=1e-15)
    assert Gaussian(sensitivity=1.0, scale=2.0).privacy == ZCDP(0.125)


def test_gaussian_large_delta_needs_no_epsilon():
    mech = Gaussian(sensitivity=1.0, scale=1.0)
    assert mech.epsilon_for_delta(0.9) == 0.0  # 2Φ(1/2) − 1 = 0.383 < 0.9


# --------------------------------------------------------------------------------------------
# Bounded Laplace
# --------------------------------------------------------------------------------------------


def _random_bounded_configs(seed: int, n: int):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        eps = 10 ** rng.uniform(-2, 1)
        delta = 0.0 if rng.random() < 0.5 else 10 ** rng.uniform(-8, -0.5)
        lower = rng.uniform(-10, 10)
        width = 10 ** rng.uniform(-1, 2)
        sens = width * 10 ** rng.uniform(-3, -0.01)  # diffprivlib needs sensitivity < width
        yield eps, delta, lower, lower + width, sens, rng


def test_bounded_laplace_scale_bias_variance_match_diffprivlib():
    from diffprivlib.mechanisms import LaplaceBoundedDomain

    for eps, delta, lo, hi, sens, rng in _random_bounded_configs(31, 50):
        ours = BoundedLaplace(sensitivity=sens, lower=lo, upper=hi, epsilon=eps, delta=delta)
        ref = LaplaceBoundedDomain(epsilon=eps, delta=delta, sensitivity=sens, lower=lo,
                                   upper=hi)
        ref_scale = ref._find_scale()
        assert ours.scale == pytest.approx(ref_scale, rel=1e-6)
        ref._scale = ours.scale  # compare bias/variance at the same scale
        q = rng.uniform(lo, hi, 4)
        np.testing.assert_allclose(ours.bias(q), [ref.bias(v) for v in q],
                                   rtol=1e-6, atol=1e-9 * ours.scale)
        np.testing.assert_allclose(ours.variance(q), [ref.variance(v) for v in q], rtol=1e-6)


def test_bounded_laplace_scale_exceeds_plain_laplace_and_reports_privacy():
    mech = BoundedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, epsilon=1.0)
    assert mech.scale > 1.0
    assert mech.privacy == PureDP(1.0)
    assert mech.effective_epsilon <= 1.0 and mech.effective_epsilon == pytest.approx(1.0)
    approx = BoundedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, epsilon=1.0, delta=0.1)
    assert approx.privacy == ApproxDP(1.0, 0.1)
    assert approx.scale < mech.scale
    assert approx.effective_epsilon == pytest.approx(1.0 - math.log(0.9))


@pytest.mark.parametrize("sens, lo, hi, eps, delta", [
    (1.0, 0.0, 10.0, 1.0, 0.0),
    (0.5, -2.0, 3.0, 0.3, 1e-3),
    (2.0, 0.0, 4.0, 4.0, 0.0),
    (20.0, 0.0, 10.0, 1.0, 0.0),  # sensitivity wider than the domain: the domain limits it
])
def test_bounded_laplace_worst_case_privacy_loss_by_brute_force(sens, lo, hi, eps, delta):
    """The largest log-density ratio over neighbouring true values (|q − q'| <= sensitivity, both
    in the domain) and outputs is epsilon − ln(1 − delta), found on a grid that contains the
    worst pair (l, l + Δ) and output l. Densities come from scipy's Laplace."""
    mech = BoundedLaplace(sensitivity=sens, lower=lo, upper=hi, epsilon=eps, delta=delta)
    b = mech.scale
    steps = 100
    q = np.linspace(lo, hi, steps + 1)
    x = np.linspace(lo, hi, 301)
    mass = stats.laplace.cdf(hi, loc=q, scale=b) - stats.laplace.cdf(lo, loc=q, scale=b)
    log_density = stats.laplace.logpdf(x[None, :], loc=q[:, None], scale=b) - np.log(mass)[:, None]
    reach = int(round(min(sens, hi - lo) / ((hi - lo) / steps)))
    worst = max(
        np.max(log_density[:-k or None] - log_density[k:]) for k in range(1, reach + 1))
    worst = max(worst, max(
        np.max(log_density[k:] - log_density[:-k or None]) for k in range(1, reach + 1)))
    target = eps - math.log1p(-delta)
    assert worst <= target + 1e-9
    assert worst >= target - 1e-9  # tight: the calibration adds no slack
    # power: 1% less noise breaks it
    b_small = 0.99 * b
    mass_small = (stats.laplace.cdf(hi, loc=lo, scale=b_small)
                  - stats.laplace.cdf(lo, loc=lo, scale=b_small))
    mass_small_next = (stats.laplace.cdf(hi, loc=lo + min(sens, hi - lo), scale=b_small)
                       - stats.laplace.cdf(lo, loc=lo + min(sens, hi - lo), scale=b_small))
    assert min(sens, hi - lo) / b_small + math.log(mass_small_next / mass_small) > target


def test_bounded_laplace_moments_match_quadrature_and_monte_carlo():
    mech = BoundedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, epsilon=0.5)
    q = np.array([0.0, 0.3, 2.0, 5.0, 9.0, 10.0])
    ref = np.array([truncated_laplace_moments(v, mech.scale, 0.0, 10.0) for v in q])
    np.testing.assert_allclose(mech.bias(q), ref[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(mech.variance(q), ref[:, 1], rtol=1e-9)
    np.testing.assert_allclose(mech.mse(q), ref[:, 1] + ref[:, 0] ** 2, rtol=1e-9)
    assert abs(mech.bias(0.0)) > 1.0  # the bias is real, pointing into the domain
    # Monte Carlo, 2·10^5 releases per value: means within 5 standard errors
    draws = mech.sample(q, rng=np.random.default_rng(32), trials=200_000)
    errors = draws - q
    se = np.sqrt(ref[:, 1] / errors.shape[0])
    assert np.all(np.abs(errors.mean(axis=0) - ref[:, 0]) < 5 * se)
    np.testing.assert_allclose(errors.var(axis=0), ref[:, 1], rtol=0.02)


def test_bounded_laplace_moments_stay_accurate_when_noise_dwarfs_domain():
    # scale >> width: the law tends to uniform on the domain, variance width²/12
    mech = BoundedLaplace(sensitivity=1e-3, lower=0.0, upper=1.0, epsilon=1e-9)
    assert mech.variance(0.5) == pytest.approx(1 / 12, rel=1e-6)
    assert mech.bias(0.0) == pytest.approx(0.5, rel=1e-6)


def test_bounded_laplace_error_distribution_and_accuracy():
    mech = BoundedLaplace(sensitivity=1.0, lower=-3.0, upper=7.0, epsilon=0.8)
    b = mech.scale
    for q in (-3.0, -2.5, 1.0, 6.9, 7.0):
        x = np.linspace(-12, 12, 241)
        expected = truncated_laplace_cdf(q + x, q, b, -3.0, 7.0)
        np.testing.assert_allclose(mech.error_cdf(x, true_value=q), expected, atol=1e-12)
        # the pdf integrates to the cdf
        total = integrate.quad(lambda e, q=q: float(mech.error_pdf(e, true_value=q)),
                               -3.0 - q, 7.0 - q, points=[0.0] if -3 < q < 7 else None)[0]
        assert total == pytest.approx(1.0, rel=1e-9)
        for beta in (0.5, 0.05, 1e-3):
            alpha = mech.accuracy(beta, true_value=q)
            inside = (truncated_laplace_cdf(q + alpha, q, b, -3.0, 7.0)
                      - truncated_laplace_cdf(q - alpha, q, b, -3.0, 7.0))
            assert 1 - inside == pytest.approx(beta, rel=1e-7)
    vector = mech.accuracy(0.05, true_value=[-3.0, 2.0, 7.0])
    assert vector.shape == (3,) and vector[0] == pytest.approx(vector[2])


# --------------------------------------------------------------------------------------------
# Clamped Laplace
# --------------------------------------------------------------------------------------------


def test_clamped_laplace_moments_match_quadrature_and_point_masses():
    mech = ClampedLaplace(sensitivity=2.0, lower=0.0, upper=10.0, epsilon=1.0)
    b = mech.scale
    q = np.array([-6.0, -0.5, 0.0, 0.4, 5.0, 9.0, 10.0, 13.0])
    ref = np.array([clamped_laplace_moments(v, b, 0.0, 10.0) for v in q])
    np.testing.assert_allclose(mech.bias(q), ref[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(mech.variance(q), ref[:, 1], rtol=1e-8, atol=1e-14)
    at_lower, at_upper = mech.point_masses(q)
    np.testing.assert_allclose(at_lower, stats.laplace.cdf(0.0, loc=q, scale=b), rtol=1e-12)
    np.testing.assert_allclose(at_upper, stats.laplace.sf(10.0, loc=q, scale=b), rtol=1e-12)
    assert mech.privacy == PureDP(1.0)
    assert mech.bias(5.0) == pytest.approx(0.0, abs=1e-9)  # symmetric in the middle


def test_clamped_laplace_mse_far_outside_the_domain_is_refused_not_an_overflow():
    mech = ClampedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, epsilon=1.0)
    with np.errstate(over="raise", invalid="raise"):
        with pytest.raises(ValueError, match="overflows float64"):
            mech.mse([1e300, 5.0])  # bias -1e300: its square is beyond float64
        far = mech.mse([1e150, 5.0])  # still representable: variance + bias²
    assert far[0] == pytest.approx((1e150 - 10.0) ** 2, rel=1e-12)
    assert far[1] == pytest.approx(float(mech.variance(5.0) + mech.bias(5.0) ** 2), rel=1e-12)


def test_clamped_laplace_accuracy_is_tight_against_the_mixed_law():
    """P(|E| > alpha) from the mixed CDF (point masses + Laplace middle, via scipy) is <= beta,
    and any smaller alpha fails — for true values inside, at and beyond the bounds."""
    mech = ClampedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, epsilon=1.0)
    law = stats.laplace(scale=mech.scale)

    def tail(alpha, q):
        def cdf(t, strict=False):  # P(X <= t) or P(X < t) for X = clip(q + L)
            if t < 0.0 or (strict and t == 0.0):
                return 0.0
            if t > 10.0 or (not strict and t == 10.0):
                return 1.0
            return law.cdf(t - q)
        return 1 - cdf(q + alpha) + cdf(q - alpha, strict=True)

    rng = np.random.default_rng(41)
    for q in np.concatenate([[-7.0, 0.0, 0.5, 5.0, 10.0, 18.0], rng.uniform(-5, 15, 30)]):
        for beta in (0.5, 0.05, 1e-3):
            alpha = float(mech.accuracy(beta, true_value=q))
            assert tail(alpha, q) <= beta * (1 + 1e-9)
            if alpha > 0:
                assert tail(alpha * (1 - 1e-9) - 1e-12, q) > beta


def test_clamped_laplace_error_cdf_has_the_jumps():
    mech = ClampedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, scale=2.0)
    q = 3.0
    masses = mech.point_masses(q)
    assert mech.error_cdf(-3.0 - 1e-12, true_value=q) == 0.0
    assert mech.error_cdf(-3.0, true_value=q) == pytest.approx(masses[0], rel=1e-12)
    assert 1 - mech.error_cdf(7.0 - 1e-9, true_value=q) == pytest.approx(masses[1], rel=1e-6)
    assert mech.error_cdf(7.0, true_value=q) == 1.0
    continuous = integrate.quad(lambda e: float(mech.error_pdf(e, true_value=q)), -3, 7,
                                points=[0.0])[0]
    assert continuous + masses[0] + masses[1] == pytest.approx(1.0, rel=1e-10)


# --------------------------------------------------------------------------------------------
# samplers against their laws
# --------------------------------------------------------------------------------------------


def test_laplace_sampler_ks():
    mech = Laplace(sensitivity=1.0, scale=1.3)
    draws = mech.sample(4.0, rng=np.random.default_rng(51), trials=1_000_000)
    assert stats.kstest(draws, stats.laplace(loc=4.0, scale=1.3).cdf).pvalue > P_MIN
    # power: a 5% error in the scale is rejected (KS distance ~0.009 vs 0.002 critical)
    assert stats.kstest(draws, stats.laplace(loc=4.0, scale=1.3 * 1.05).cdf).pvalue < 1e-10


def test_gaussian_sampler_ks():
    mech = Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-6)
    draws = mech.sample(np.array([-2.0, 5.0]), rng=np.random.default_rng(52), trials=500_000)
    for j, loc in enumerate([-2.0, 5.0]):
        assert stats.kstest(draws[:, j], stats.norm(loc=loc, scale=mech.scale).cdf).pvalue > P_MIN


def test_geometric_sampler_chi_square():
    scale = 2.5
    mech = Geometric(sensitivity=1, scale=scale)
    draws = mech.sample(7, rng=np.random.default_rng(53), trials=1_000_000)
    assert draws.dtype == np.int64
    noise = draws - 7
    k, table = discrete_laplace_pmf_table(scale, 200)
    n = noise.size

    def chi_square_p(sample):
        keep = np.abs(k) <= 25  # expected count >= ~30 in every kept bin
        observed = np.array([np.count_nonzero(sample == v) for v in k[keep]])
        observed = np.append(observed, n - observed.sum())
        expected = np.append(table[keep], 1 - table[keep].sum()) * n
        return stats.chisquare(observed, expected).pvalue

    assert chi_square_p(noise) > P_MIN
    # power: the plausible bug p = 1/scale instead of 1 − e^{−1/scale} is caught
    rng = np.random.default_rng(54)
    wrong = rng.geometric(1 / scale, n) - rng.geometric(1 / scale, n)
    assert chi_square_p(wrong) < 1e-10


@pytest.mark.parametrize("q", [0.0, 0.7, 5.0, 10.0])
def test_bounded_laplace_sampler_ks(q):
    mech = BoundedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, epsilon=1.0)
    draws = mech.sample(q, rng=np.random.default_rng(55), trials=300_000)
    assert draws.min() >= 0.0 and draws.max() <= 10.0
    cdf = lambda x: truncated_laplace_cdf(x, q, mech.scale, 0.0, 10.0)  # noqa: E731
    assert stats.kstest(draws, cdf).pvalue > P_MIN


@pytest.mark.parametrize("q", [-1.0, 1.0, 5.0])
def test_clamped_laplace_sampler_masses_and_middle(q):
    mech = ClampedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, epsilon=0.5)
    n = 400_000
    draws = mech.sample(q, rng=np.random.default_rng(56), trials=n)
    at_lower, at_upper = mech.point_masses(q)
    assert stats.binomtest(int(np.count_nonzero(draws == 0.0)), n, at_lower).pvalue > P_MIN
    assert stats.binomtest(int(np.count_nonzero(draws == 10.0)), n, at_upper).pvalue > P_MIN
    middle = draws[(draws > 0.0) & (draws < 10.0)]
    law = stats.laplace(loc=q, scale=mech.scale)
    cdf = lambda x: (law.cdf(x) - law.cdf(0.0)) / (law.cdf(10.0) - law.cdf(0.0))  # noqa: E731
    assert stats.kstest(middle, cdf).pvalue > P_MIN


# --------------------------------------------------------------------------------------------
# shapes, reproducibility, chunking
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECHANISM_IDS)
@pytest.mark.parametrize("values", [3.0, [1.0, 2.0, 4.0], np.arange(6.0).reshape(2, 3)],
                         ids=["scalar", "vector", "matrix"])
@pytest.mark.parametrize("trials", [None, 1, 7])
def test_sample_shapes_and_dtype(mech, values, trials):
    out = mech.sample(values, rng=np.random.default_rng(0), trials=trials)
    shape = np.shape(values) if trials is None else (trials, *np.shape(values))
    assert np.shape(out) == shape
    assert np.asarray(out).dtype == (np.int64 if mech.integer_output else np.float64)
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECHANISM_IDS)
def test_sample_reproducible_and_broadcast_over_values(mech):
    values = np.array([0.0, 3.0, 15.0])
    a = mech.sample(values, rng=np.random.default_rng(7), trials=20_000)
    b = mech.sample(values, rng=np.random.default_rng(7), trials=20_000)
    c = mech.sample(values, rng=np.random.default_rng(8), trials=20_000)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # each column is centred on its own true value plus the mechanism's bias
    se = np.sqrt(mech.variance(values) / 20_000)
    assert np.all(np.abs(a.mean(axis=0) - values - mech.bias(values)) < 5 * se)
    # the columns are independent of each other
    assert abs(np.corrcoef(a[:, 0], a[:, 1])[0, 1]) < 0.04


@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECHANISM_IDS)
def test_chunked_sampling_respects_the_block_bound(mech, monkeypatch):
    values = np.arange(15.0).reshape(3, 5)
    unchunked = mech.sample(values, rng=np.random.default_rng(9), trials=4000)
    monkeypatch.setattr(_checks, "MAX_BLOCK_ELEMENTS", 64)
    blocks = []
    original = type(mech)._draw

    def spy(self, base, size, rng):
        blocks.append(math.prod(size))
        return original(self, base, size, rng)

    monkeypatch.setattr(type(mech), "_draw", spy)
    chunked = mech.sample(values, rng=np.random.default_rng(9), trials=4000)
    assert chunked.shape == (4000, 3, 5)
    assert len(blocks) == 1000 and max(blocks) <= 64 and sum(blocks) == 4000 * 15
    if isinstance(mech, Geometric):
        # two geometric draws per block: same law, different stream; compare distributions
        for j in range(5):
            res = stats.ks_2samp(chunked[:, 0, j] - j, unchunked[:, 0, j] - j)
            assert res.pvalue > P_MIN
    else:
        # one draw per element in C order, so chunking leaves the stream unchanged
        np.testing.assert_array_equal(chunked, unchunked)


def test_chunked_laplace_is_laplace(monkeypatch):
    monkeypatch.setattr(_checks, "MAX_BLOCK_ELEMENTS", 1000)
    draws = Laplace(sensitivity=1.0, scale=2.0).sample(
        np.zeros(7), rng=np.random.default_rng(10), trials=50_000)
    assert stats.kstest(draws.ravel(), stats.laplace(scale=2.0).cdf).pvalue > P_MIN


def test_empty_values_and_integer_arrays():
    mech = Geometric(sensitivity=1, epsilon=1.0)
    assert mech.sample(np.array([], dtype=np.int64), rng=np.random.default_rng(0),
                       trials=3).shape == (3, 0)
    out = mech.sample(np.array([5, -2]), rng=np.random.default_rng(0))
    assert out.dtype == np.int64 and out.shape == (2,)


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------

bad_positive = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, np.float64("nan")]),
    st.floats(max_value=0.0, allow_nan=False),
)
bad_delta = st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1.0]),
                      st.floats(min_value=1.0), st.floats(max_value=0.0, allow_nan=False))
wrong_type = st.one_of(st.text(max_size=3), st.booleans(), st.lists(st.floats(), max_size=2),
                       st.just(1 + 2j))


@HYPOTHESIS
@given(bad=bad_positive)
def test_invalid_positive_parameters_never_construct(bad):
    builders = {
        "sensitivity": [lambda v: Laplace(sensitivity=v, epsilon=1.0),
                        lambda v: Gaussian(sensitivity=v, rho=1.0),
                        lambda v: Geometric(sensitivity=v, epsilon=1.0),
                        lambda v: BoundedLaplace(sensitivity=v, lower=0, upper=1, epsilon=1.0),
                        lambda v: ClampedLaplace(sensitivity=v, lower=0, upper=1, epsilon=1.0)],
        "epsilon": [lambda v: Laplace(sensitivity=1.0, epsilon=v),
                    lambda v: Gaussian(sensitivity=1.0, epsilon=v, delta=1e-5),
                    lambda v: Geometric(sensitivity=1, epsilon=v),
                    lambda v: BoundedLaplace(sensitivity=1.0, lower=0, upper=1, epsilon=v),
                    lambda v: ClampedLaplace(sensitivity=1.0, lower=0, upper=1, epsilon=v)],
        "scale": [lambda v: Laplace(sensitivity=1.0, scale=v),
                  lambda v: Gaussian(sensitivity=1.0, scale=v),
                  lambda v: Geometric(sensitivity=1, scale=v),
                  lambda v: BoundedLaplace(sensitivity=1.0, lower=0, upper=1, scale=v),
                  lambda v: ClampedLaplace(sensitivity=1.0, lower=0, upper=1, scale=v)],
        "rho": [lambda v: Gaussian(sensitivity=1.0, rho=v)],
    }
    for name, makers in builders.items():
        for make in makers:
            with pytest.raises(ValueError, match=name):
                make(bad)


@HYPOTHESIS
@given(bad=bad_delta)
def test_invalid_delta_never_constructs(bad):
    with pytest.raises(ValueError, match="delta"):
        Gaussian(sensitivity=1.0, epsilon=1.0, delta=bad)
    if bad != 0.0:  # delta = 0 is pure DP for the bounded Laplace
        with pytest.raises(ValueError, match="delta"):
            BoundedLaplace(sensitivity=1.0, lower=0, upper=1, epsilon=1.0, delta=bad)


@HYPOTHESIS
@given(bad=wrong_type)
def test_wrong_types_raise_type_error(bad):
    makers = [lambda v: Laplace(sensitivity=v, epsilon=1.0),
              lambda v: Laplace(sensitivity=1.0, epsilon=v),
              lambda v: Gaussian(sensitivity=1.0, epsilon=1.0, delta=v),
              lambda v: Gaussian(sensitivity=1.0, rho=v),
              lambda v: Geometric(sensitivity=v, scale=1.0),
              lambda v: BoundedLaplace(sensitivity=1.0, lower=v, upper=1, epsilon=1.0),
              lambda v: ClampedLaplace(sensitivity=1.0, lower=0, upper=v, epsilon=1.0)]
    for make in makers:
        with pytest.raises(TypeError):
            make(bad)


@HYPOTHESIS
@given(bad=st.sampled_from([math.nan, math.inf, -math.inf]), which=st.sampled_from([0, 1]))
def test_non_finite_bounds_never_construct(bad, which):
    bounds = [0.0, 1.0]
    bounds[which] = bad
    name = ("lower", "upper")[which]
    for cls in (BoundedLaplace, ClampedLaplace):
        with pytest.raises(ValueError, match=name):
            cls(sensitivity=1.0, lower=bounds[0], upper=bounds[1], epsilon=1.0)


@pytest.mark.parametrize("lower, upper", [(1.0, 1.0), (2.0, 1.0)])
def test_bounds_must_be_ordered(lower, upper):
    for cls in (BoundedLaplace, ClampedLaplace):
        with pytest.raises(ValueError, match="lower must be < upper"):
            cls(sensitivity=1.0, lower=lower, upper=upper, epsilon=1.0)


@pytest.mark.parametrize("make", [
    lambda: Laplace(sensitivity=1.0),
    lambda: Laplace(sensitivity=1.0, epsilon=1.0, scale=1.0),
    lambda: Geometric(sensitivity=1, epsilon=1.0, scale=1.0),
    lambda: Gaussian(sensitivity=1.0),
    lambda: Gaussian(sensitivity=1.0, epsilon=1.0, delta=1e-5, rho=0.1),
    lambda: Gaussian(sensitivity=1.0, rho=0.1, scale=1.0),
    lambda: BoundedLaplace(sensitivity=1.0, lower=0, upper=1),
    lambda: ClampedLaplace(sensitivity=1.0, lower=0, upper=1, epsilon=1.0, scale=1.0),
])
def test_exactly_one_way_to_set_the_noise(make):
    with pytest.raises(ValueError, match="exactly one of"):
        make()


@pytest.mark.parametrize("kwargs", [{"epsilon": 1.0}, {"delta": 1e-5}])
def test_gaussian_needs_epsilon_and_delta_together(kwargs):
    with pytest.raises(ValueError, match="epsilon and delta"):
        Gaussian(sensitivity=1.0, **kwargs)


def test_bounded_laplace_from_scale_needs_zero_delta_and_reports_exact_epsilon():
    with pytest.raises(ValueError, match="delta"):
        BoundedLaplace(sensitivity=1.0, lower=0, upper=10, scale=2.0, delta=1e-3)
    mech = BoundedLaplace(sensitivity=1.0, lower=0, upper=10, scale=2.0)
    again = BoundedLaplace(sensitivity=1.0, lower=0, upper=10, epsilon=mech.privacy.epsilon)
    assert again.scale == pytest.approx(2.0, rel=1e-10)


@pytest.mark.parametrize("bad", [1.5, 0.5, 0, -1, math.nan])
def test_geometric_sensitivity_must_be_a_positive_whole_number(bad):
    with pytest.raises(ValueError, match="sensitivity"):
        Geometric(sensitivity=bad, epsilon=1.0)


@pytest.mark.parametrize("bad, error", [
    (0, ValueError), (-3, ValueError), (10**10, ValueError),
    (2.5, TypeError), ("3", TypeError), (True, TypeError),
])
def test_invalid_trials(bad, error):
    with pytest.raises(error, match="trials"):
        Laplace(sensitivity=1.0, epsilon=1.0).sample(0.0, rng=np.random.default_rng(0),
                                                     trials=bad)


@pytest.mark.parametrize("bad", [None, 42, np.random.RandomState(0), "seed"])
def test_rng_must_be_a_generator(bad):
    for mech in all_mechanisms():
        with pytest.raises(TypeError, match="rng"):
            mech.sample(1.0, rng=bad)


@pytest.mark.parametrize("mech", all_mechanisms(), ids=MECHANISM_IDS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, [1.0, -math.inf]])
def test_non_finite_values_rejected(mech, bad):
    with pytest.raises(ValueError, match="values"):
        mech.sample(bad, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="values"):
        mech.variance(bad)


def test_values_specific_rules():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="whole numbers"):
        Geometric(sensitivity=1, epsilon=1.0).sample([1.0, 2.5], rng=rng)
    for huge in ([2.0**63], [-(2.0**63)], np.array([2**63], dtype=np.uint64)):
        with pytest.raises(ValueError, match="values"):  # adding noise would wrap int64
            Geometric(sensitivity=1, epsilon=1.0).sample(huge, rng=rng)
    with pytest.raises(TypeError, match="values"):
        Laplace(sensitivity=1.0, epsilon=1.0).sample("abc", rng=rng)
    bounded = BoundedLaplace(sensitivity=1.0, lower=0, upper=10, epsilon=1.0)
    with pytest.raises(ValueError, match=r"\[lower, upper\]"):
        bounded.sample([5.0, 10.5], rng=rng)
    with pytest.raises(ValueError, match=r"\[lower, upper\]"):
        bounded.bias(-1.0)
    # clamping is post-processing: true values outside the bounds are fine
    clamped = ClampedLaplace(sensitivity=1.0, lower=0, upper=10, epsilon=1.0)
    assert clamped.sample(-4.0, rng=rng) >= 0.0


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, math.nan, math.inf])
def test_accuracy_beta_validated(bad):
    for mech in all_mechanisms():
        with pytest.raises(ValueError, match="beta"):
            mech.accuracy(bad, true_value=1.0)


def test_bounded_mechanisms_need_the_true_value_for_accuracy_and_error():
    for mech in all_mechanisms()[3:]:
        with pytest.raises(ValueError, match="true_value"):
            mech.accuracy(0.05)
        with pytest.raises(ValueError, match="true_value"):
            mech.error_cdf(0.0)
    with pytest.raises(ValueError, match="x"):
        Laplace(sensitivity=1.0, epsilon=1.0).error_cdf([0.0, math.nan])


# --------------------------------------------------------------------------------------------
# factory
# --------------------------------------------------------------------------------------------


def test_make_mechanism_builds_each_kind():
    assert isinstance(make_mechanism("laplace", sensitivity=1, epsilon=1), Laplace)
    gauss = make_mechanism("gaussian", sensitivity=1, epsilon=1, delta=1e-6)
    assert gauss.scale == Gaussian(sensitivity=1, epsilon=1, delta=1e-6).scale
    assert make_mechanism("gaussian", sensitivity=1, rho=0.5).privacy == ZCDP(0.5)
    assert isinstance(make_mechanism("geometric", sensitivity=1, scale=2), Geometric)
    bounded = make_mechanism("bounded_laplace", sensitivity=1, epsilon=1, lower=0, upper=5)
    assert isinstance(bounded, BoundedLaplace) and bounded.privacy == PureDP(1.0)
    clamped = make_mechanism("clamped_laplace", sensitivity=1, scale=2, lower=0, upper=5)
    assert isinstance(clamped, ClampedLaplace) and clamped.scale == 2.0


@pytest.mark.parametrize("kind, kwargs, match", [
    ("uniform", {"epsilon": 1}, "kind"),
    ("laplace", {"epsilon": 1, "rho": 0.5}, "rho"),
    ("laplace", {"epsilon": 1, "delta": 1e-5}, "delta"),
    ("gaussian", {"rho": 0.5, "lower": 0}, "lower"),
    ("geometric", {"epsilon": 1, "upper": 3}, "upper"),
    ("bounded_laplace", {"epsilon": 1, "lower": 0}, "lower and upper"),
    ("clamped_laplace", {"epsilon": 1, "upper": 0}, "lower and upper"),
])
def test_make_mechanism_rejects_what_does_not_apply(kind, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_mechanism(kind, sensitivity=1, **kwargs)


# -- the reported privacy never exceeds the budget a mechanism was built for ----------------


def random_budgets(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return 10 ** rng.uniform(-3, 1.5, n), 10 ** rng.uniform(-2, 2, n)


@pytest.mark.parametrize("cls, extra", [
    (Laplace, {}), (Geometric, {}), (ClampedLaplace, {"lower": 0.0, "upper": 5.0})])
def test_built_from_epsilon_the_reported_epsilon_is_at_most_the_budget(cls, extra):
    """sensitivity / epsilon rounds down about half the time; the scale is then raised by an
    ulp or two, so the mechanism never claims (or has) more than the epsilon asked for."""
    epsilons, sensitivities = random_budgets(3000, seed=11)
    raised = 0
    for epsilon, sensitivity in zip(epsilons.tolist(), sensitivities.tolist(), strict=True):
        sensitivity = float(max(1, round(sensitivity))) if cls is Geometric else sensitivity
        mech = cls(sensitivity=sensitivity, epsilon=epsilon, **extra)
        assert mech.privacy.epsilon <= epsilon
        assert mech.sensitivity / mech.scale <= epsilon
        naive = sensitivity / epsilon
        assert naive <= mech.scale <= math.nextafter(math.nextafter(naive, math.inf), math.inf)
        raised += mech.scale > naive
    assert raised > 100  # the naive scale really does overshoot the budget sometimes


def test_gaussian_built_from_rho_reports_at_most_rho():
    rhos, sensitivities = random_budgets(3000, seed=12)
    for rho, sensitivity in zip(rhos.tolist(), sensitivities.tolist(), strict=True):
        mech = Gaussian(sensitivity=sensitivity, rho=rho)
        assert mech.privacy.rho <= rho
        assert mech.scale == pytest.approx(sensitivity / math.sqrt(2 * rho), rel=1e-15)


def test_gaussian_reports_at_most_the_delta_it_was_built_for():
    """The calibration works in log δ; exp of it can round above δ, so both are checked."""
    g = Gaussian(sensitivity=1 / 3, epsilon=6.9323928976425435, delta=0.005784098293030811)
    assert g.delta_for_epsilon(6.9323928976425435) <= 0.005784098293030811  # was 1 ulp above
    rng = np.random.default_rng(13)
    for _ in range(2000):
        epsilon, delta = 10 ** rng.uniform(-3, 1.5), 10 ** rng.uniform(-12, -2)
        g = Gaussian(sensitivity=10 ** rng.uniform(-2, 2), epsilon=epsilon, delta=delta)
        assert g.delta_for_epsilon(epsilon) <= delta
        assert g.delta_for_epsilon(g.epsilon_for_delta(delta)) <= delta
