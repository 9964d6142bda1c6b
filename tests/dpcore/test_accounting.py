"""dpcore.accounting: a plan accounted four ways, checked against dp_accounting built by hand,
the exact μ-GDP composition of Gaussians, the exact optimal composition of pure-DP releases
(Kairouz–Oh–Viswanath / Murtagh–Vadhan) and closed-form privacy profiles."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import optimize, stats
from scipy.special import ndtr

from dpcore import accounting
from dpcore.accounting import (
    DISCRETIZATION,
    Loss,
    NoiseLoss,
    ThresholdLoss,
    account,
    account_plan,
    check_budget,
    compose_pld,
    partition_losses,
    privacy_losses,
)
from dpcore.measures import ZCDP, ApproxDP, PureDP
from dpcore.mechanisms import make_mechanism
from dpcore.mechanisms.bounded import BoundedLaplace, ClampedLaplace
from dpcore.mechanisms.discrete_gaussian import DiscreteGaussian
from dpcore.mechanisms.gaussian import Gaussian
from dpcore.mechanisms.geometric import Geometric
from dpcore.mechanisms.laplace import Laplace
from dpcore.mechanisms.staircase import Staircase
from dpcore.partition import partition_privacy
from tests.queries_reference import NoisyMean, bounded_mean_parts

STEP = accounting.DISCRETIZATION

# --- independent references ------------------------------------------------------------------


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε at δ of a mechanism that is μ-GDP (Balle & Wang 2018; Dong, Roth & Su 2022)."""
    def delta_at(eps: float) -> float:
        return ndtr(mu / 2 - eps / mu) - math.exp(eps) * ndtr(-mu / 2 - eps / mu)

    if delta_at(0.0) <= delta:
        return 0.0
    return optimize.brentq(lambda e: delta_at(e) - delta, 0.0, 200.0, xtol=1e-13)


def optimal_pure_delta(groups: list[tuple[float, int]], eps_total: float) -> float:
    """Exact smallest δ at eps_total for k_g releases of ε_g-DP each, all composed.

    Randomised responses are the worst case (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan
    2016): the loss is Σ ε_g(2T_g − k_g), T_g ~ Bin(k_g, e^ε_g/(1 + e^ε_g)), and
    δ = E[(1 − e^{eps_total − loss})₊].
    """
    loss, weight = np.zeros(1), np.ones(1)
    for eps, k in groups:
        t = np.arange(k + 1)
        p = stats.binom.pmf(t, k, 1 / (1 + math.exp(-eps)))
        loss = (loss[:, None] + eps * (2 * t[None, :] - k)).ravel()
        weight = (weight[:, None] * p[None, :]).ravel()
    return float(np.sum(weight * -np.expm1(np.minimum(eps_total - loss, 0.0))))


def optimal_pure_epsilon(groups: list[tuple[float, int]], delta: float) -> float:
    top = sum(e * k for e, k in groups)
    if optimal_pure_delta(groups, 0.0) <= delta:
        return 0.0
    return optimize.brentq(lambda e: optimal_pure_delta(groups, e) - delta, 0.0, top,
                           xtol=1e-12)


def kov(epsilons: list[float], delta_prime: float) -> float:
    """Kairouz, Oh & Viswanath 2017, Theorem 3.5, written out independently."""
    e = np.array(epsilons)
    drift = np.sum((np.exp(e) - 1) * e / (np.exp(e) + 1))
    sq = np.sum(e**2)
    return float(min(e.sum(),
                     drift + math.sqrt(2 * sq * math.log(math.e + math.sqrt(sq) / delta_prime)),
                     drift + math.sqrt(2 * sq * math.log(1 / delta_prime))))


def by_hand(parts, delta: float) -> float:
    """Compose dp_accounting PLDs in the given order, as a user of the library would."""
    total = None
    for part in parts:
        total = part if total is None else total.compose(part)
    return total.get_epsilon_for_delta(delta)


OPTIONS = {"value_discretization_interval": STEP, "pessimistic_estimate": True}

# --- compose_pld against dp_accounting ---------------------------------------------------------


