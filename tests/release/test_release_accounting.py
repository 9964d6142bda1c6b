"""release.accounting.privacy_spent: a release's parts composed by dpcore.accounting under the
plan's accountant, checked against closed forms (exact sums, the CKS conversion minimised
here with scipy, Kairouz–Oh–Viswanath), the exact optimal composition of pure-DP parts, the
exact Gaussian profile and dp_accounting's PLDs built by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import optimize

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.build import Loss
from plan.kinds.quantiles import Quantiles
from plan.model import (
    Accounting,
    Bounds,
    Count,
    Dataset,
    Grid,
    GroupBy,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    SelectionNoise,
    Sum,
    Threshold,
)
from release import Ledger, prepare, run
from release.accounting import privacy_spent, total_up
from release.errors import ReleaseRefused
from tests.dpcore.test_accounting import gaussian_epsilon, kov, optimal_pure_delta


def cks_epsilon(rho: float, delta: float) -> float:
    """Canonne, Kamath & Steinke 2020 (Corollary 13), minimised over log(α − 1) by scipy."""
    def eps(t: float) -> float:
        a = 1 + math.exp(t)
        return a * rho + (math.log(1 / delta) + (a - 1) * math.log1p(-1 / a)
                          - math.log(a)) / (a - 1)

    grid = np.linspace(-15, 20, 3501)
    start = grid[int(np.argmin([eps(t) for t in grid]))]
    found = optimize.minimize_scalar(eps, bounds=(start - 0.02, start + 0.02),
                                     method="bounded", options={"xatol": 1e-13})
    return float(found.fun)


def smallest_float_at_least(exact: Fraction) -> float:
    x = float(exact)
    return x if Fraction(x) >= exact else math.nextafter(x, math.inf)


def test_basic_without_any_delta_is_the_exact_sum_rounded_up():
    epsilons = [0.1, 0.2, 0.3, 1 / 3]
    spent = privacy_spent([Loss(epsilon=e) for e in epsilons], Accounting("basic"))
    exact = sum(map(Fraction, epsilons), Fraction(0))
    assert spent.epsilon == smallest_float_at_least(exact)
    assert Fraction(spent.epsilon) >= exact and spent.epsilon > 0.1 + 0.2 + 0.3 + 1 / 3 - 1e-15
    assert (spent.delta, spent.method, spent.requested, spent.note) == (0.0, "basic", "basic",
                                                                        "")


def test_basic_reads_an_opendp_rho_at_the_delta_its_query_gives():
    """The Adult example plan's shape: pure parts and one Gaussian certified as ρ, no total
    δ: read at the Gaussian's δ = 1e-6, and the note says so."""
    rho = 0.5 * (99 / 400.0) ** 2
    losses = [Loss(epsilon=0.5), Loss(epsilon=0.25), Loss(rho=rho, read_at=1e-6)]
    spent = privacy_spent(losses, Accounting("basic"))
    expected = 0.75 + cks_epsilon(rho, 1e-6)
    assert expected - 1e-12 <= spent.epsilon <= expected * (1 + 1e-9)
    assert spent.delta == 1e-6 and spent.method == "basic"
    assert "no total δ" in spent.note and "1e-06" in spent.note


def test_zcdp_adds_the_rhos_and_converts_at_the_plans_delta():
    losses = [Loss(epsilon=0.5), Loss(epsilon=0.3), Loss(rho=0.05, read_at=1e-7)]
    spent = privacy_spent(losses, Accounting("zcdp", 1e-6))
    exact_rho = Fraction(0.5) ** 2 / 2 + Fraction(0.3) ** 2 / 2 + Fraction(0.05)
    assert spent.rho == smallest_float_at_least(exact_rho)
    expected = cks_epsilon(float(exact_rho), 1e-6)
    assert expected - 1e-12 <= spent.epsilon <= expected * (1 + 1e-9)
    assert (spent.delta, spent.method, spent.note) == (1e-6, "zcdp", "")
    assert spent.to_dict() == {"epsilon": spent.epsilon, "delta": 1e-6, "rho": spent.rho}


