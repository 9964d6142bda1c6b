"""Tests for dashboard.analysis.budget: row checks, the three composition totals and the
most-releases counts, against OpenDP 0.16, diffprivlib and formulas written out here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats
from scipy.special import ndtr

from dashboard.analysis import budget
from dpcore import BoundedLaplace
from dpcore.measures import ApproxDP, PureDP, advanced_composition

HYPOTHESIS = settings(max_examples=150, deadline=None)


@pytest.fixture(scope="module")
def dp():
    import opendp.prelude as opendp

    opendp.enable_features("contrib")
    return opendp


def _domain(dp):
    return dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)


def plan(*rows) -> pd.DataFrame:
    """A plan from (query, mechanism, measure, ε, δ, ρ, sensitivity) tuples."""
    return pd.DataFrame(rows, columns=list(budget.PLAN_COLUMNS))


# --- independent formulas, written out here ------------------------------------------------


def gaussian_profile_epsilon(rho: float, delta: float) -> float:
    """Exact ε of a Gaussian with Δ/σ = √(2ρ) at δ (Balle & Wang 2018, Theorem 8)."""
    mu = math.sqrt(2 * rho)

    def delta_at(eps: float) -> float:
        return ndtr(mu / 2 - eps / mu) - math.exp(eps) * ndtr(-mu / 2 - eps / mu)

    return optimize.brentq(lambda e: delta_at(e) - delta, 0.0, 100.0, xtol=1e-14)


def drv(epsilons, delta_prime: float) -> float:
    """Advanced composition (Dwork, Rothblum & Vadhan) with a bound per release."""
    e = np.asarray(epsilons, dtype=float)
    return math.sqrt(2 * math.log(1 / delta_prime) * np.sum(e**2)) + np.sum(e * (np.exp(e) - 1))


def optimal_delta_two_sizes(eps1: float, k1: int, eps2: float, k2: int, eps_total: float) -> float:
    """Exact smallest δ at eps_total for k1 ε1-DP and k2 ε2-DP releases composed.

    Randomised responses are the worst case (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan
    2016): the privacy loss is ε1(2T1 − k1) + ε2(2T2 − k2), T_i ~ Bin(k_i, e^ε_i/(1 + e^ε_i)),
    and δ = E[(1 − e^{eps_total − loss})₊].
    """
    t1, t2 = np.arange(k1 + 1), np.arange(k2 + 1)
    p1 = stats.binom.pmf(t1, k1, 1 / (1 + math.exp(-eps1)))
    p2 = stats.binom.pmf(t2, k2, 1 / (1 + math.exp(-eps2)))
    loss = eps1 * (2 * t1[:, None] - k1) + eps2 * (2 * t2[None, :] - k2)
    weights = p1[:, None] * p2[None, :]
    return float(np.sum(weights * -np.expm1(np.minimum(eps_total - loss, 0.0))))


# --- the default plan ----------------------------------------------------------------------


def test_default_plan_is_valid_and_its_totals_match_independent_computations(dp):
    import diffprivlib.mechanisms as dpl

    checked = budget.check_plan(budget.default_plan())
    assert [r.valid for r in checked] == [True] * 4
    delta_budget = 1e-5
    totals = budget.plan_totals(checked, delta_budget)
    zcdp_row_eps = gaussian_profile_epsilon(0.125, 1e-6)
    # basic: the sum of the rows' ε and δ
    assert totals.basic.epsilon == pytest.approx(0.5 + 0.5 + 1.0 + zcdp_row_eps, rel=1e-9)
    assert totals.basic.delta == pytest.approx(2e-6, rel=1e-12)
    # zCDP: ρ of the Gaussian (ε = 1, δ = 1e-6) row from diffprivlib's analytic calibration
    sigma = dpl.GaussianAnalytic(epsilon=1.0, delta=1e-6, sensitivity=99.0)._scale
    rho = 0.5**2 / 2 + 0.5**2 / 2 + 99.0**2 / (2 * sigma**2) + 0.125
    assert totals.rho == pytest.approx(rho, rel=1e-9)
    gaussian = dp.m.make_gaussian(*_domain(dp), scale=1 / math.sqrt(2 * rho))
    expected = dp.c.make_zCDP_to_approxDP(gaussian).map(1.0).epsilon(delta_budget)
    assert totals.zcdp.epsilon == pytest.approx(expected, rel=1e-9)
    assert totals.zcdp.delta == delta_budget
    # advanced: δ' is what the rows' δ leave of the budget
    assert totals.advanced.epsilon == pytest.approx(
        drv([0.5, 0.5, 1.0, zcdp_row_eps], delta_budget - 2e-6), rel=1e-9)
    assert totals.advanced.delta == pytest.approx(delta_budget, rel=1e-12)
    assert totals.notes  # advanced is worse than basic for four releases: the page says so


def test_row_costs_and_accuracies():
    rows = budget.check_plan(plan(
        ("count", "laplace", "pure", 0.5, None, None, 1.0),
        ("hist", "geometric", "approx", 0.5, 1e-6, None, 1.0),   # δ unused: pure
        ("sum", "gaussian", "approx", 1.0, 1e-6, None, 99.0),
        ("mean", "bounded_laplace", "approx", 0.5, 1e-3, None, 1.0),
        ("clamped", "clamped_laplace", "pure", 0.2, None, None, 3.0),
    ))
    count, hist, gsum, bounded, clamped = rows
    assert count.approx.delta == 0 and count.zcdp.rho == pytest.approx(0.125)
    # Laplace at 95%: b·ln(1/0.05) with b = 1/0.5
    assert count.accuracy == pytest.approx(2 * math.log(20), rel=1e-12)
    assert hist.approx.delta == 0 and "pure" in hist.note
    # two-sided geometric with α = e^{-0.5}: P(|X| > a) = 2α^{a+1}/(1+α) <= 0.05
    alpha = math.exp(-0.5)
    smallest = min(a for a in range(100) if 2 * alpha ** (a + 1) / (1 + alpha) <= 0.05)
    assert hist.accuracy == smallest
    assert gsum.approx.epsilon == 1.0 and gsum.approx.delta == 1e-6
    sigma = 99.0 / math.sqrt(2 * gsum.zcdp.rho)
    assert gsum.accuracy == pytest.approx(sigma * stats.norm.ppf(0.975), rel=1e-9)
    # bounded Laplace at (ε, δ) counts as pure ε − ln(1 − δ) under zCDP ...
    pure = 0.5 - math.log(1 - 1e-3)
    assert bounded.zcdp.rho == pytest.approx(pure**2 / 2, rel=1e-12)
    assert bounded.approx.epsilon == 0.5 and bounded.approx.delta == 1e-3
    assert bounded.accuracy is None and clamped.accuracy is None
    # ... which its calibration guarantees, whatever the domain and sensitivity
    for lower, upper, sens in [(0, 1, 1), (0, 10, 1), (-3, 3, 2.5), (0, 100, 100)]:
        mech = BoundedLaplace(sensitivity=sens, lower=lower, upper=upper, epsilon=0.5,
                              delta=1e-3)
        assert mech.effective_epsilon <= pure * (1 + 1e-12)
    table = budget.release_table(rows)
    assert list(table["Row"]) == [1, 2, 3, 4, 5]
    assert table.loc[3, "Error at 95%"].startswith("depends on the true value")


@pytest.mark.parametrize("row, message", [
    (("a", "laplace", "pure", -1.0, None, None, 1.0), "ε must be a positive number"),
    (("a", "laplace", "pure", 0.0, None, None, 1.0), "ε must be a positive number"),
    (("a", "laplace", "pure", None, None, None, 1.0), "ε is empty"),
    (("a", "gaussian", "approx", 1.0, 1.0, None, 1.0), "δ must be at least 0 and below 1"),
    (("a", "gaussian", "approx", 1.0, 0.0, None, 1.0), "δ must be above 0"),
    (("a", "laplace", "approx", 1.0, 1.5, None, 1.0), "δ must be at least 0 and below 1"),
    (("a", "gaussian", "pure", 1.0, None, None, 1.0), "never pure DP"),
    (("a", "laplace", "zcdp", None, None, 0.5, 1.0), "Gaussian and Discrete Gaussian only"),
    (("a", "discrete_gaussian", "zcdp", None, 1e-6, 0.5, 0.5), "whole-number sensitivity"),
    (("a", "discrete_gaussian", "pure", 1.0, None, None, 1.0), "never pure DP"),
    (("a", "gaussian", "zcdp", None, None, 0.5, 1.0), "δ is empty"),
    (("a", "gaussian", "zcdp", None, 1e-6, -2.0, 1.0), "ρ must be a positive number"),
    (("a", "geometric", "pure", 1.0, None, None, 0.5), "whole-number sensitivity"),
    (("a", "laplace", "pure", 1.0, None, None, float("nan")), "Sensitivity is empty"),
    (("a", "laplace", "pure", float("inf"), None, None, 1.0), "ε must be a positive number"),
    (("a", None, "pure", 1.0, None, None, 1.0), "no mechanism"),
    (("a", "laplace", None, 1.0, None, None, 1.0), "no privacy measure"),
    (("a", "laplace", "pure", "abc", None, None, 1.0), "ε must be a positive number"),
])
def test_bad_rows_get_a_message_and_are_left_out(row, message):
    good = ("good", "laplace", "pure", 0.5, None, None, 1.0)
    checked = budget.check_plan(plan(good, row))
    assert checked[0].valid
    assert not checked[1].valid and message in checked[1].error
    totals = budget.plan_totals(checked, 1e-6)
    assert totals.counted == (1,) and totals.skipped == (2,)
    assert totals.basic.epsilon == 0.5
    assert "Not counted" in budget.release_table(checked).loc[1, "Status"]


cell = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                 st.integers(-10, 10), st.text(max_size=5), st.booleans())


@HYPOTHESIS
@given(mechanism=st.one_of(st.sampled_from([*budget.MECHANISMS, "Laplace", "x"]), cell),
       measure=st.one_of(st.sampled_from([*budget.MEASURES, "zCDP (ρ)", "y"]), cell),
       epsilon=cell, delta=cell, rho=cell, sensitivity=cell, query=cell)
def test_check_release_never_raises(mechanism, measure, epsilon, delta, rho, sensitivity, query):
    r = budget.check_release(1, query, mechanism, measure, epsilon, delta, rho, sensitivity)
    assert r.valid == (r.error is None)
    if r.valid:  # whatever got through is a real guarantee
        assert 0 <= r.approx.epsilon < math.inf and 0 <= r.approx.delta < 1
        assert 0 < r.zcdp.rho < math.inf
    budget.plan_totals([r], 1e-6)


def test_values_beyond_the_editor_limits_are_rejected_and_totals_stay_finite():
    huge = budget.check_release(1, "q", "laplace", "pure", 1e150, None, None, 1.0)
    assert not huge.valid and "at most 100" in huge.error
    big = budget.check_release(1, "q", "gaussian", "zcdp", None, 1e-6, 1e3, 1.0)
    assert not big.valid and "at most 100" in big.error
    assert "δ must be" in budget.check_release(1, "q", "laplace", "pure", 1.0, 2.0, None,
                                               1.0).error
    rows = [budget.check_release(i, "q", "bounded_laplace", "approx", 100.0, 0.01, None, 1e9)
            for i in range(1, budget.MAX_PLAN_ROWS + 1)]
    assert all(r.valid for r in rows)
    totals = budget.plan_totals(rows, 0.9)  # Σδ = 0.5 leaves room for δ' = 0.4
    for total in (totals.basic, totals.advanced, totals.zcdp):
        assert math.isfinite(total.epsilon) and total.delta < 1


def test_mechanism_and_measure_given_as_labels_are_understood():
    r = budget.check_release(1, "q", "Laplace", "Pure DP (ε)", 1.0, None, None, 1.0)
    assert r.valid and r.approx.epsilon == 1.0


# --- composition -----------------------------------------------------------------------------


def test_basic_composition_of_a_pure_plan_matches_opendp(dp):
    epsilons = [0.5, 0.25, 1.0, 0.1]
    checked = budget.check_plan(plan(*[(f"q{i}", "laplace", "pure", e, None, None, 1.0)
                                       for i, e in enumerate(epsilons)]))
    composed = dp.c.make_composition([
        dp.c.make_approximate(dp.m.make_laplace(*_domain(dp), scale=1 / e)) for e in epsilons])
    eps, delta = composed.map(1.0)
    totals = budget.plan_totals(checked, 1e-6)
    assert totals.basic.epsilon == pytest.approx(eps, rel=1e-12)
    assert totals.basic.delta == delta == 0.0


def test_advanced_composition_equal_releases_is_the_homogeneous_formula():
    for eps, k, delta_prime in [(0.1, 50, 1e-6), (0.5, 7, 1e-9), (0.01, 1000, 1e-5)]:
        ours = budget.heterogeneous_advanced_composition([eps] * k, [0.0] * k, delta_prime)
        written = eps * math.sqrt(2 * k * math.log(1 / delta_prime)) + k * eps * math.expm1(eps)
        assert ours.epsilon == pytest.approx(written, rel=1e-12)
        assert ours.epsilon == pytest.approx(
            advanced_composition(PureDP(eps), k, delta_prime).epsilon, rel=1e-12)
        assert ours.delta == pytest.approx(delta_prime, rel=1e-12)
    approx = budget.heterogeneous_advanced_composition([0.2, 0.3], [1e-7, 2e-7], 1e-6)
    assert approx.delta == pytest.approx(1.3e-6) and approx.epsilon == pytest.approx(
        drv([0.2, 0.3], 1e-6), rel=1e-12)


MANY_SMALL = [(0.05, 300, 0.02, 100, 1e-6), (0.03, 400, 0.01, 400, 1e-6),
              (0.02, 500, 0.05, 200, 1e-6)]


@pytest.mark.parametrize("eps1, k1, eps2, k2, delta_prime", [
    (0.05, 200, 0.2, 20, 1e-6), (0.01, 300, 0.1, 100, 1e-5), (0.3, 10, 0.02, 250, 1e-8),
    *MANY_SMALL])
def test_heterogeneous_advanced_composition_is_sound(eps1, k1, eps2, k2, delta_prime):
    """The exact privacy curve of the composition never needs more δ than δ' at the bound's ε."""
    epsilons = [eps1] * k1 + [eps2] * k2
    ours = budget.heterogeneous_advanced_composition(epsilons, [0.0] * len(epsilons), delta_prime)
    assert ours.epsilon == pytest.approx(drv(epsilons, delta_prime), rel=1e-12)
    assert optimal_delta_two_sizes(eps1, k1, eps2, k2, ours.epsilon) <= delta_prime


@pytest.mark.parametrize("eps1, k1, eps2, k2, delta_prime", MANY_SMALL)
def test_soundness_check_catches_a_planted_bug(eps1, k1, eps2, k2, delta_prime):
    """Power: with the factor 2 under the root dropped the bound is unsound for many small
    releases, and the exact check sees it (δ needed is 2–3× δ')."""
    e = np.array([eps1] * k1 + [eps2] * k2)
    wrong = math.sqrt(math.log(1 / delta_prime) * np.sum(e**2)) + np.sum(e * np.expm1(e))
    assert optimal_delta_two_sizes(eps1, k1, eps2, k2, wrong) > delta_prime


def test_advanced_needs_room_for_delta_prime():
    checked = budget.check_plan(plan(("g", "gaussian", "approx", 1.0, 1e-5, None, 1.0)))
    totals = budget.plan_totals(checked, 1e-5)
    assert totals.advanced is None and "use up the δ budget" in totals.advanced_problem
    assert totals.basic is not None and totals.zcdp is not None
    assert totals.fits("advanced", 10.0) is None and totals.fits("basic", 1.0)
    assert not totals.fits("basic", 0.99)


def test_empty_plan_has_no_totals():
    totals = budget.plan_totals([], 1e-6)
    assert totals.counted == () and totals.basic is None and totals.zcdp is None


# --- how many releases fit -------------------------------------------------------------------


def expected_most(dp, eps: float, eps_budget: float, delta: float) -> dict[str, int]:
    """The most releases under each rule, by walking k upwards with independent formulas."""
    basic = 0
    while (basic + 1) * eps <= eps_budget * (1 + 1e-12):
        basic += 1
    advanced = 0
    while drv([eps] * (advanced + 1), delta) <= eps_budget:
        advanced += 1

    def zcdp_eps(k: int) -> float:  # ρ = kε²/2 as a Gaussian of scale 1/√(2ρ) at distance 1
        gaussian = dp.m.make_gaussian(*_domain(dp), scale=1 / math.sqrt(k * eps**2))
        return dp.c.make_zCDP_to_approxDP(gaussian).map(1.0).epsilon(delta)

    zcdp = 0
    while zcdp_eps(zcdp + 1) <= eps_budget:
        zcdp += 1
    return {"basic": basic, "advanced": advanced, "zcdp": zcdp}


@pytest.mark.parametrize("eps, eps_budget, delta", [
    (0.1, 5.0, 1e-5), (0.1, 1.0, 1e-6), (0.5, 0.3, 1e-6), (0.05, 2.0, 1e-8), (1.0, 3.0, 1e-3)])
def test_most_releases_and_the_sentence(dp, eps, eps_budget, delta):
    expected = expected_most(dp, eps, eps_budget, delta)
    fit = budget.releases_that_fit(eps, eps_budget, delta)
    assert fit.most == expected
    sentence = budget.most_releases_sentence(fit)

    def words(n: int) -> str:
        return "no release at all" if n == 0 else ("1 release" if n == 1 else f"{n:,} releases")

    assert f"basic composition allows {'at most ' if expected['basic'] else ''}" \
           f"{words(expected['basic'])}" in sentence
    assert f"advanced composition {words(expected['advanced'])}" in sentence
    assert f"zCDP composition {words(expected['zcdp'])}." in sentence
    # the curves the chart draws: basic = kε, and each rule's most-k point is on the chart
    assert np.allclose(fit.totals["basic"], fit.releases * eps)
    for rule, k in expected.items():
        if k:
            assert k in fit.releases
            assert fit.totals[rule][list(fit.releases).index(k)] <= eps_budget
    assert fit.releases.max() > max(expected.values())


def test_default_chart_setting_orders_the_rules():
    fit = budget.releases_that_fit(0.1, 5.0, 1e-5)
    assert fit.most["basic"] == 50 < fit.most["advanced"] < fit.most["zcdp"]
    assert "zCDP composition fits the most" in budget.most_releases_sentence(fit)


def test_many_releases_are_sampled_not_all_drawn():
    fit = budget.releases_that_fit(0.01, 20.0, 1e-6)
    assert fit.most["zcdp"] > 10_000
    assert len(fit.releases) <= budget.CHART_POINTS + 3


# --- the plan in the URL ---------------------------------------------------------------------


def test_plan_round_trips_through_the_url():
    original = budget.default_plan()
    text = budget.plan_to_param(original)
    back = budget.plan_from_param(text)
    pd.testing.assert_frame_equal(back, original)
    assert len(text) < 500


@pytest.mark.parametrize("text", [
    None, "", "not json", "{}", "[]", '[["a","laplace","pure",1]]',
    '[["a","rm -rf","pure",1,null,null,1]]', '[["a","laplace","pure","1",null,null,1]]',
    '[[1,"laplace","pure",1,null,null,1]]', "[" + ",".join(['["a",null,null,1,null,null,1]'] * 51)
    + "]", '[["a","laplace","pure",true,null,null,1]]'])
def test_bad_url_plans_are_ignored(text):
    assert budget.plan_from_param(text) is None


# --- cells a row's measure has no use for ----------------------------------------------------


def test_cells_a_measure_does_not_use_are_cleared():
    edited = plan(
        ("count", "laplace", "pure", 0.5, 1e-6, 0.3, 1.0),        # switched to pure DP
        ("sum", "bounded_laplace", "approx", 0.5, 1e-6, 0.2, 9.0),  # approx: no ρ
        ("mean", "gaussian", "zcdp", 0.5, 1e-6, 0.125, 90.0),       # zCDP: no ε
        ("hist", "geometric", "pure", 0.5, None, None, 1.0),         # nothing to clear
        ("bad", "gaussian", "pure", 1.0, 1e-6, 0.1, 1.0),            # refused, kept as typed
    )
    cleaned, cleared = budget.clear_unused_cells(edited)
    empty = cleaned[[budget.EPSILON, budget.DELTA, budget.RHO]].isna().to_numpy()
    assert empty.tolist() == [[False, True, True], [False, False, True], [True, False, False],
                              [False, True, True], [False, False, False]]
    assert cleared == [
        "Row 1 (count): Pure DP (ε) has no use for δ and ρ, so they were cleared.",
        "Row 2 (sum): Approximate DP (ε, δ) has no use for ρ, so it was cleared.",
        "Row 3 (mean): zCDP (ρ) has no use for ε, so it was cleared.",
    ]
    assert edited.loc[0, budget.DELTA] == 1e-6   # the editor's frame is not changed in place
    # What the row costs does not change: the cleared cells were ignored before.
    before, after = budget.check_plan(edited), budget.check_plan(cleaned)
    assert [(r.approx, r.zcdp, r.error) for r in before] == [
        (r.approx, r.zcdp, r.error) for r in after]
    again, none = budget.clear_unused_cells(cleaned)
    assert none == [] and again.equals(cleaned)


def test_the_example_plan_has_nothing_to_clear():
    cleaned, cleared = budget.clear_unused_cells(budget.default_plan())
    assert cleared == [] and cleaned.equals(budget.default_plan())


@pytest.mark.parametrize("deltas, delta_budget", [
    ((1e-7, 5e-6), 3e-5), ((2e-6, 3e-7), 2e-5), ((2e-6, 5e-6), 1e-4)])
def test_advanced_composition_spends_the_delta_budget_and_no_more(deltas, delta_budget):
    """δ' = δ_budget − Σδᵢ in floats once put the composed δ an ulp over the budget
    (3.0000000000000004e-05 for a budget of 3e-05): "over budget" for a plan that fits, and
    a δ shown rounded up to 3.001e-05."""
    from fractions import Fraction

    rows = [budget.check_release(i + 1, "q", "gaussian", "approx", 0.1, d, None, 1.0)
            for i, d in enumerate(deltas)]
    totals = budget.plan_totals(rows, delta_budget)
    assert Fraction(totals.advanced.delta) <= Fraction(delta_budget)
    assert totals.advanced.delta == pytest.approx(delta_budget, rel=1e-12)
    assert totals.fits("advanced", 100.0)
    # The basic total's δ is never below the exact sum of the rows' δ.
    assert Fraction(totals.basic.delta) >= sum(map(Fraction, deltas))


def test_the_new_kinds_are_counted_by_their_guarantees():
    """Staircase: pure ε, so ρ = ε²/2 and δ = 0. Discrete Gaussian under zCDP: its ρ; at
    (ε, δ): its exact ρ = Δ²/(2σ²), from the σ the (ε, δ) calibration gives."""
    from dpcore.mechanisms.discrete_gaussian import DiscreteGaussian

    stair = budget.check_release(1, "s", "staircase", "approx", 0.8, None, None, 2.0)
    assert stair.valid and stair.approx == ApproxDP(0.8, 0.0)
    assert stair.zcdp.rho == pytest.approx(0.8**2 / 2, rel=1e-15)
    assert "pure ε-DP" in stair.note
    whole = budget.check_release(1, "d", "discrete_gaussian", "zcdp", None, 1e-6, 0.3, 1.0)
    assert whole.valid and whole.zcdp.rho == 0.3 and whole.approx.delta == 1e-6
    at_eps = budget.check_release(1, "d", "discrete_gaussian", "approx", 1.0, 1e-6, None, 2.0)
    sigma = DiscreteGaussian(sensitivity=2, epsilon=1.0, delta=1e-6).scale
    assert at_eps.valid and at_eps.zcdp.rho == pytest.approx(4 / (2 * sigma**2), rel=1e-9)