def test_compose_pld_agrees_with_dp_accounting_built_by_hand():
    plan = [Laplace(sensitivity=1.0, epsilon=1.0)] * 10 + [Gaussian(sensitivity=1.0,
                                                                     scale=3.0)] * 5
    hand = by_hand([pld.from_laplace_mechanism(1.0, sensitivity=1.0, **OPTIONS).self_compose(10),
                    pld.from_gaussian_mechanism(3.0, sensitivity=1.0, **OPTIONS).self_compose(5)],
                   1e-6)
    assert compose_pld(plan, delta=1e-6) == pytest.approx(hand, abs=1e-6)
    assert hand == pytest.approx(12.389, abs=1e-3)  # the "PLD ≈ 12.4"

    geometric = Geometric(sensitivity=2, epsilon=0.5)
    dgauss = DiscreteGaussian(sensitivity=1, scale=2.0)
    plan = [geometric] * 3 + [dgauss] * 2 + [PureDP(0.3), ApproxDP(0.2, 1e-7)]
    hand = by_hand([
        pld.from_discrete_laplace_mechanism(1 / geometric.scale, sensitivity=2,
                                            use_connect_dots=True, **OPTIONS).self_compose(3),
        pld.from_discrete_gaussian_mechanism(2.0, sensitivity=1, use_connect_dots=True,
                                             **OPTIONS).self_compose(2),
        pld.from_privacy_parameters(common.DifferentialPrivacyParameters(0.3), STEP),
        pld.from_privacy_parameters(common.DifferentialPrivacyParameters(0.2, 1e-7), STEP),
    ], 1e-5)
    assert compose_pld(plan, delta=1e-5) == pytest.approx(hand, abs=1e-6)
    # a finer grid given explicitly is used (and moves ε only a little)
    fine = compose_pld(plan, delta=1e-5, discretization=1e-4)
    assert abs(fine - hand) < 2e-3


@pytest.mark.slow
def test_gaussian_plans_against_the_exact_mu_gdp_composition():
    rng = np.random.default_rng(3)
    for _ in range(6):
        n = int(rng.integers(1, 30))
        sens = rng.uniform(0.5, 3.0, n)
        sigma = rng.uniform(1.0, 20.0, n)
        delta = 10 ** rng.uniform(-9, -3)
        plan = [Gaussian(sensitivity=float(s), scale=float(g)) for s, g in zip(sens, sigma,
                                                                              strict=True)]
        exact = gaussian_epsilon(math.sqrt(np.sum((sens / sigma) ** 2)), delta)
        got = compose_pld(plan, delta=delta)
        assert exact - 1e-9 <= got <= exact + 5e-3, (n, delta, got, exact)


def test_pure_plans_never_below_the_exact_optimal_composition():
    cases = [([(1.0, 10)], 1e-6), ([(0.1, 50)], 1e-6), ([(0.5, 7), (0.2, 20)], 1e-5),
             ([(2.0, 3), (0.05, 40)], 1e-8)]
    for groups, delta in cases:
        plan = [PureDP(e) for e, k in groups for _ in range(k)]
        got = compose_pld(plan, delta=delta)
        # valid: the exact δ at our ε is within δ; tight: the exact ε is close below
        assert optimal_pure_delta(groups, got) <= delta * (1 + 1e-9)
        assert got - optimal_pure_epsilon(groups, delta) < 0.01 + 1e-3 * got
        # advanced composition is valid too, and never beats the optimum
        adv = account(plan, delta=delta, accountant="advanced").epsilon
        assert optimal_pure_delta(groups, adv) <= delta * (1 + 1e-9)
    # power: 0.05 less than our ε is not a valid guarantee (the check can fail)
    groups = [(0.5, 7), (0.2, 20)]
    got = compose_pld([PureDP(e) for e, k in groups for _ in range(k)], delta=1e-5)
    assert optimal_pure_delta(groups, got - 0.05) > 1e-5
    # the catalogue's pure-DP mechanisms without a noise law enter by their ε: the same
    staircase = Staircase(sensitivity=1.0, epsilon=0.5)
    bounded = BoundedLaplace(sensitivity=1.0, lower=0.0, upper=10.0, epsilon=0.5)
    assert compose_pld([staircase] * 4 + [bounded] * 4, delta=1e-6) == pytest.approx(
        compose_pld([PureDP(0.5)] * 8, delta=1e-6), abs=1e-12)


