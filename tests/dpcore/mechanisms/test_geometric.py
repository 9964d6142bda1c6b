"""Geometric (discrete Laplace): closed forms against an explicit PMF table, accuracy against
OpenDP, the sampler by a chi-square test, whole-number rules."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpcore.mechanisms.geometric import Geometric

# Statistical tests use fixed seeds and reject at p < P_MIN: a correct sampler fails one of them
# with probability ~1e-3 per seed, i.e. never for the fixed seeds used here.
P_MIN = 1e-3


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
    assert mech.privacy.epsilon == pytest.approx(1 / scale, rel=1e-15)  # rounded up


def test_geometric_scale_is_capped_where_draws_stay_exact_whole_numbers():
    # The draws are floor(scale·E): beyond 2**42 they would leave the whole numbers float64
    # holds exactly; the cap at 1e12 keeps them well inside.
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


@pytest.mark.parametrize("bad", [1.5, 0.5, 0, -1, math.nan])
def test_geometric_sensitivity_must_be_a_positive_whole_number(bad):
    with pytest.raises(ValueError, match="sensitivity"):
        Geometric(sensitivity=bad, epsilon=1.0)


# --------------------------------------------------------------------------------------------
# against OpenDP
# --------------------------------------------------------------------------------------------


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
# the sampler
# --------------------------------------------------------------------------------------------


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


def test_empty_values_and_integer_arrays():
    mech = Geometric(sensitivity=1, epsilon=1.0)
    assert mech.sample(np.array([], dtype=np.int64), rng=np.random.default_rng(0),
                       trials=3).shape == (3, 0)
    out = mech.sample(np.array([5, -2]), rng=np.random.default_rng(0))
    assert out.dtype == np.int64 and out.shape == (2,)


def test_reported_epsilon_is_never_below_the_exact_loss():
    rng = np.random.default_rng(62)
    for _ in range(2000):
        sens, scale = int(rng.integers(1, 20)), float(10 ** rng.uniform(-1, 3))
        claim = Geometric(sensitivity=sens, scale=scale).privacy.epsilon
        assert Fraction(claim) >= Fraction(sens) / Fraction(scale)