def test_a_thresholds_delta_is_spent_outright_under_zcdp():
    """Partition selection: ρ (or ε) on the counts plus δ = 1e-8 outright, twice: the ε is
    read at what the two δs leave of the plan's."""
    losses = [Loss(epsilon=1.0, delta=1e-8), Loss(rho=0.1, delta=1e-8, read_at=1e-7)]
    spent = privacy_spent(losses, Accounting("zcdp", 1e-6))
    expected = cks_epsilon(0.5 + 0.1, 1e-6 - 2e-8)
    assert expected - 1e-12 <= spent.epsilon <= expected * (1 + 1e-9)
    assert spent.delta == 1e-6


def _noted_epsilon(note: str) -> float:
    return float(note.split("would read ε = ")[1].split(" ")[0])


def test_advanced_is_kairouz_oh_viswanath_and_never_below_the_optimum():
    losses = [Loss(epsilon=0.1)] * 40 + [Loss(epsilon=0.1, delta=1e-9)]
    spent = privacy_spent(losses, Accounting("advanced", 1e-6))
    closed = kov([0.1] * 41, 1e-6 - 1e-9)  # what the (ε, δ) part leaves is δ'
    assert closed <= spent.epsilon <= closed * (1 + 1e-12) and closed < 4.1
    # a valid guarantee: the exact optimal composition needs no more than δ at this ε
    assert optimal_pure_delta([(0.1, 41)], spent.epsilon) <= 1e-6 - 1e-9
    assert spent.method == spent.requested == "advanced" and spent.note == ""


def test_pure_parts_are_recorded_pure_with_the_accountants_figure_in_the_note():
    """40 × ε = 0.1 and one ε = 0.5: recorded as pure 4.5-DP (δ = 0); the note gives the
    tight figures, checked against Kairouz–Oh–Viswanath and dp_accounting by hand."""
    losses = [Loss(epsilon=0.1)] * 40 + [Loss(epsilon=0.5)]
    advanced = privacy_spent(losses, Accounting("advanced", 1e-6))
    spent = privacy_spent(losses, Accounting("pld", 1e-6))
    for recorded, method in ((advanced, "advanced"), (spent, "pld")):
        assert (recorded.epsilon, recorded.delta, recorded.method, recorded.requested) == (
            total_up([0.1] * 40 + [0.5]), 0.0, "basic", method)
        assert 4.5 <= recorded.epsilon <= math.nextafter(4.5, 5)
    assert _noted_epsilon(advanced.note) == pytest.approx(
        kov([0.1] * 40 + [0.5], 1e-6), rel=1e-5)

    def pure(eps: float):
        return pld.from_privacy_parameters(common.DifferentialPrivacyParameters(eps, 0.0),
                                           value_discretization_interval=1e-3)

    by_hand = pure(0.1).self_compose(40).compose(pure(0.5)).get_epsilon_for_delta(1e-6)
    assert _noted_epsilon(spent.note) == pytest.approx(by_hand, abs=2e-3)
    assert optimal_pure_delta([(0.1, 40), (0.5, 1)], _noted_epsilon(spent.note)) <= 1e-6
    assert _noted_epsilon(spent.note) < _noted_epsilon(advanced.note) <= 4.50001


def test_pld_of_an_opendp_gaussian_lies_between_its_exact_profile_and_the_cks_bound():
    """OpenDP certifies its Gaussian by ρ alone: the PLD accountant must cover every
    ρ-zCDP release (so at least the Gaussian's own exact ε); it stays within one grid step
    (1e-3) of the CKS conversion of the summed ρ."""
    sigma = 4.0
    rho = 1 / (2 * sigma**2)
    spent = privacy_spent([Loss(rho=rho, read_at=1e-6)] * 3, Accounting("pld", 1e-6))
    exact = gaussian_epsilon(math.sqrt(3) / sigma, 1e-6)
    assert exact <= spent.epsilon <= cks_epsilon(3 * rho, 1e-6) + 1e-3
    gaussian_pld = pld.from_gaussian_mechanism(sigma, value_discretization_interval=1e-4)
    assert spent.epsilon >= gaussian_pld.self_compose(3).get_epsilon_for_delta(1e-6) - 1e-3