def test_laplace_plans_between_the_optimistic_pld_and_basic_composition():
    for eps, k in ((1.0, 10), (0.1, 50), (0.3, 7)):
        plan = [Laplace(sensitivity=2.0, epsilon=eps)] * k
        got = compose_pld(plan, delta=1e-6)
        optimistic = pld.from_laplace_mechanism(2.0 / eps, sensitivity=2.0,
                                                value_discretization_interval=1e-4,
                                                pessimistic_estimate=False).self_compose(k)
        assert optimistic.get_epsilon_for_delta(1e-6) <= got <= k * eps + 1e-9
    # one release: the exact Laplace profile δ(ε') = 1 − e^{(ε' − ε)/2}
    got = compose_pld([Laplace(sensitivity=1.0, epsilon=1.0)], delta=1e-3)
    exact = 1.0 + 2 * math.log1p(-1e-3)
    assert exact - 1e-12 <= got <= exact + 2 * STEP


def test_vector_laplace_noise_is_dominated_by_one_coordinate_at_the_l1_norm():
    """A histogram's Laplace (or discrete Laplace) noise, a person moving several cells: the
    composed PLD of the cells (pessimistic) stays below the one-cell profile at the L1 norm
    (closed form), for the hockey-stick profile and for the loss tail."""
    eps_grid = np.linspace(0.0, 2.0, 41)
    for split in ([0.5, 0.5], [0.1, 0.2, 0.7], [0.9, 0.1]):
        total = None
        for share in split:
            part = pld.from_laplace_mechanism(1.0, sensitivity=2.0 * share, use_connect_dots=False,
                                              value_discretization_interval=1e-4)
            total = part if total is None else total.compose(part)
        one_cell = 1 - np.exp((eps_grid - 2.0) / 2)
        assert np.all(total.get_delta_for_epsilon(eps_grid) <= one_cell + 1e-12)
    # discrete Laplace, 3 cells moved by 1 each against one cell moved by 3 (exact sums)
    scale, grid = 2.0, np.arange(-200, 201)
    pmf = np.exp(-np.abs(grid) / scale)
    pmf /= pmf.sum()
    shifted = np.exp(-np.abs(grid - 3) / scale)
    shifted /= shifted.sum()
    three = None
    for _ in range(3):
        part = pld.from_discrete_laplace_mechanism(1 / scale, sensitivity=1,
                                                   value_discretization_interval=1e-4)
        three = part if three is None else three.compose(part)
    for e in np.linspace(0.0, 1.5, 16):
        exact_one_cell = np.sum(np.maximum(pmf - math.exp(e) * shifted, 0.0))
        assert three.get_delta_for_epsilon(e) <= exact_one_cell + 1e-9


def test_zcdp_guarantees_enter_through_a_dominating_pair():
    for rho in (0.05, 0.5, 3.0):
        got = accounting._zcdp_pld(rho, STEP)
        mu = math.sqrt(2 * rho)  # the Gaussian of that ρ is ρ-zCDP: never above the pair
        eps = np.linspace(0, 10, 60)
        gauss = ndtr(mu / 2 - eps / mu) - np.exp(eps) * ndtr(-mu / 2 - eps / mu)
        assert np.all(got.get_delta_for_epsilon(eps) >= gauss - 1e-12)
        # and about as tight as the zCDP conversion itself
        cks = ZCDP(rho).to_approx(1e-6).epsilon
        single = compose_pld([ZCDP(rho)], delta=1e-6)
        assert gaussian_epsilon(mu, 1e-6) <= single <= cks + 0.01
    # several zCDP releases are summed first: as tight as zCDP composition
    assert compose_pld([ZCDP(0.5)] * 10, delta=1e-6) <= ZCDP(5.0).to_approx(1e-6).epsilon + 0.01


