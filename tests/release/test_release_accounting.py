"""release.accounting.privacy_spent: a release's parts composed by dpcore.accounting under the
plan's accountant, checked against closed forms (exact sums, the CKS conversion minimised
here with scipy, Kairouz–Oh–Viswanath), the exact optimal composition of pure-DP parts, the
exact Gaussian profile and dp_accounting's PLDs built by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import optimize

from plan.build import Loss
from plan.model import Accounting
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
