"""dpcore.plan_risk: the whole plan's trade-off curve and belief bounds, against closed forms
(μ-GDP) and a simulation of the plan's exact privacy loss."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit, logit, ndtr, ndtri

from dpcore.accounting import ThresholdLoss, _composed_pld, _discretization, privacy_losses
from dpcore.measures import PureDP
from dpcore.mechanisms.gaussian import Gaussian
from dpcore.mechanisms.laplace import Laplace
from dpcore.plan_risk import (
    _dense,
    describe_plan_risk,
    plan_gaussian_mu,
    plan_loss_tail,
    plan_max_posterior,
    plan_tradeoff,
)

MIXED = [Laplace(sensitivity=1.0, epsilon=1.0)] * 10 + [Gaussian(sensitivity=1.0, scale=3.0)] * 5


def simulated_losses(n: int, rng: np.random.Generator) -> np.ndarray:
    """The mixed plan's privacy loss with Alice in (her answers at 0, out: at Δ = 1), exactly:
    Laplace loss (|y − 1| − |y|)/b, Gaussian loss μ²/2 + μZ per release."""
    y = rng.laplace(0.0, 1.0, size=(n, 10))
    laplace = np.sum(np.abs(y - 1.0) - np.abs(y), axis=1)
    mu2 = 5 / 9
    return laplace + mu2 / 2 + math.sqrt(mu2) * rng.standard_normal(n)


def test_gaussian_plan_is_exact_mu_gdp():
    plan = [Gaussian(sensitivity=2.0, scale=5.0), Gaussian(sensitivity=1.0, scale=1.5)]
    mu = math.sqrt(0.4**2 + (1 / 1.5) ** 2)
    assert plan_gaussian_mu(plan) == pytest.approx(mu, rel=1e-14)
    fpr = np.array([0.0, 1e-6, 0.01, 0.3, 1.0])
    assert np.allclose(plan_tradeoff(plan, fpr), ndtr(ndtri(fpr) + mu), atol=1e-15)
    bound = plan_max_posterior(plan, 0.1, failure=1e-6)
    s = mu * mu / 2 - mu * ndtri(1e-6)
    assert bound.epsilon == pytest.approx(s, rel=1e-12)
    assert bound.posterior == pytest.approx(expit(logit(0.1) + s), rel=1e-12)
    assert bound.failure_probability == pytest.approx(1e-6, rel=1e-12)
    assert plan_gaussian_mu(MIXED) is None


@pytest.mark.slow
def test_loss_tail_of_a_mixed_plan_holds_by_simulation():
    """P(L > s) <= f for the plan's exact loss (10^6 draws, f = 1e-2 and 1e-3 resolvable);
    and s is not loose: L passes s − 0.3 more often than f."""
    rng = np.random.default_rng(2024)
    losses = simulated_losses(1_000_000, rng)
    for failure in (1e-2, 1e-3):
        s, f = plan_loss_tail(MIXED, failure=failure)
        assert f <= failure
        seen = np.mean(losses > s)
        assert seen <= f + 4 * math.sqrt(f / losses.size)
        assert np.mean(losses > s - 0.3) > failure


def test_tradeoff_curve_is_above_the_best_simulated_test():
    """Thresholding the exact loss is the best test (Neyman–Pearson); its (FPR, TPR) from
    draws with Alice in (FPR by importance weight e^{−L}) stays under the PLD's curve."""
    rng = np.random.default_rng(7)
    losses = simulated_losses(400_000, rng)
    for t in np.linspace(-2, 12, 15):
        hit = losses > t
        tpr = hit.mean()
        fpr = np.mean(np.exp(-losses) * hit)
        assert plan_tradeoff(MIXED, fpr) >= tpr - 4 * math.sqrt(tpr * (1 - tpr) / losses.size)
    # power: a curve computed for half the Laplace releases would be exceeded
    half = [Laplace(sensitivity=1.0, epsilon=1.0)] * 5 + [Gaussian(sensitivity=1.0,
                                                                    scale=3.0)] * 5
    hit = losses > 5.0
    assert plan_tradeoff(half, np.mean(np.exp(-losses) * hit)) < hit.mean()


def test_dense_pmf_matches_the_public_profile():
    losses = privacy_losses(MIXED)
    pld = _composed_pld(losses, _discretization(losses, None))
    grid, probs, infinite = _dense(losses, True)
    for eps in (0.5, 3.0, 9.0, 12.0):
        mine = infinite + np.sum(probs[grid > eps] * -np.expm1(eps - grid[grid > eps]))
        assert mine == pytest.approx(pld.get_delta_for_epsilon(eps), rel=1e-9, abs=1e-15)


def test_pure_plans_and_thresholds():
    bound = plan_max_posterior([PureDP(1.0)] * 3, [0.01, 0.5])
    assert bound.failure_probability == 0.0 and bound.epsilon == pytest.approx(3.0)
    assert np.allclose(bound.posterior, expit(logit(np.array([0.01, 0.5])) + 3.0))
    laplace = plan_max_posterior([Laplace(sensitivity=1.0, epsilon=0.1)] * 10, 0.1)
    assert laplace.epsilon == pytest.approx(1.0) and laplace.failure_probability == 0.0
    # a threshold that reveals Alice with probability 1e-3 > failure: certainty is possible
    certain = plan_max_posterior([ThresholdLoss(1e-3), PureDP(0.5)], 0.1, failure=1e-4)
    assert certain.posterior == 1.0 and math.isinf(certain.epsilon)
    assert "essentially certain" in describe_plan_risk([ThresholdLoss(1e-3)], 0.1, failure=1e-4)


def test_sentence_rounds_the_right_way():
    text = describe_plan_risk(MIXED, 0.1)
    bound = plan_max_posterior(MIXED, 0.1)
    assert text.startswith("After the whole plan, an attacker who knows everyone else's data "
                           "and starts at 10%")
    shown = float(text.split("at most ")[1].split("%")[0]) / 100
    assert shown >= bound.posterior
    assert "except with probability at most 1e-06" in text
    assert describe_plan_risk([PureDP(1.0)], 0.5).endswith("73.2% certainty that Alice is in "
                                                             "the data.")
    with pytest.raises(TypeError, match="prior"):
        describe_plan_risk(MIXED, [0.1, 0.2])
    with pytest.raises(ValueError, match="failure"):
        plan_loss_tail(MIXED, failure=1e-15)


def test_sentence_names_what_was_released():
    # one query of a plan, described alone, is not "the whole plan" (issue 35 item 4)
    one = describe_plan_risk([PureDP(1.0)], 0.5, after="that query alone")
    assert one == ("After that query alone, an attacker who knows everyone else's data and "
                   "starts at 50% can reach at most 73.2% certainty that Alice is in the data.")
    for bad in ("", "  ", None, 3):
        with pytest.raises(TypeError, match="after"):
            describe_plan_risk([PureDP(1.0)], 0.5, after=bad)