def test_the_method_is_the_plans_for_every_accountant():
    losses = [Loss(epsilon=0.5), Loss(rho=0.02, read_at=1e-7), Loss(epsilon=0.2, delta=1e-9)]
    figures = {}
    for method in ("basic", "advanced", "zcdp", "pld"):
        spent = privacy_spent(losses, Accounting(method, 1e-6))
        assert (spent.method, spent.requested, spent.delta, spent.note) == (
            method, method, 1e-6, "")
        assert (spent.rho is not None) == (method == "zcdp")
        figures[method] = spent.epsilon
    assert figures["pld"] <= figures["basic"]
    # basic: the Gaussian's ε at what the (ε, δ) part leaves of δ, plus the pure ε
    assert figures["basic"] == pytest.approx(0.7 + cks_epsilon(0.02, 1e-6 - 1e-9), rel=1e-9)


def test_refusals_say_why():
    with pytest.raises(ReleaseRefused, match="query 'x'.*δ the plan must give"):
        privacy_spent([Loss(rho=0.1)], Accounting("basic"), labels=["query 'x'"])
    with pytest.raises(ReleaseRefused, match="cannot meet δ"):
        privacy_spent([Loss(rho=0.1, delta=1e-6), Loss(epsilon=1.0, delta=1e-6)],
                      Accounting("zcdp", 1e-6))
    with pytest.raises(ReleaseRefused, match="privacy-loss distributions.*smallest δ"):
        privacy_spent([Loss(epsilon=1.0)], Accounting("pld", 1e-14))
    with pytest.raises(ReleaseRefused, match="no guarantee"):
        privacy_spent([Loss(epsilon=1.0, delta=0.6), Loss(epsilon=1.0, delta=0.6)],
                      Accounting("basic"))
    with pytest.raises(ValueError, match="losses"):
        privacy_spent([], Accounting("basic"))


@pytest.mark.parametrize("method", ["advanced", "zcdp", "pld"])
def test_a_plan_of_pure_parts_is_recorded_as_pure_dp(method):
    """Three ε-DP parts: the release is what it is, pure 3-DP (δ = 0), not an (ε, δ) figure
    at the plan's δ (PLD reads 2.999997 at δ = 1e-6: no reason to spend a δ)."""
    losses = [Loss(epsilon=1.0), Loss(epsilon=0.5), Loss(epsilon=1.5)]
    spent = privacy_spent(losses, Accounting(method, 1e-6))
    assert (spent.epsilon, spent.delta, spent.method, spent.requested) == (
        3.0, 0.0, "basic", method)
    assert "pure DP" in spent.note


# --------------------------------------------------------------------------------------------
# issue 31 item 7: the ledger records the tightest figure it can certify


def _gaussian_counts(k: int, method: str, delta: float, *, bound: float | None = None) -> Plan:
    """k Gaussian queries at ε = 1, δ = 1e-6 each (counts, or sums over [0, bound])."""
    query = Count() if bound is None else Sum("x", Bounds(0.0, bound))
    return Plan(Dataset("people"), tuple(
        PlanQuery(f"q{i}", f"Query {i}", query, Noise("gaussian", "approx", epsilon=1.0,
                                                       delta=1e-6))
        for i in range(k)), PrivacyUnit(), accounting=Accounting(method, delta))


def _opendp_scales(prepared) -> list[float]:
    return [c.opendp_scale for cs in prepared.certified for c in cs]


def test_three_gaussian_counts_record_the_tight_pld_not_the_conversion_of_rho():
    """The issue's plan: three Gaussian counts (ε = 1, δ = 1e-6 each; OpenDP's scale 4.2247)
    under PLD at δ = 1e-5. The ledger recorded 1.7413 (OpenDP's ρ converted); the noises'
    own PLD gives 1.5981. Recorded now: within 1 % of dp_accounting's PLD of those very
    noises, and never below the closed form (three Gaussians of scale σ are one of scale
    σ/√3: its exact ε by Balle & Wang), at the plan's δ."""
    prepared = prepare(_gaussian_counts(3, "pld", 1e-5))
    sigma = _opendp_scales(prepared)[0]
    assert _opendp_scales(prepared) == [sigma] * 3 and sigma == pytest.approx(4.2247, abs=1e-4)
    closed = gaussian_epsilon(math.sqrt(3) / sigma, 1e-5)
    by_hand = pld.from_gaussian_mechanism(
        sigma, sensitivity=1.0, value_discretization_interval=1e-4,
        pessimistic_estimate=True).self_compose(3).get_epsilon_for_delta(1e-5)
    spent = prepared.spent
    assert closed == pytest.approx(1.5981, abs=1e-4) and by_hand >= closed - 1e-9
    assert closed <= spent.epsilon <= 1.01 * by_hand
    assert spent.epsilon <= closed + 3 * 1e-3   # one grid step (rounded up) per Gaussian
    assert (spent.delta, spent.method) == (1e-5, "pld")
    certificate = privacy_spent([c.certified for cs in prepared.certified for c in cs],
                                prepared.plan.accounting)
    assert certificate.epsilon == pytest.approx(1.7413, abs=1e-4)
    assert spent.epsilon < certificate.epsilon
    assert "1.74135" in spent.note and "ε = 1.59958" in spent.note


