"""Bounded and clamped Laplace: calibration and moments against diffprivlib and quadrature,
the worst-case privacy loss by brute force, the mixed law of the clamped output, the samplers,
and the audit catching the classic naive bounded Laplace."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from dpcore.audit import audit_mechanism, threshold_events
from dpcore.measures import ApproxDP, PureDP
from dpcore.mechanisms.bounded import BoundedLaplace, ClampedLaplace

# Statistical tests use fixed seeds and reject at p < P_MIN: a correct sampler fails one of them
# with probability ~1e-3 per seed, i.e. never for the fixed seeds used here.
P_MIN = 1e-3


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


# --------------------------------------------------------------------------------------------
# bounded Laplace
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


def test_bounded_laplace_from_scale_needs_zero_delta_and_reports_exact_epsilon():
    with pytest.raises(ValueError, match="delta"):
        BoundedLaplace(sensitivity=1.0, lower=0, upper=10, scale=2.0, delta=1e-3)
    mech = BoundedLaplace(sensitivity=1.0, lower=0, upper=10, scale=2.0)
    again = BoundedLaplace(sensitivity=1.0, lower=0, upper=10, epsilon=mech.privacy.epsilon)
    assert again.scale == pytest.approx(2.0, rel=1e-10)


# --------------------------------------------------------------------------------------------
# clamped Laplace
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
# both: bounds, samplers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("which", [0, 1])
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


def test_bounded_needs_true_values_inside_and_clamped_does_not():
    rng = np.random.default_rng(0)
    bounded = BoundedLaplace(sensitivity=1.0, lower=0, upper=10, epsilon=1.0)
    with pytest.raises(ValueError, match=r"\[lower, upper\]"):
        bounded.sample([5.0, 10.5], rng=rng)
    with pytest.raises(ValueError, match=r"\[lower, upper\]"):
        bounded.bias(-1.0)
    # clamping is post-processing: true values outside the bounds are fine
    clamped = ClampedLaplace(sensitivity=1.0, lower=0, upper=10, epsilon=1.0)
    assert clamped.sample(-4.0, rng=rng) >= 0.0
    # the breakpoints of the error density: where the answer range's ends are reached
    np.testing.assert_array_equal(clamped.error_breakpoints(3.0), [-3.0, 0.0, 7.0])
    np.testing.assert_array_equal(bounded.error_breakpoints(0.0), [0.0, 10.0])
    with pytest.raises(ValueError, match="true_value"):
        bounded.error_breakpoints([1.0, 2.0])


# --------------------------------------------------------------------------------------------
# the audit catches the classic bug
# --------------------------------------------------------------------------------------------

# every output lies in [0, 10]; extra thresholds hug the bounds, where the privacy loss peaks
BOUNDED_THRESHOLDS = np.concatenate([[0.02, 0.05, 0.1, 9.9, 9.95, 9.98], np.linspace(0, 10, 41)])


def _audit(mechanism, x, x_prime, seed):
    def release(data, rng, n):
        return mechanism.sample(data, rng=rng, trials=n)

    return audit_mechanism(release, np.float64(x), np.float64(x_prime),
                           events=threshold_events(BOUNDED_THRESHOLDS), samples=10**6,
                           rng=np.random.default_rng(seed))


def test_planted_bug_naive_bounded_laplace_is_caught_only_at_the_edge():
    # The classic bug: bounded Laplace with scale Δ/ε, ignoring that the truncated noise's
    # normalising mass differs between neighbours. Claimed ε = 1; its exact ε is
    # 1 + ln(C(1)/C(0)) ≈ 1.49. The edge pair exposes it; a pair in the middle would not.
    claimed = 1.0
    naive = BoundedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, scale=1.0 / claimed)
    mass = lambda q: 1 - 0.5 * (math.exp(-q) + math.exp(-(10 - q)))  # noqa: E731 (b = 1)
    exact = 1.0 + math.log(mass(1.0) / mass(0.0))
    assert exact == pytest.approx(1.4898, abs=1e-4)
    assert naive.privacy.epsilon == pytest.approx(exact, rel=1e-9)
    at_edge = _audit(naive, 0.0, 1.0, seed=8)
    assert at_edge.epsilon_lower_bound > claimed  # measured 1.394: margin 0.39
    in_middle = _audit(naive, 4.5, 5.5, seed=8)
    assert in_middle.epsilon_lower_bound <= claimed  # measured 0.988


def test_clamped_reported_epsilon_is_never_below_the_exact_loss():
    rng = np.random.default_rng(63)
    for _ in range(2000):
        sens, scale = float(10 ** rng.uniform(-2, 2)), float(10 ** rng.uniform(-2, 3))
        claim = ClampedLaplace(sensitivity=sens, lower=0, upper=1, scale=scale).privacy.epsilon
        assert Fraction(claim) >= Fraction(sens) / Fraction(scale)