# --- the four accountants -------------------------------------------------------------------


def test_the_mixed_plan_four_ways():
    plan = [Laplace(sensitivity=1.0, epsilon=1.0)] * 10 + [Gaussian(sensitivity=1.0,
                                                                     scale=3.0)] * 5
    totals = account_plan(plan, delta=1e-6)
    # basic: each Gaussian at its exact profile, the δ shared evenly among the five
    assert totals.basic.epsilon == pytest.approx(10 + 5 * gaussian_epsilon(1 / 3, 2e-7),
                                                 rel=1e-9)
    # zCDP: ρ = 10·½ + 5·(1/3)²/2, converted at δ
    rho = 10 * 0.5 + 5 / 18
    assert totals.zcdp.epsilon == pytest.approx(ZCDP(rho).to_approx(1e-6).epsilon, rel=1e-12)
    # advanced: the best of the δ' shares the accountant tries, each a valid KOV bound
    candidates = []
    for share in accounting._DELTA_PRIME_SHARES:
        each = (1 - share) * 1e-6 / 5
        candidates.append(kov([1.0] * 10 + [gaussian_epsilon(1 / 3, each)] * 5, share * 1e-6))
    assert totals.advanced.epsilon == pytest.approx(min(candidates), rel=1e-6)
    assert totals.pld.epsilon == pytest.approx(12.389, abs=1e-3)
    assert totals.tightest is totals.pld
    assert totals.saving() == pytest.approx(totals.basic.epsilon - totals.pld.epsilon)
    assert totals.saving("zcdp") > 0
    assert totals.of("basic") is totals.basic


def test_pld_never_above_basic_composition():
    rng = np.random.default_rng(11)
    makers = [
        lambda: Laplace(sensitivity=1.0, epsilon=float(rng.uniform(0.05, 2))),
        lambda: Gaussian(sensitivity=1.0, scale=float(rng.uniform(0.5, 10))),
        lambda: Geometric(sensitivity=int(rng.integers(1, 4)), epsilon=float(rng.uniform(0.1, 1))),
        lambda: DiscreteGaussian(sensitivity=1, scale=float(rng.uniform(1, 8))),
        lambda: PureDP(float(rng.uniform(0.05, 1.5))),
        lambda: ZCDP(float(rng.uniform(0.01, 0.5))),
        lambda: ApproxDP(float(rng.uniform(0.05, 1)), 1e-8),
        lambda: ClampedLaplace(sensitivity=1.0, lower=0.0, upper=5.0, epsilon=0.7),
    ]
    for _ in range(12):
        plan = [makers[int(i)]() for i in rng.integers(0, len(makers), int(rng.integers(1, 9)))]
        delta = 10 ** rng.uniform(-8, -4)
        totals = account_plan(plan, delta=delta)
        assert totals.pld.epsilon <= totals.basic.epsilon + 1e-9, plan


def test_what_each_release_counts_as():
    frame = pd.DataFrame({"x": np.arange(10.0)})
    sum_answer, count_answer = bounded_mean_parts(frame, "x", lower=0.0, upper=9.0)
    mean = NoisyMean(sum_answer, count_answer, mechanism="laplace", epsilon=1.0)
    losses = privacy_losses([mean, ClampedLaplace(sensitivity=1.0, lower=0.0, upper=1.0,
                                                   epsilon=0.5),
                             Staircase(sensitivity=1.0, epsilon=0.2)])
    assert [type(x).__name__ for x in losses] == ["NoiseLoss", "NoiseLoss", "NoiseLoss",
                                                   "PureDP"]
    assert losses[0] == NoiseLoss("laplace", mean.parts[0].scale, 9.0)
    assert losses[2].noise == "laplace"  # clamping is post-processing
    partition = partition_privacy(noise="laplace", scale=2.0, threshold=20.0, max_groups=2)
    assert privacy_losses([partition]) == (partition.measure, ThresholdLoss(partition.delta))
    with pytest.raises(TypeError, match="releases"):
        privacy_losses(["laplace"])
    with pytest.raises(TypeError, match="releases"):
        privacy_losses("laplace")