def test_the_recorded_figure_is_the_ledgers(tmp_path):
    """What release.run writes to the ledger is that figure, at the plan's δ."""
    plan = _gaussian_counts(3, "pld", 1e-5)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(plan, FrameSource(pd.DataFrame({"x": np.arange(40.0)})), ledger=ledger,
            engine=Engine(DuckDBBackend(threads=1)))
        entry = ledger.releases()[0]
    sigma = _opendp_scales(prepare(plan))[0]
    closed = gaussian_epsilon(math.sqrt(3) / sigma, 1e-5)
    assert closed <= entry.epsilon <= 1.01 * closed and entry.delta == 1e-5


@pytest.mark.parametrize(("k", "bound"), [(1, None), (2, 5.0), (8, None)])
def test_k_gaussians_never_go_below_the_one_gaussian_of_scale_sigma_over_root_k(k, bound):
    """k Gaussians of scale σ and sensitivity Δ compose to one of scale σ/√k: its exact ε at
    δ (Balle & Wang) is a floor the recorded figure never crosses, and it stays within
    1 % of it (the PLD rounds each loss up by at most one grid step, 1e-3). The plan's δ
    covers the δ = 1e-6 each query was planned at."""
    delta = 1e-5
    prepared = prepare(_gaussian_counts(k, "pld", delta, bound=bound))
    sigma = _opendp_scales(prepared)[0]
    sensitivity = prepared.certified[0][0].part.sensitivity
    assert sensitivity == (1.0 if bound is None else bound)
    closed = gaussian_epsilon(math.sqrt(k) * sensitivity / sigma, delta)
    assert closed <= prepared.spent.epsilon <= min(closed * 1.01, closed + k * 1e-3)
    assert prepared.spent.delta == delta


def test_under_basic_composition_each_gaussian_counts_its_exact_profile():
    """Basic composition with no total δ: read at the δs the queries give (3 × 1e-6), each
    Gaussian at its exact (ε, δ) curve (Balle & Wang) at OpenDP's scale — the 1.0 each was
    planned at — not the CKS conversion of OpenDP's ρ (1.078 each)."""
    prepared = prepare(_gaussian_counts(3, "basic", 0.0))
    sigma = _opendp_scales(prepared)[0]
    exact = gaussian_epsilon(1 / sigma, 1e-6)
    assert exact == pytest.approx(1.0, abs=1e-9)
    assert 3 * exact <= prepared.spent.epsilon <= 3 * exact * (1 + 1e-9)
    assert prepared.spent.delta == pytest.approx(3e-6, rel=1e-12)
    assert prepared.spent.delta >= 3e-6
    assert cks_epsilon(1 / (2 * sigma**2), 1e-6) > 1.07


def test_a_zcdp_plan_keeps_its_rho_and_a_pure_plan_its_sum():
    """The certificate is their exact figure: a zCDP plan records OpenDP's ρ added up (and
    its conversion), a pure plan the exact sum of its ε with δ = 0."""
    prepared = prepare(_gaussian_counts(3, "zcdp", 1e-5))
    rhos = [c.certified.rho for cs in prepared.certified for c in cs]
    assert prepared.spent.rho == total_up(rhos)
    assert prepared.spent.epsilon == pytest.approx(cks_epsilon(sum(rhos), 1e-5), rel=1e-9)
    pure = Plan(Dataset("people"), tuple(
        PlanQuery(f"q{i}", "Rows", Count(), Noise("laplace", "pure", epsilon=e))
        for i, e in enumerate((1.0, 0.5, 1.5))), PrivacyUnit(), accounting=Accounting("pld",
                                                                                    1e-6))
    assert (prepare(pure).spent.epsilon, prepare(pure).spent.delta) == (3.0, 0.0)


