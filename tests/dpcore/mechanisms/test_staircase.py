"""Staircase: variance, error and samples against diffprivlib's Staircase, the steps' tails in
closed form, γ* the optimum of the expected absolute error, and the gain over Laplace."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpcore.measures import PureDP
from dpcore.mechanisms.laplace import Laplace
from dpcore.mechanisms.staircase import Staircase

P_MIN = 1e-3  # fixed seeds; a correct sampler fails a test with probability ~1e-3 per seed
DIFFPRIVLIB_DRAWS = 40_000  # one randomise() call per draw: about a second


def diffprivlib_draws(epsilon: float, sensitivity: float, gamma: float | None, seed: int
                      ) -> np.ndarray:
    from diffprivlib.mechanisms import Staircase as Theirs

    theirs = Theirs(epsilon=epsilon, sensitivity=sensitivity, gamma=gamma, random_state=seed)
    return np.array([theirs.randomise(0.0) for _ in range(DIFFPRIVLIB_DRAWS)])


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, sensitivity, gamma", [(1.0, 1.0, None), (4.0, 2.0, None),
                                                         (0.3, 0.5, 0.3)])
def test_variance_mae_and_samples_against_diffprivlib(epsilon, sensitivity, gamma):
    """diffprivlib's Staircase has no variance (it raises NotImplementedError): ours is held
    against the mean square of its draws, within 5 standard errors of that mean (estimated
    from the draws), and our samples against its samples by two-sample KS."""
    mech = Staircase(sensitivity=sensitivity, epsilon=epsilon, gamma=gamma)
    theirs = diffprivlib_draws(epsilon, sensitivity, gamma, seed=41)
    squares = theirs**2
    assert abs(squares.mean() - float(mech.variance(0.0))) < 5 * squares.std() / math.sqrt(
        squares.size)
    sizes = np.abs(theirs)
    assert abs(sizes.mean() - float(mech.mae(0.0))) < 5 * sizes.std() / math.sqrt(sizes.size)
    ours = mech.sample(0.0, rng=np.random.default_rng(42), trials=200_000)
    assert stats.ks_2samp(ours, theirs).pvalue > P_MIN
    # power: the same law at 1.3 ε is told apart from diffprivlib's draws
    other = Staircase(sensitivity=sensitivity, epsilon=1.3 * epsilon, gamma=gamma)
    assert stats.ks_2samp(other.sample(0.0, rng=np.random.default_rng(43), trials=200_000),
                          theirs).pvalue < 1e-6
    if gamma is None:  # the default is diffprivlib's and the paper's optimum
        assert mech.gamma == pytest.approx(1 / (1 + math.exp(epsilon / 2)), rel=1e-15)


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 5.0])
def test_tails_at_the_steps_are_powers_of_e_to_the_minus_epsilon(epsilon):
    mech = Staircase(sensitivity=1.5, epsilon=epsilon)
    for k in range(0, 6):
        tail = 1 - float(mech.error_cdf(1.5 * k)) + float(mech.error_cdf(-1.5 * k))
        assert tail == pytest.approx(math.exp(-k * epsilon), rel=1e-12)
    # the density drops by e^-ε at kΔ and by a further factor at (k + γ)Δ
    edges = 1.5 * np.array([0.0, mech.gamma, 1.0, 1.0 + mech.gamma])
    values = mech.error_pdf(edges + 1e-9)
    np.testing.assert_allclose(values[2] / values[0], math.exp(-epsilon), rtol=1e-9)
    np.testing.assert_allclose(values[3] / values[1], math.exp(-epsilon), rtol=1e-9)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 6.0])
def test_the_default_gamma_minimises_the_expected_absolute_error(epsilon):
    def mae_at(gamma: float) -> float:
        return float(Staircase(sensitivity=1.0, epsilon=epsilon, gamma=gamma).mae(0.0))

    best = optimize.minimize_scalar(mae_at, bounds=(0.0, 1.0), method="bounded",
                                    options={"xatol": 1e-10})
    assert best.x == pytest.approx(1 / (1 + math.exp(epsilon / 2)), abs=1e-6)


def test_far_less_error_than_laplace_at_large_epsilon_and_the_same_at_small():
    """Geng & Viswanath: the least expected |noise| under ε-DP falls like Δe^{−ε/2} for large
    ε, against Δ/ε for Laplace noise (measured: 0.147 of Laplace's at ε = 8, 0.55 at 4)."""
    for epsilon, ratio_below in [(8.0, 0.2), (4.0, 0.6)]:
        stairs = float(Staircase(sensitivity=1.0, epsilon=epsilon).mae(0.0))
        assert stairs < ratio_below * float(Laplace(sensitivity=1.0, epsilon=epsilon).mae(0.0))
    assert float(Staircase(sensitivity=1.0, epsilon=12.0).mae(0.0)) == pytest.approx(
        math.exp(-6.0), rel=0.01)
    small = float(Staircase(sensitivity=1.0, epsilon=0.01).mae(0.0))
    assert small == pytest.approx(float(Laplace(sensitivity=1.0, epsilon=0.01).mae(0.0)),
                                  rel=0.01)


def test_claim_and_validation():
    mech = Staircase(sensitivity=3.0, epsilon=0.7)
    assert mech.privacy == PureDP(0.7) and mech.scale == 3.0 and mech.bias(1.0) == 0
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match="gamma"):
            Staircase(sensitivity=1.0, epsilon=1.0, gamma=bad)
    with pytest.raises(TypeError, match="gamma"):
        Staircase(sensitivity=1.0, epsilon=1.0, gamma="0.5")
    with pytest.raises(ValueError, match="epsilon"):
        Staircase(sensitivity=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        Staircase(sensitivity=1.0, epsilon=1e-160)  # a spread beyond float64's reach
    assert Staircase(sensitivity=1.0, epsilon=800.0).mae(0.0) >= 0  # e^-ε underflows: fine


def test_error_cdf_at_the_largest_floats_is_zero_and_one():
    # a step below 1 makes |x| / step overflow to inf: the CDF must still read 0 and 1
    # (found by the property tests: it read nan)
    mech = Staircase(sensitivity=0.5, epsilon=1.0)
    big = np.finfo(float).max
    assert mech.error_cdf([-big, big]).tolist() == [0.0, 1.0]
    assert mech.error_pdf([-big, big]).tolist() == [0.0, 0.0]
