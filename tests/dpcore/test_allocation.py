"""dpcore.allocation: every target met at the split (closed forms and a simulation of the real
mechanisms), no random split with a smaller total (or, for a budget, a better worst ratio),
and the comparison with the even split."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri

from dpcore.accounting import compose_pld
from dpcore.allocation import (
    AccuracyTarget,
    QuantileTarget,
    SelectionTarget,
    allocate,
    allocate_budget,
    smallest_target_epsilon,
    target_ratio,
)
from dpcore.measures import ZCDP, PureDP
from dpcore.mechanisms.gaussian import Gaussian
from dpcore.mechanisms.laplace import Laplace
from dpcore.quantiles import rank_errors, sample_quantile
from dpcore.selection import noisy_max_scale, report_noisy_max

RNG_VALUES = np.random.default_rng(0).normal(50, 10, 400)
LAPLACES = [AccuracyTarget("laplace", 1.0, 5.0, 0.05), AccuracyTarget("laplace", 2.0, 20.0, 0.1),
            AccuracyTarget("laplace", 1.0, 50.0, 0.01)]
GAUSSIANS = [AccuracyTarget("gaussian", 1.0, 8.0, 0.05, options={"delta": 1e-6}),
             AccuracyTarget("gaussian", 3.0, 30.0, 0.1, options={"delta": 1e-6})]
SELECTION = SelectionTarget((10.0, 8.0, 5.0, 1.0), "exponential", 0.9)
QUANTILE = QuantileTarget(tuple(RNG_VALUES), tuple(np.linspace(0, 100, 101)), 0.5, 12.0, 0.9)


def laplace_epsilon(t: AccuracyTarget) -> float:
    """Closed form: P(|Lap(b)| > α) = e^{−α/b} = β at b = α/ln(1/β)."""
    return t.sensitivity * math.log(1 / t.beta) / t.alpha


def gaussian_sigma(t: AccuracyTarget) -> float:
    """The largest σ with σ·Φ⁻¹(1 − β/2) <= α."""
    return t.alpha / -ndtri(t.beta / 2)


def test_every_target_met_at_the_split_by_closed_form_and_simulation():
    targets = [*LAPLACES, *GAUSSIANS, SELECTION, QUANTILE]
    rng = np.random.default_rng(5)
    for accountant in ("basic", "pld"):
        split = allocate(targets, accountant=accountant, delta=1e-6)
        assert split.worst_ratio >= 1.0
        for target, eps, release in zip(targets, split.epsilons, split.releases, strict=True):
            if isinstance(target, AccuracyTarget):
                if target.mechanism == "laplace":  # the closed form, to rounding
                    assert eps == pytest.approx(laplace_epsilon(target), rel=1e-9)
                else:
                    assert release.scale <= gaussian_sigma(target) * (1 + 1e-9)
                # the real mechanism, 200 000 releases: misses at most β (4 standard errors)
                errors = np.abs(release.sample(0.0, rng=rng, trials=200_000))
                miss = np.mean(errors > target.alpha)
                assert miss <= target.beta + 4 * math.sqrt(target.beta / 200_000)
                # and the split is tight: 10% less error is missed more often than β
                assert np.mean(errors > 0.9 * target.alpha) > target.beta
            elif isinstance(target, SelectionTarget):
                scale = noisy_max_scale(PureDP(eps), noise=target.noise)
                picks = report_noisy_max(np.array(target.scores), scale=scale,
                                         noise=target.noise, trials=100_000, rng=rng)
                hit = np.mean(picks == 0)
                assert hit >= target.probability - 4 * math.sqrt(0.09 / 100_000)
            else:
                released = sample_quantile(RNG_VALUES, target.candidates, 0.5, epsilon=eps,
                                           trials=50_000, rng=rng)
                ranks = rank_errors(RNG_VALUES, released, 0.5)
                within = np.mean(ranks <= target.rank_error)
                assert within >= target.probability - 4 * math.sqrt(0.09 / 50_000)
        assert split.total <= split.even_total
        assert split.even_epsilon == max(split.epsilons)


def test_no_random_split_has_a_smaller_total():
    """10^4 random per-query ε around the answer (vectorised): those meeting every target
    (closed forms) never total less, under basic, advanced (KOV) and zCDP accounting."""
    rng = np.random.default_rng(17)
    need = np.array([laplace_epsilon(t) for t in LAPLACES])
    eps = need * rng.uniform(0.5, 3.0, size=(10_000, need.size))
    feasible = np.all(eps >= need, axis=1)
    assert feasible.sum() > 1000
    basic = allocate(LAPLACES, accountant="basic", delta=1e-6)
    assert np.min(eps[feasible].sum(axis=1)) >= basic.total - 1e-9
    advanced = allocate(LAPLACES, accountant="advanced", delta=1e-6)
    e = eps[feasible]
    drift = np.sum(e * np.tanh(e / 2), axis=1)
    sq = np.sum(e * e, axis=1)
    best = np.inf
    for share in (0.1, 0.25, 0.5, 0.75, 0.9, 1.0):  # every δ' a random split might use
        d = share * 1e-6
        kov = np.minimum.reduce([e.sum(axis=1),
                                 drift + np.sqrt(2 * sq * np.log(np.e + np.sqrt(sq) / d)),
                                 drift + np.sqrt(2 * sq * np.log(1 / d))])
        best = min(best, kov.min())
    assert best >= advanced.total - 1e-9
    # zCDP with Gaussians: per-query σ at random; ρ = Σ Δ²/(2σ²) (ε is monotone in ρ)
    targets = [LAPLACES[0], *GAUSSIANS]
    zcdp = allocate(targets, accountant="zcdp", delta=1e-6)
    sigma_max = np.array([gaussian_sigma(t) for t in GAUSSIANS])
    sens = np.array([t.sensitivity for t in GAUSSIANS])
    sigma = sigma_max * rng.uniform(0.3, 1.5, size=(10_000, 2))
    lap_eps = need[0] * rng.uniform(0.5, 3.0, size=10_000)
    ok = np.all(sigma <= sigma_max, axis=1) & (lap_eps >= need[0])
    rho = lap_eps**2 / 2 + np.sum(sens**2 / (2 * sigma**2), axis=1)
    answer_rho = need[0] ** 2 / 2 + sum(r.zcdp.rho for r in zcdp.releases[1:])
    assert ok.sum() > 500 and np.min(rho[ok]) >= answer_rho * (1 - 1e-9)
    assert zcdp.total == pytest.approx(ZCDP(answer_rho).to_approx(1e-6).epsilon, rel=1e-6)


@pytest.mark.slow
def test_no_random_split_has_a_smaller_pld_total():
    """PLD: Gaussian targets only, 10^4 points, the total is monotone in Σμ² (exact μ-GDP);
    and a mixed plan, 60 random feasible points through compose_pld itself."""
    rng = np.random.default_rng(23)
    split = allocate(GAUSSIANS, accountant="pld", delta=1e-6)
    sigma_max = np.array([gaussian_sigma(t) for t in GAUSSIANS])
    sens = np.array([t.sensitivity for t in GAUSSIANS])
    sigma = sigma_max * rng.uniform(0.3, 1.5, size=(10_000, 2))
    ok = np.all(sigma <= sigma_max, axis=1)
    mu2 = np.sum((sens / sigma) ** 2, axis=1)
    answer_mu2 = sum((r.sensitivity / r.scale) ** 2 for r in split.releases)
    assert np.min(mu2[ok]) >= answer_mu2 * (1 - 1e-9)
    mixed = [LAPLACES[0], GAUSSIANS[0]]
    answer = allocate(mixed, accountant="pld", delta=1e-6)
    lap_need = laplace_epsilon(LAPLACES[0])
    for _ in range(60):
        lap = Laplace(sensitivity=1.0, epsilon=lap_need * rng.uniform(1.0, 2.0))
        gauss = Gaussian(sensitivity=1.0, scale=sigma_max[0] * rng.uniform(0.5, 1.0))
        assert compose_pld([lap, gauss], delta=1e-6) >= answer.total - 1e-9


@pytest.mark.slow
def test_budget_split_maximises_the_worst_ratio():
    need = np.array([laplace_epsilon(t) for t in LAPLACES])
    budget = 0.6 * need.sum()
    split = allocate_budget(LAPLACES, accountant="basic", epsilon=budget, delta=1e-6)
    # closed form: each ε_i = need_i / λ with Σ = budget, the worst ratio budget / Σ need
    assert split.total <= budget
    assert split.worst_ratio == pytest.approx(budget / need.sum(), rel=1e-3)
    assert split.worst_ratio >= split.even_worst_ratio
    # 10^4 random splits of the budget (Dirichlet shares): none has a better worst ratio
    rng = np.random.default_rng(31)
    shares = rng.dirichlet(np.ones(need.size), size=10_000)
    worst = np.min(shares * budget / need, axis=1)
    assert worst.max() <= split.worst_ratio * (1 + 1e-3)
    # mixed targets under PLD: within budget, and better than the even split
    targets = [LAPLACES[0], GAUSSIANS[0], SELECTION]
    mixed = allocate_budget(targets, accountant="pld", epsilon=2.0, delta=1e-6)
    assert mixed.total <= 2.0 and mixed.worst_ratio >= mixed.even_worst_ratio
    assert mixed.even_total <= 2.0
    for target, eps, ratio in zip(targets, mixed.epsilons, mixed.ratios, strict=True):
        assert ratio == pytest.approx(target_ratio(target, eps))
    with pytest.raises(ValueError, match="epsilon"):
        allocate_budget(LAPLACES, accountant="basic", epsilon=1e-6, delta=1e-6)


def test_targets_and_their_validation():
    assert smallest_target_epsilon(LAPLACES[0], relax=2.0) == pytest.approx(
        laplace_epsilon(LAPLACES[0]) / 2, rel=1e-9)
    assert target_ratio(LAPLACES[0], 2 * laplace_epsilon(LAPLACES[0])) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="rank_error"):
        QuantileTarget((1.0, 2.0, 3.0), (10.0, 20.0), 0.5, 0.5, 0.9)
    with pytest.raises(ValueError, match="delta"):
        AccuracyTarget("gaussian", 1.0, 1.0, 0.05)
    with pytest.raises(TypeError, match="targets"):
        allocate(["laplace"], accountant="basic", delta=1e-6)
    with pytest.raises(ValueError, match="targets"):
        allocate([], accountant="basic", delta=1e-6)


def test_fixed_releases_count_in_every_total_and_the_corner_stays_least():
    """Releases that keep their budget (a mean, a quantile…) add to the total; the split of the
    rest is unchanged (the corner), no random split totals less (10^4 points, basic and KOV),
    and the dual leaves them their share of the budget (closed form under basic)."""
    fixed = [Laplace(sensitivity=1.0, epsilon=0.7), PureDP(0.3)]
    need = np.array([laplace_epsilon(t) for t in LAPLACES])
    basic = allocate(LAPLACES, accountant="basic", delta=1e-6, fixed=fixed)
    assert basic.epsilons == pytest.approx(tuple(need), rel=1e-6)
    assert basic.total == pytest.approx(need.sum() + 1.0, rel=1e-9)
    assert basic.even_total == pytest.approx(need.size * need.max() + 1.0, rel=1e-9)
    rng = np.random.default_rng(41)
    eps = need * rng.uniform(0.5, 3.0, size=(10_000, need.size))
    feasible = np.all(eps >= need, axis=1)
    assert np.min(eps[feasible].sum(axis=1) + 1.0) >= basic.total - 1e-9
    advanced = allocate(LAPLACES, accountant="advanced", delta=1e-6, fixed=fixed)
    without = allocate(LAPLACES, accountant="advanced", delta=1e-6)
    assert advanced.total > without.total
    budget = 1.0 + 0.6 * need.sum()
    dual = allocate_budget(LAPLACES, accountant="basic", epsilon=budget, delta=1e-6,
                           fixed=fixed)
    assert dual.total <= budget
    assert dual.worst_ratio == pytest.approx((budget - 1.0) / need.sum(), rel=1e-3)
    with pytest.raises(TypeError, match="fixed"):
        allocate(LAPLACES, accountant="basic", delta=1e-6, fixed="laplace")