def _mixed_plan() -> Plan:
    grid = Grid(tuple(float(v) for v in range(0, 101, 5)), "public")
    return Plan(Dataset("people"), (
        PlanQuery("n", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),
        PlanQuery("s", "Income", Sum("income", Bounds(0, 100)),
                  Noise("gaussian", "approx", epsilon=1.0, delta=1e-6)),
        PlanQuery("q", "Income median", Quantiles("income", (0.5,), grid),
                  SelectionNoise("exponential", "pure", epsilon=1.0))),
        PrivacyUnit(), accounting=Accounting("pld", 1e-5))


def test_a_mixed_plan_composes_the_noises_and_keeps_the_quantiles_certificate():
    """Laplace + Gaussian + a quantile under PLD at δ = 1e-5: the Laplace and the Gaussian
    enter as their noises at OpenDP's scales, the quantile (a noisy arg-min: no noise law a
    PLD represents) as OpenDP's ε. Checked against dp_accounting built by hand: between its
    optimistic and pessimistic PLDs of the same three, and below the certificates' 2.9181."""
    prepared = _prepared_mixed = prepare(_mixed_plan())
    laplace, gaussian, quantile = (cs[0] for cs in _prepared_mixed.certified)
    assert quantile.noise_law == () and quantile.certified.epsilon <= 1.0
    options = {"value_discretization_interval": 1e-4}

    def hand(pessimistic: bool) -> float:
        out = pld.from_laplace_mechanism(laplace.opendp_scale, sensitivity=1.0,
                                         pessimistic_estimate=pessimistic, **options)
        out = out.compose(pld.from_gaussian_mechanism(
            gaussian.opendp_scale, sensitivity=100.0, pessimistic_estimate=pessimistic,
            **options))
        # the quantile's ε as randomized response, its losses rounded up (pessimistic) or
        # down (optimistic) to the grid
        eps = quantile.certified.epsilon
        steps = math.ceil(eps / 1e-4) if pessimistic else math.floor(eps / 1e-4)
        pmf = {steps: math.exp(eps) / (1 + math.exp(eps)), -steps: 1 / (1 + math.exp(eps))}
        out = out.compose(pld.PrivacyLossDistribution.create_from_rounded_probability(
            pmf, 0.0, 1e-4, pessimistic_estimate=pessimistic))
        return out.get_epsilon_for_delta(1e-5)

    low, high = hand(False), hand(True)
    spent = prepared.spent
    assert low <= spent.epsilon <= high * 1.005 and spent.delta == 1e-5
    certificate = privacy_spent([c.certified for cs in prepared.certified for c in cs],
                                prepared.plan.accounting)
    assert spent.epsilon < certificate.epsilon


def test_only_the_noises_a_pld_represents_carry_their_law():
    """Laplace, geometric, Gaussian, clamped Laplace, a threshold's noise (with its recorded
    δ) carry their law at OpenDP's scale; selections and quantiles keep their certificate."""
    from tests.release_fixtures import every_kind_plan

    for cs in prepare(every_kind_plan()).certified:
        for c in cs:
            law = c.noise_law
            noise = getattr(type(c.part.mechanism), "pld_noise", None)
            threshold = hasattr(c.part.mechanism, "threshold")
            if noise is None and not threshold:
                assert law == (), c.part.name
                continue
            assert law[0].scale == c.opendp_scale, c.part.name
            assert law[0].sensitivity >= (c.d_in if not threshold else 1), c.part.name
            if threshold:
                assert law[1].delta == c.certified.delta


