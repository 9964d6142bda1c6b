"""Laplace: closed forms, accuracy against OpenDP, the sampler against scipy's law."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpcore import checks
from dpcore.measures import PureDP
from dpcore.mechanisms.laplace import Laplace

# Statistical tests use fixed seeds and reject at p < P_MIN: a correct sampler fails one of them
# with probability ~1e-3 per seed, i.e. never for the fixed seeds used here.
P_MIN = 1e-3


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


# --------------------------------------------------------------------------------------------
# against OpenDP
# --------------------------------------------------------------------------------------------


def test_laplace_accuracy_matches_opendp(opendp):
    rng = np.random.default_rng(11)
    for _ in range(50):
        scale, beta = 10 ** rng.uniform(-3, 3), 10 ** rng.uniform(-10, -0.01)
        ours = Laplace(sensitivity=1.0, scale=scale).accuracy(beta)
        assert ours == pytest.approx(opendp.laplacian_scale_to_accuracy(scale, beta), rel=1e-12)


# --------------------------------------------------------------------------------------------
# the sampler
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_laplace_sampler_ks():
    mech = Laplace(sensitivity=1.0, scale=1.3)
    draws = mech.sample(4.0, rng=np.random.default_rng(51), trials=1_000_000)
    assert stats.kstest(draws, stats.laplace(loc=4.0, scale=1.3).cdf).pvalue > P_MIN
    # power: a 5% error in the scale is rejected (KS distance ~0.009 vs 0.002 critical)
    assert stats.kstest(draws, stats.laplace(loc=4.0, scale=1.3 * 1.05).cdf).pvalue < 1e-10


def test_chunked_laplace_is_laplace(monkeypatch):
    monkeypatch.setattr(checks, "MAX_BLOCK_ELEMENTS", 1000)
    draws = Laplace(sensitivity=1.0, scale=2.0).sample(
        np.zeros(7), rng=np.random.default_rng(10), trials=50_000)
    assert stats.kstest(draws.ravel(), stats.laplace(scale=2.0).cdf).pvalue > P_MIN


def test_reported_epsilon_is_never_below_the_exact_loss():
    """epsilon = sensitivity / b rounds to nearest in float; the claim must round up, so it
    is compared here with the exact rational Δ/b (it was below it in about half the cases)."""
    rng = np.random.default_rng(61)
    for _ in range(2000):
        sens, scale = float(10 ** rng.uniform(-2, 2)), float(10 ** rng.uniform(-2, 3))
        claim = Laplace(sensitivity=sens, scale=scale).privacy.epsilon
        assert Fraction(claim) >= Fraction(sens) / Fraction(scale)
        built = Laplace(sensitivity=sens, epsilon=claim)
        assert Fraction(sens) / Fraction(built.scale) <= Fraction(claim)