def test_a_planned_loss_is_composed_as_its_guarantees():
    """The one Loss of the plan and the release is what the accountants read."""
    import plan.parts

    assert plan.parts.Loss is Loss
    losses = [Loss(epsilon=0.5), Loss(epsilon=0.25, delta=1e-7), Loss(rho=0.02, delta=1e-8),
              Loss(epsilon=0.0, delta=1e-9), Loss(epsilon=0.0)]
    assert privacy_losses(losses) == (PureDP(0.5), ApproxDP(0.25, 1e-7), ZCDP(0.02),
                                      ThresholdLoss(1e-8), ThresholdLoss(1e-9))
    # basic composition: the ε add up (0.75), the δ left (1e-6 − the own δs) is read by the ρ
    rho_eps = ZCDP(0.02).to_approx(1e-6 - 1e-7 - 1e-8 - 1e-9).epsilon
    assert account(losses, delta=1e-6, accountant="basic").epsilon == pytest.approx(
        0.75 + rho_eps, rel=1e-9)
    assert Loss.of(ApproxDP(1.0, 1e-6), delta=1e-7) == Loss(epsilon=1.0, delta=1e-6 + 1e-7)
    assert Loss.of(ZCDP(0.1), read_at=1e-6).to_dict() == {"rho": 0.1, "delta": 0.0,
                                                         "rho_read_at_delta": 1e-6}
    with pytest.raises(ValueError, match="exactly one"):
        Loss(epsilon=1.0, rho=0.5)


def test_catalogue_mechanisms_agree_with_their_noise_loss():
    for kind in ("laplace", "geometric", "gaussian", "discrete_gaussian", "clamped_laplace"):
        params = {"lower": 0.0, "upper": 10.0} if kind == "clamped_laplace" else {}
        budget = {"epsilon": 0.7, "delta": 1e-6} if "gaussian" in kind else {"epsilon": 0.7}
        mech = make_mechanism(kind, sensitivity=2, **budget, **params)
        (loss,) = privacy_losses([mech])
        assert loss.epsilon_for_delta(1e-6) == pytest.approx(mech.epsilon_for_delta(1e-6),
                                                             rel=1e-9)
        # one release: the PLD is tight to its own exact profile
        assert compose_pld([mech], delta=1e-6) <= mech.epsilon_for_delta(1e-6) + 3 * STEP


def test_partition_selection_two_ways():
    noise, scale, threshold, k = "laplace", 2.0, 40.0, 3
    losses = partition_losses(noise=noise, scale=scale, threshold=threshold, max_groups=k)
    guarantee = partition_privacy(noise=noise, scale=scale, threshold=threshold, max_groups=k)
    assert losses[0] == NoiseLoss("laplace", 2.0, 3.0)
    assert losses[1].delta == guarantee.delta
    tight = compose_pld(list(losses) * 4, delta=1e-5)
    loose = compose_pld([guarantee] * 4, delta=1e-5)
    noise_only = compose_pld([losses[0]] * 4, delta=1e-5)
    assert noise_only <= tight <= loose < math.inf
    # basic: ε's add, the thresholds' δ come out of the budget
    assert account(list(losses) * 4, delta=1e-5, accountant="basic").epsilon == pytest.approx(
        4 * 1.5, rel=1e-12)
    # thresholds that spend more than δ: no accountant can meet it
    big = ThresholdLoss(1e-4)
    for name in accounting.ACCOUNTANTS:
        total = account([big, PureDP(1.0)], delta=1e-5, accountant=name)
        assert total.epsilon == math.inf and "δ" in total.note
    gaussian = partition_losses(noise="gaussian", scale=3.0, threshold=30.0, max_rows=2,
                                max_groups=4)
    assert gaussian[0].sensitivity == pytest.approx(4.0)