def test_whole_number_noises_enter_as_their_laws_at_opendps_scales():
    """A geometric count (ε = 1) and a discrete Gaussian count (ε = 1, δ = 1e-6) under PLD at
    δ = 1e-5: recorded as dp_accounting's PLD of the discrete Laplace and the discrete
    Gaussian at OpenDP's scales (built here by hand on a grid ten times finer), never below
    its optimistic twin, and below the certificates composed (ε plus OpenDP's ρ)."""
    plan = Plan(Dataset("people"), (
        PlanQuery("g", "Rows", Count(), Noise("geometric", "pure", epsilon=1.0)),
        PlanQuery("d", "Rows again", Count(),
                  Noise("discrete_gaussian", "approx", epsilon=1.0, delta=1e-6))),
        PrivacyUnit(), accounting=Accounting("pld", 1e-5))
    prepared = prepare(plan)
    geometric, discrete_gaussian = (cs[0] for cs in prepared.certified)
    assert discrete_gaussian.certified.rho is not None   # OpenDP certifies it by ρ

    def hand(pessimistic: bool) -> float:
        options = {"value_discretization_interval": 1e-4, "pessimistic_estimate": pessimistic,
                   "use_connect_dots": False}
        out = pld.from_discrete_laplace_mechanism(1 / geometric.opendp_scale, sensitivity=1,
                                                  **options)
        return out.compose(pld.from_discrete_gaussian_mechanism(
            discrete_gaussian.opendp_scale, sensitivity=1, **options)
        ).get_epsilon_for_delta(1e-5)

    low, high = hand(False), hand(True)
    assert low <= prepared.spent.epsilon <= high + 2e-3   # two losses, one 1e-3 step each
    certificate = privacy_spent([c.certified for cs in prepared.certified for c in cs],
                                plan.accounting)
    assert prepared.spent.epsilon < certificate.epsilon and prepared.spent.delta == 1e-5


@pytest.mark.slow
def test_a_synthetic_table_keeps_opendps_figure_beside_gaussian_counts():
    """A synthetic table (MST, ε = 1: OpenDP certifies a map no PLD here models) and three
    Gaussian counts under PLD at δ = 1e-5: the table enters as OpenDP's ε (randomized
    response, the worst case of an ε-DP release), the counts as their noise; checked against
    dp_accounting by hand."""
    from dataclasses import replace

    from tests.release.test_synthetic_release import synthetic_plan

    base = synthetic_plan()
    counts = _gaussian_counts(3, "pld", 1e-5).queries
    plan = replace(base, queries=base.queries + counts, accounting=Accounting("pld", 1e-5))
    prepared = prepare(plan)
    table, *gaussians = (cs[0] for cs in prepared.certified)
    assert table.noise_law == () and all(g.noise_law for g in gaussians)
    eps, sigma = table.certified.epsilon, gaussians[0].opendp_scale
    sensitivity = gaussians[0].part.sensitivity

    def hand(pessimistic: bool) -> float:
        steps = math.ceil(eps / 1e-4) if pessimistic else math.floor(eps / 1e-4)
        out = pld.PrivacyLossDistribution.create_from_rounded_probability(
            {steps: math.exp(eps) / (1 + math.exp(eps)), -steps: 1 / (1 + math.exp(eps))},
            0.0, 1e-4, pessimistic_estimate=pessimistic)
        return out.compose(pld.from_gaussian_mechanism(
            sigma, sensitivity=sensitivity, value_discretization_interval=1e-4,
            pessimistic_estimate=pessimistic, use_connect_dots=False).self_compose(3)
        ).get_epsilon_for_delta(1e-5)

    assert hand(False) <= prepared.spent.epsilon <= hand(True) + 4e-3


def test_partition_selection_enters_as_its_counts_noise_and_its_thresholds_delta():
    """Groups found privately (Laplace noise at ε = 1, threshold δ = 1e-7, one row per
    person) under PLD at δ = 1e-5: recorded as the counts' Laplace at OpenDP's scale plus an
    outright loss of probability δ_t = the recorded δ. Closed form of that pair: a Laplace of
    μ = Δ/b reaches δ at ε = μ + 2 ln(1 − x), x = (δ − δ_t)/(1 − δ_t); the figure never goes
    below it, and stays within two grid steps (1e-3 each) above."""
    plan = Plan(Dataset("people"), (PlanQuery(
        "found", "Groups", GroupBy("dx"), None,
        threshold=Threshold("laplace", 1e-7, epsilon=1.0)),), PrivacyUnit(),
        accounting=Accounting("pld", 1e-5))
    prepared = prepare(plan)
    (threshold,) = prepared.certified[0]
    noise, outright = threshold.noise_law
    delta_t = threshold.certified.delta
    assert outright.delta == delta_t >= 1e-7 * 0.5 and noise.scale == threshold.opendp_scale
    x = (1e-5 - delta_t) / (1 - delta_t)
    closed = 1.0 / threshold.opendp_scale + 2 * math.log1p(-x)
    assert closed <= prepared.spent.epsilon <= closed + 2e-3
    certificate = privacy_spent([threshold.certified], plan.accounting)
    assert prepared.spent.epsilon <= certificate.epsilon and prepared.spent.delta == 1e-5
