"""The Quantiles page on the release's path (issue 20, "one path").

The page builds its query as the plan query "Add to plan" adds and simulates the parts
``plan.build`` gives the release. For several settings (one level or three; pure DP and zCDP,
each noise; one row or a person with max rows; a typed and an even grid) the page's
mechanisms, scales and candidates are checked against the parts built from the panel's query
and against the closed forms written here (Δ = r·max(q, 1 − q), b = 2Δ/ε, 2Δ/√(8ρ) or
2Δ/√(2ρ)); the page's simulated picks at a fixed seed against the law written here (softmax of
−err/b for Gumbel noise, permute-and-flip's integral for exponential noise) on rank errors
counted here; every figure the page says about accuracy against a simulation of the release's
part written here.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dashboard import datasets
from dashboard.analysis import plan_entries
from dashboard.analysis import quantiles as qa
from dashboard.person import PrivacyUnit
from plan.build import build

ONE_ROW = PrivacyUnit()
UNITS = {"one row": (ONE_ROW, 1), "3 rows per person": (PrivacyUnit("pid", 3), 3),
         "2 rows per person": (PrivacyUnit("pid", 2), 2)}
TYPED = (0.0, 4.0, 8.0, 10.0, 12.0, 16.0, 20.0)
EVEN = tuple(np.linspace(0.0, 20.0, 11).tolist())
SIGNIFICANCE = 1e-6


def rows() -> pd.DataFrame:
    """360 rows from 120 people (3 rows each), whole numbers 0..20 with ties at the
    candidates, and a few missing values."""
    rng = np.random.default_rng(20)
    pid = np.repeat(np.arange(120), 3)
    x = rng.integers(0, 21, pid.size).astype(float)
    x[rng.choice(pid.size, 12, replace=False)] = np.nan
    return pd.DataFrame({"pid": pid, "x": x})


@pytest.fixture(scope="module")
def loaded():
    return datasets.load_upload(rows().to_csv(index=False).encode(), "scores.csv")


@pytest.fixture(scope="module")
def values():
    return rows()["x"].to_numpy(dtype=float)


def settings(levels, grid, noise, measure, budget):
    return dict(column="x", levels=tuple(levels), grid=tuple(grid), noise=noise,
                measure=measure, budget=budget, from_data=False)


def page(loaded, unit, s, *, alpha=2.0, seed=3):
    query = qa.page_query(unit, **s)
    return query, qa.quantile_release(loaded.relation, loaded.key, query, unit, alpha, seed)


def panel_parts(unit, s):
    """What Add to plan adds, built as a release builds it."""
    query = plan_entries.quantiles_query(unit, **s)
    return query, build(query, plan_entries.plan_unit(unit))


def closed_scale(q, r, noise, measure, share):
    delta = r * max(q, 1 - q)
    if measure == "pure":
        return 2 * delta / share
    return 2 * delta / math.sqrt((8 if noise == "gumbel" else 2) * share)


def rank_errors(values, grid, q):
    """OpenDP's score over its denominator, counted here: |(1 − q)·#{x < c} − q·#{x > c}|,
    missing values not counted, values equal to c on neither side."""
    present = values[~np.isnan(values)]
    c = np.asarray(grid, dtype=float)[:, None]
    return np.abs((1 - q) * (present < c).sum(axis=1) - q * (present > c).sum(axis=1))


def closed_law(errors, b, noise):
    """Gumbel noise: softmax(−err/b). Exponential noise (permute-and-flip):
    P(c) = p_c ∫₀¹ Π_{j≠c} (1 − p_j t) dt, p_j = exp(−(err_j − min err)/b), integrated
    exactly as a polynomial (a loop over the few candidates)."""
    p = np.exp(-(errors - errors.min()) / b)
    if noise == "gumbel":
        return p / p.sum()
    out = []
    for i in range(p.size):
        poly = np.polynomial.Polynomial([1.0])
        for j in range(p.size):
            if j != i:
                poly = poly * np.polynomial.Polynomial([1.0, -p[j]])
        integral = poly.integ()
        out.append(p[i] * (integral(1.0) - integral(0.0)))
    return np.array(out)


def release_draws(errors, b, noise, trials, seed):
    """The release's part simulated here: noise of scale b added to −err, the largest taken
    (Gumbel: the exponential mechanism; exponential: permute-and-flip)."""
    rng = np.random.default_rng(seed)
    size = (trials, errors.size)
    noise_draws = rng.gumbel(size=size) if noise == "gumbel" else rng.exponential(size=size)
    return np.argmax(-errors + b * noise_draws, axis=1)


def chi_square_p(picks, law):
    """p-value of the picks against the law, cells of expected count below 5 merged."""
    expected = law * picks.sum()
    big = expected >= 5
    observed = np.append(picks[big], picks[~big].sum())
    wanted = np.append(expected[big], expected[~big].sum())
    keep = wanted > 0
    return stats.chisquare(observed[keep], wanted[keep] * observed.sum() / wanted[keep].sum()
                           ).pvalue


CASES = {
    "median, pure, exponential, typed": ((0.5,), TYPED, "exponential", "pure", 0.05),
    "median, pure, gumbel (not releasable), even": ((0.5,), EVEN, "gumbel", "pure", 0.05),
    "three levels, zCDP, gumbel, typed": ((0.25, 0.5, 0.9), TYPED, "gumbel", "zcdp", 0.002),
    "three levels, zCDP, exponential, even": ((0.1, 0.5, 0.75), EVEN, "exponential", "zcdp",
                                              0.002),
    "three levels, pure, exponential, even": ((0.25, 0.5, 0.75), EVEN, "exponential", "pure",
                                              0.3),
}


@pytest.mark.parametrize("unit_name", list(UNITS))
@pytest.mark.parametrize("case", list(CASES))
def test_the_pages_parts_are_the_parts_plan_build_gives_the_release(loaded, unit_name, case):
    unit, r = UNITS[unit_name]
    levels, grid, noise, measure, budget = CASES[case]
    s = settings(levels, grid, noise, measure, budget)
    query, release = page(loaded, unit, s)
    panel_query, built = panel_parts(unit, s)
    assert query == panel_query
    np.testing.assert_array_equal(release.grid, built.query.query.candidates.values)
    np.testing.assert_array_equal(release.grid, grid)
    assert len(release.results) == len(built.parts) == len(levels)
    for result, part, q in zip(release.results, built.parts, levels, strict=True):
        assert result.q == part.quantile == q
        assert result.mechanism == part.mechanism
        assert (result.mechanism.noise, result.mechanism.measure) == (noise, measure)
        assert result.mechanism.negate and not result.mechanism.monotonic
        assert result.sensitivity == pytest.approx(r * max(q, 1 - q), rel=1e-12)
        share = budget / len(levels)
        assert result.budget == pytest.approx(share, rel=1e-12) and result.budget <= share
        assert result.scale == pytest.approx(closed_scale(q, r, noise, measure, share),
                                             rel=1e-12)
    assert release.max_rows == r and release.budget == budget


@pytest.mark.parametrize("noise, measure, budget", [("gumbel", "zcdp", 0.002),
                                                    ("exponential", "pure", 0.06)])
@pytest.mark.parametrize("unit_name", ["one row", "3 rows per person"])
def test_the_pages_simulated_picks_follow_the_law_the_release_draws(loaded, values, noise,
                                                                    measure, budget,
                                                                    unit_name):
    """3 rows per person and everyone has 3: nothing is dropped, only Δ triples. 20,000
    draws of the page's sampler at a fixed seed against the law written here; the same
    draws reject the law at twice the scale (the test has the power to see a wrong b)."""
    unit, r = UNITS[unit_name]
    levels = (0.25, 0.5)
    s = settings(levels, TYPED, noise, measure, budget)
    query, release = page(loaded, unit, s)
    built = qa.page_built(query, unit)
    below, equal, total = qa.rank_cells(loaded.relation, built, qa.contribution(unit, 3))
    assert total == int(np.sum(~np.isnan(values)))
    rng = np.random.default_rng(5)
    for level, result, q in zip(qa.level_scores(built, below, equal, total), release.results,
                                levels, strict=True):
        errors = rank_errors(values, TYPED, q)
        np.testing.assert_allclose(level.errors, errors, rtol=1e-12)
        b = closed_scale(q, r, noise, measure, budget / len(levels))
        law = closed_law(errors, b, noise)
        assert 0.05 < law.max() < 0.95          # a spread-out law: the check can fail
        np.testing.assert_allclose(result.probabilities, law, rtol=1e-9, atol=1e-15)
        picks = np.bincount(level.draw(rng=rng, trials=20_000), minlength=len(TYPED))
        assert chi_square_p(picks, law) > SIGNIFICANCE
        assert chi_square_p(picks, closed_law(errors, 2 * b, noise)) < SIGNIFICANCE


def number(text: str) -> float:
    return float(text.replace(",", "").rstrip("%↑"))


@pytest.mark.parametrize("noise, measure, budget", [("gumbel", "zcdp", 0.002),
                                                    ("exponential", "pure", 0.06)])
@pytest.mark.parametrize("unit_name", ["one row", "3 rows per person"])
def test_every_accuracy_figure_the_page_says_matches_a_simulated_release(
        loaded, values, noise, measure, budget, unit_name):
    """The sentence and the table (expected rank error, P(|released − true| ≤ α), the true
    quantile, n, the best candidate, this release's rank error), the sensitivities, the
    budget share and the scales the page says, against 40,000 draws of the release's part
    simulated here (its scale from the panel's built part), within 5 standard errors and the
    rounding."""
    unit, r = UNITS[unit_name]
    levels, alpha = (0.5, 0.25), 2.0
    s = settings(levels, TYPED, noise, measure, budget)
    _, release = page(loaded, unit, s, alpha=alpha)
    _, built = panel_parts(unit, s)
    present = values[~np.isnan(values)]
    table = qa.results_table(release)
    trials = 40_000
    for i, (q, part) in enumerate(zip(levels, built.parts, strict=True)):
        errors = rank_errors(values, TYPED, q)
        picks = release_draws(errors, part.mechanism.scale, noise, trials, seed=100 + i)
        truth = float(np.quantile(present, q, method="inverted_cdf"))
        rank = errors[picks]
        within = np.abs(np.asarray(TYPED)[picks] - truth) <= alpha
        row = table.iloc[i]
        said_rank = number(row["Expected rank error"])
        said_within = number(row[f"P(|released − true| ≤ {alpha:g})"]) / 100
        assert abs(said_rank - rank.mean()) <= 5 * rank.std() / math.sqrt(trials) + 1e-3 * (
            said_rank)
        assert abs(said_within - within.mean()) <= 5 * within.std() / math.sqrt(trials) + 1e-3
        assert number(row["True quantile"]) == truth
        released = number(row["Simulated release"])
        assert number(row["Rank error of this release"]) == pytest.approx(
            errors[TYPED.index(released)], rel=1e-12)
        if i == 0:   # the sentence reads the first level
            said = qa.accuracy_sentence(release, "x")
            found = re.search(r"is ([0-9.,]+) ranks away from the true one on average \(of "
                              r"([0-9,]+) values; the best candidate of the grid is ([0-9.,]+) "
                              r"ranks away\); it lands within ±([0-9.]+) of the true value "
                              r"([0-9.,]+) with probability ([0-9.]+%)", said)
            assert found, said
            assert number(found[1]) == said_rank and number(found[6]) / 100 == said_within
            assert int(number(found[2])) == present.size
            assert number(found[3]) == pytest.approx(errors.min(), rel=1e-12)
            assert number(found[4]) == alpha and number(found[5]) == truth
    sens = qa.sensitivity_sentence(release, unit)
    for q, part in zip(levels, built.parts, strict=True):
        assert f"{qa.level_name(q)} Δ = {r * max(q, 1 - q):g}" in sens
        b = re.search(rf"{re.escape(qa.level_name(q))} b = ([0-9.]+)",
                      qa.distribution_note(release))[1]
        assert float(b) == pytest.approx(part.mechanism.scale, rel=1e-3)
    share = re.search(r"each is released with [ερ] = ([0-9.↑]+)", qa.budget_sentence(release))
    assert number(share[1]) == pytest.approx(budget / 2, rel=1e-3)


def test_settings_the_plan_refuses_are_an_error_with_its_reason(loaded):
    """One candidate: the page computed a law of one point where the plan (and so a release)
    refuses the grid."""
    with pytest.raises(ValueError, match=r"a release cannot draw these settings: the plan's "
                                         r"query\.candidates\.values must hold at least 2"):
        qa.page_query(ONE_ROW, **settings((0.5,), (10.0,), "exponential", "pure", 1.0))


def test_a_setting_no_release_draws_is_said_to_be_so(loaded):
    """Gumbel noise under pure DP: the plan builds it, OpenDP certifies it under zCDP only.
    The page still shows its law, as teaching, and says so; the releasable ones say nothing."""
    gumbel = qa.page_query(ONE_ROW, **settings((0.5,), TYPED, "gumbel", "pure", 1.0))
    reason = qa.release_refusal(gumbel, ONE_ROW)
    assert reason is not None and "zCDP" in reason
    assert qa.teaching_note(reason).startswith("**Not releasable as set:**")
    for noise, measure, budget in (("exponential", "pure", 1.0), ("gumbel", "zcdp", 0.125),
                                   ("exponential", "zcdp", 0.125)):
        query = qa.page_query(ONE_ROW, **settings((0.5,), TYPED, noise, measure, budget))
        assert qa.release_refusal(query, ONE_ROW) is None


@pytest.mark.parametrize("noise, measure, budget", [("gumbel", "zcdp", 0.002),
                                                    ("exponential", "pure", 0.06),
                                                    ("exponential", "zcdp", 0.002)])
@pytest.mark.parametrize("unit_name", ["one row", "3 rows per person"])
def test_each_levels_rank_bound_is_the_closed_form_and_holds(loaded, noise, measure, budget,
                                                             unit_name):
    """Issue 22: next to each simulated release, E with P(released rank error > best + E)
    ≤ 5 %: the union bound over the m − 1 other candidates on the law of the difference of
    two noises of scale b (rows), (m − 1)·P(Z − Z' > E/b) = α — Gumbel: logistic,
    E = b·ln((m − 1)/α − 1); exponential: Laplace, E = b·ln((m − 1)/(2α)). Over 20,000
    fixed-seed draws of the page's sampler the excess passes E at most 5 % of the time (the
    union bound is conservative: a wrong scale, E in OpenDP's score units, den times the
    rows', is caught by the closed form, not by the coverage)."""
    unit, r = UNITS[unit_name]
    levels, m, trials = (0.25, 0.5), len(EVEN), 20_000
    s = settings(levels, EVEN, noise, measure, budget)
    query, release = page(loaded, unit, s)
    built = qa.page_built(query, unit)
    below, equal, total = qa.rank_cells(loaded.relation, built, qa.contribution(unit, 3))
    rng = np.random.default_rng(22)
    table = qa.results_table(release)
    said = qa.rank_bound_sentence(release)
    for i, (level, result, q) in enumerate(zip(qa.level_scores(built, below, equal, total),
                                               release.results, levels, strict=True)):
        b = closed_scale(q, r, noise, measure, budget / len(levels))
        want = b * (math.log((m - 1) / 0.05 - 1) if noise == "gumbel"
                    else math.log((m - 1) / (2 * 0.05)))
        assert result.excess_bound == pytest.approx(want, rel=1e-9)
        excess = level.errors[level.draw(rng=rng, trials=trials)] - level.errors.min()
        assert excess.max() > 0   # the noise moves the pick: the check can fail
        margin = 4 * math.sqrt(0.05 * 0.95 / trials)
        assert np.mean(excess > result.excess_bound) <= 0.05 + margin
        shown = table.iloc[i]["Rank error above the best's, at most (95 %)"]
        assert want <= number(shown) <= want * (1 + 1e-3)
        assert (f"the released {qa.level_name(q)}'s rank error is at most {shown} rows "
                "more than the best grid value's") in said
    assert said.startswith("With 95 %, ")