def test_check_budget_with_reasons():
    plan = [Laplace(sensitivity=1.0, epsilon=1.0)] * 10 + [Gaussian(sensitivity=1.0,
                                                                     scale=3.0)] * 5
    ok = check_budget(plan, epsilon=13.0, delta=1e-6, accountant="pld")
    assert ok.fits and ok.left == pytest.approx(13.0 - ok.spent) and ok.reason == ""
    over = check_budget(plan, epsilon=13.0, delta=1e-6, accountant="basic")
    assert not over.fits and over.left < 0
    assert "basic composition" in over.reason and "17.81" in over.reason and "13" in over.reason
    blocked = check_budget([ThresholdLoss(1e-3)], epsilon=5.0, delta=1e-6, accountant="zcdp")
    assert not blocked.fits and "cannot meet δ" in blocked.reason
    with pytest.raises(ValueError, match="accountant"):
        check_budget(plan, epsilon=1.0, delta=1e-6, accountant="rdp")


def test_empty_plan_and_validation():
    assert compose_pld([], delta=1e-6) == 0.0
    assert account([], delta=1e-6, accountant="advanced").epsilon == 0.0
    with pytest.raises(ValueError, match="delta"):
        compose_pld([PureDP(1.0)], delta=1e-14)
    with pytest.raises(ValueError, match="releases"):
        compose_pld([PureDP(1e300)], delta=1e-6)
    with pytest.raises(ValueError, match="discretization"):
        compose_pld([PureDP(10.0)] * 100, delta=1e-6, discretization=1e-9)
    with pytest.raises(ValueError, match="sensitivity"):
        NoiseLoss("discrete_laplace", 1.0, 1.5)
    with pytest.raises(ValueError, match="noise"):
        NoiseLoss("cauchy", 1.0, 1.0)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_pld_rounded_up_never_goes_below_the_exact_curve(k):
    """compose_pld(connect_dots=False), what a release records: every loss rounded up to the
    grid. k Gaussians (σ = 4, Δ = 1) are one of σ/√k: never below its exact ε (Balle &
    Wang), at most one grid step per release above; a Laplace (b = 2, Δ = 1) never below its
    exact ε at δ, μ + 2 ln(1 − δ) with μ = Δ/b; and never below connect-the-dots' figure less
    the grid's error."""
    gaussians = [NoiseLoss("gaussian", 4.0, 1.0)] * k
    exact = gaussian_epsilon(math.sqrt(k) / 4.0, 1e-6)
    rounded = compose_pld(gaussians, delta=1e-6, connect_dots=False)
    assert exact <= rounded <= exact + k * DISCRETIZATION
    assert rounded >= compose_pld(gaussians, delta=1e-6) - 1e-6
    laplace = [NoiseLoss("laplace", 2.0, 1.0)]
    assert compose_pld(laplace, delta=0.05, connect_dots=False) >= 0.5 + 2 * math.log(0.95)


def test_noise_law_only_for_laws_a_pld_represents_and_never_below_the_certificate():
    """A Gaussian certified at ρ = 1/8 with scale 2 is read at sensitivity ≥ √(2ρ)·2 = 1
    even when told 0.5; a Laplace at ε·b; no law for a mechanism without one, a discrete
    Gaussian on a vector, or a whole-number noise at a fractional sensitivity."""
    (gauss,) = accounting.noise_law("gaussian", 2.0, 0.5, rho=1 / 8)
    assert 1.0 <= gauss.sensitivity <= 1.0 + 1e-15 and gauss.scale == 2.0
    (lap,) = accounting.noise_law("laplace", 2.0, 1.0, epsilon=0.75)
    assert 1.5 <= lap.sensitivity <= 1.5 + 1e-15
    assert accounting.noise_law("gaussian", 2.0, 3.0, rho=1 / 8)[0].sensitivity == 3.0
    assert accounting.noise_law(None, 2.0, 1.0) == ()
    assert accounting.noise_law("discrete_gaussian", 2.0, 1.0, vector=True) == ()
    assert accounting.noise_law("discrete_laplace", 2.0, 1.5) == ()
    assert accounting.noise_law("discrete_gaussian", 2.0, 2.0)[0].sensitivity == 2.0
