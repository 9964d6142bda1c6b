"""Discrete Gaussian: the map against OpenDP's make_gaussian on integers, the law against
direct sums over the integers (both the summed and the Euler–Maclaurin regime), the exact
(epsilon, delta) profile against the hockey-stick sum, accuracy against OpenDP, and the
sampler against its PMF and OpenDP's samples."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpcore.measures import ZCDP, zcdp_epsilon
from dpcore.mechanisms.discrete_gaussian import DiscreteGaussian

P_MIN = 1e-3  # fixed seeds; a correct sampler fails a test with probability ~1e-3 per seed
SIGMAS = [0.3, 0.6, 2.5, 40.0, 999.0, 1001.0, 5000.0]  # both sides of the summed regime


def direct_law(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """(k, P(Z = k)) for |k| <= 45σ + 5 by explicit normalisation of exp(−k²/2σ²)."""
    top = int(45 * sigma) + 5
    k = np.arange(-top, top + 1, dtype=np.float64)
    weights = np.exp(-0.5 * (k / sigma) ** 2)
    return k, weights / weights.sum()  # numpy's pairwise sum: ~1e-16 relative


def hockey_stick(sigma: float, shift: int, epsilon: float) -> float:
    """Σ_k max(0, p(k) − e^ε p(k − shift)), summed term by term with math.fsum."""
    k, p = direct_law(sigma)
    q = np.interp(k - shift, k, p, left=0.0, right=0.0)  # p(k − shift) on the same lattice
    return math.fsum(np.maximum(0.0, p - math.exp(epsilon) * q).tolist())


# --------------------------------------------------------------------------------------------
# the privacy map
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sensitivity", [1, 2, 3, 7])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.5, 40.0, 5000.0])
def test_rho_equals_opendps_make_gaussian_on_integers(opendp, sensitivity, sigma):
    ours = DiscreteGaussian(sensitivity=sensitivity, scale=sigma).zcdp.rho
    scalar = opendp.m.make_gaussian(opendp.atom_domain(T=int), opendp.absolute_distance(T=int),
                                    scale=sigma)
    vector = opendp.m.make_gaussian(opendp.vector_domain(opendp.atom_domain(T=int)),
                                    opendp.l2_distance(T=int), scale=sigma)
    assert str(scalar.output_measure) == "ZeroConcentratedDivergence"
    assert ours == pytest.approx(scalar.map(sensitivity), rel=1e-12)
    assert ours == pytest.approx(vector.map(sensitivity), rel=1e-12)
    assert Fraction(ours) >= Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2)


def test_built_from_rho_its_map_is_at_most_rho(opendp):
    for rho in (0.01, 0.3, 0.5, 2.0):
        mech = DiscreteGaussian(sensitivity=2, rho=rho)
        assert mech.privacy == ZCDP(mech.zcdp.rho) and mech.zcdp.rho <= rho
        meas = opendp.m.make_gaussian(opendp.atom_domain(T=int),
                                      opendp.absolute_distance(T=int), scale=mech.scale)
        assert meas.map(2) == pytest.approx(rho, rel=1e-12)


@pytest.mark.parametrize("sigma, sensitivity", [(0.6, 1), (2.5, 1), (2.5, 3), (40.0, 2)])
def test_exact_profile_is_the_hockey_stick_sum_and_the_worst_shift(sigma, sensitivity):
    mech = DiscreteGaussian(sensitivity=sensitivity, scale=sigma)
    for epsilon in (0.0, 0.1, 0.5, 1.0, 3.0):
        exact = hockey_stick(sigma, sensitivity, epsilon)
        assert mech.delta_for_epsilon(epsilon) == pytest.approx(exact, rel=1e-9, abs=1e-300)
        # a smaller shift never costs more: the sensitivity is the worst case
        for shift in range(1, sensitivity):
            assert hockey_stick(sigma, shift, epsilon) <= exact * (1 + 1e-12)


def test_calibration_from_epsilon_and_delta_is_private_and_tight():
    for epsilon, delta, sensitivity in [(1.0, 1e-3, 1), (0.3, 1e-6, 1), (2.0, 1e-9, 3),
                                        (0.05, 1e-5, 1)]:
        mech = DiscreteGaussian(sensitivity=sensitivity, epsilon=epsilon, delta=delta)
        assert mech.delta_for_epsilon(epsilon) <= delta
        assert hockey_stick(mech.scale, sensitivity, epsilon) <= delta * (1 + 1e-9)
        assert mech.privacy.epsilon == epsilon and mech.privacy.delta == delta
        # tight: 1% less noise breaks delta
        thinner = DiscreteGaussian(sensitivity=sensitivity, scale=0.99 * mech.scale)
        assert thinner.delta_for_epsilon(epsilon) > delta
        # the inverse: the smallest epsilon at delta is (to rounding) the one asked for
        assert mech.epsilon_for_delta(delta) <= epsilon * (1 + 1e-9)
        assert mech.epsilon_for_delta(delta) == pytest.approx(epsilon, rel=1e-6)


@pytest.mark.parametrize("sigma", [0.6, 2.5, 40.0, 2000.0])
def test_exact_profile_is_no_looser_than_the_cks_conversion_of_rho(sigma):
    mech = DiscreteGaussian(sensitivity=1, scale=sigma)
    for delta in (1e-3, 1e-6, 1e-10):
        eps = mech.epsilon_for_delta(delta)
        assert eps <= zcdp_epsilon(mech.zcdp.rho, delta) + 1e-12
        assert mech.delta_for_epsilon(eps) <= delta


# --------------------------------------------------------------------------------------------
# the law
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", SIGMAS)
def test_pmf_cdf_variance_and_mae_against_direct_sums(sigma):
    mech = DiscreteGaussian(sensitivity=1, scale=sigma)
    k, p = direct_law(sigma)
    np.testing.assert_allclose(mech.error_pmf(k), p, rtol=1e-11, atol=1e-300)
    assert mech.error_pmf([0.5, -1.5]).tolist() == [0.0, 0.0]
    assert float(mech.variance(0)) == pytest.approx(float(np.sum(k * k * p)), rel=1e-11)
    assert float(mech.mae(0)) == pytest.approx(float(np.sum(np.abs(k) * p)), rel=1e-11)
    # tails, in the bulk and far out (log scale), from the direct sums
    for m in np.unique(np.round(sigma * np.array([0.0, 0.5, 1.0, 3.0, 8.0, 20.0]))):
        below = float(np.sum(p[k <= m]))
        assert float(mech.error_cdf(m)) == pytest.approx(below, rel=1e-11, abs=1e-15)
        above = float(np.sum(p[k > m][::-1]))
        if above > 1e-290:
            assert 1 - float(mech.error_cdf(m)) == pytest.approx(above, rel=1e-6, abs=1e-15)
            assert float(mech.error_cdf(-m - 1)) == pytest.approx(above, rel=1e-10)


def test_accuracy_matches_opendp_or_opendp_is_the_one_off(opendp):
    """OpenDP's t is the smallest whole t with P(|Z| >= t) <= alpha, so ours (the smallest
    whole a with P(|Z| > a) <= beta) is t − 1 — except where the direct sum shows OpenDP's
    t one too small (measured: 1 case in 200, at σ = 8294, β = 1e-10)."""
    rng = np.random.default_rng(31)
    differ = 0
    for _ in range(200):
        sigma, beta = 10 ** rng.uniform(-1, 4), 10 ** rng.uniform(-10, -0.01)
        ours = DiscreteGaussian(sensitivity=1, scale=sigma).accuracy(beta)
        t = opendp.discrete_gaussian_scale_to_accuracy(sigma, beta)
        if ours == t - 1:
            continue
        differ += 1
        k, p = direct_law(sigma)
        assert float(np.sum(p[np.abs(k) > ours])) <= beta  # ours meets the target
        assert float(np.sum(p[np.abs(k) > ours - 1])) > beta  # and is the smallest
    assert differ <= 3


# --------------------------------------------------------------------------------------------
# the sampler
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.3, 2.5, 40.0])
def test_sampler_chi_square_against_the_pmf(sigma):
    """2·10^5 draws, chi-square over the values expected at least 20 times: passes at
    p > 1e-3; the law of 0.9 σ is rejected at p < 1e-10."""
    mech = DiscreteGaussian(sensitivity=1, scale=sigma)
    noise = mech.sample(3, rng=np.random.default_rng(32), trials=200_000) - 3
    assert noise.dtype == np.int64

    def p_value(sample, law):
        k, p = direct_law(law)
        expected = p * sample.size
        keep = expected >= 20
        counts = np.array([np.count_nonzero(sample == v) for v in k[keep]])
        observed = np.append(counts, sample.size - counts.sum())
        expected = np.append(expected[keep], sample.size - expected[keep].sum())
        return stats.chisquare(observed, expected).pvalue

    assert p_value(noise, sigma) > P_MIN
    assert p_value(noise, 0.9 * sigma) < 1e-10


@pytest.mark.slow   # 100,000 OpenDP draws
def test_sampler_has_opendps_law(opendp):
    """OpenDP draws with fresh entropy (no seed), so its false-alarm rate is the threshold's:
    1e-6 here, not P_MIN's 1e-3 (which failed a CI run), with 100,000 draws for the power (a
    scale 4 % off gives p < 1e-30)."""
    meas = opendp.m.make_gaussian(opendp.vector_domain(opendp.atom_domain(T=int)),
                                  opendp.l2_distance(T=int), scale=2.5)
    theirs = np.array(meas([0] * 100_000))
    ours = DiscreteGaussian(sensitivity=1, scale=2.5).sample(0, rng=np.random.default_rng(33),
                                                             trials=200_000)
    values = np.arange(-8, 9)
    table = np.array([[np.count_nonzero(np.clip(s, -8, 8) == v) for v in values]
                      for s in (ours, theirs)])
    assert stats.chi2_contingency(table).pvalue > 1e-6


def test_large_sigma_and_shifted_values_sample_exactly():
    mech = DiscreteGaussian(sensitivity=1, scale=1e6)
    draws = mech.sample(np.array([2**40, -5]), rng=np.random.default_rng(34), trials=50_000)
    noise = draws - np.array([2**40, -5])
    assert noise.dtype == np.int64
    assert noise.std() == pytest.approx(1e6, rel=0.02)
    assert stats.kstest(noise[:, 0] / 1e6, stats.norm.cdf).pvalue > P_MIN


@pytest.mark.slow
def test_reported_rho_is_never_below_the_exact_loss():
    rng = np.random.default_rng(65)
    for _ in range(2000):
        sens, sigma = int(rng.integers(1, 10)), float(10 ** rng.uniform(-1, 3))
        rho = DiscreteGaussian(sensitivity=sens, scale=sigma).zcdp.rho
        assert Fraction(rho) >= Fraction(sens) ** 2 / (2 * Fraction(sigma) ** 2)
