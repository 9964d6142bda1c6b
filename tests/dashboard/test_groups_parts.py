"""The Groups page on the release's path (issue 20, "one path").

The page builds its query as the plan query "Add to plan" adds and simulates the parts
``plan.build`` gives the release. For several settings (count, sum, mean; public keys and
partition selection; pure DP and zCDP; one row or a person with max rows and max groups) the
page's scales, thresholds and laws are checked against the parts built from the panel's
query and against closed forms written here; then, at a fixed seed, the page's simulated
noise against the law those parts name (whole numbers where the release draws whole
numbers, the variance of the scale).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dashboard import datasets
from dashboard.analysis import groups as ga
from dashboard.analysis import plan_entries
from dashboard.person import PrivacyUnit
from dpcore.mechanisms import spec_of
from plan import model
from plan.build import build

ADULT = "Adult (UCI census income)"
VISITS = "Clinic visits (synthetic)"
ROW = PrivacyUnit()
PERSON = PrivacyUnit("patient_id", 3, 2)          # r = 3 rows in each of k = 2 groups
M = 50_000.0                                      # max(|0|, |50,000|): the bounds of cost


@pytest.fixture(scope="module")
def loaded():
    return {name: datasets.load_builtin(name) for name in (ADULT, VISITS)}


def spec(by, statistic="count", *, column=None, lower=None, upper=None, public=True,
         noise="laplace", budget=1.0, delta=1e-6, edges=None):
    return ga.GroupsSpec(tuple(by), statistic, column, lower, upper, public, noise, budget,
                         delta, edges)


def page_release(loaded, s, unit, seed=1):
    return ga.groups_release(loaded, loaded.key, s, unit, seed,
                             tuple(ga.declared_keys(loaded, c) for c in s.by))


def panel_built(loaded, s, unit):
    """What Add to plan adds, built as a release builds it."""
    query = plan_entries.groups_query(
        loaded, unit, by=s.by, statistic=s.statistic, column=s.column, lower=s.lower,
        upper=s.upper, public=s.public, noise=s.noise, budget=s.budget, delta=s.delta,
        edges=s.edges, outside=s.outside,
        keys=tuple(ga.declared_keys(loaded, c) for c in s.by))
    return build(query, plan_entries.plan_unit(unit))


def law(part) -> str:
    mechanism = part.mechanism
    return mechanism.noise if hasattr(mechanism, "threshold") else spec_of(mechanism).kind


# (dataset, spec, unit, closed forms: part name -> (law, scale), threshold closed form)
SQ2 = math.sqrt(2.0)
CASES = {
    "count, public, pure": (
        ADULT, spec(["race"], budget=1.0), ROW, {"value": ("laplace", 1.0)}, None),
    "histogram in bins, pure": (
        ADULT, spec(["age"], budget=0.5, edges=(20.0, 40.0, 60.0)), ROW,
        {"value": ("laplace", 2.0)}, None),
    "table of two columns, zCDP": (
        ADULT, spec(["sex", "race"], noise="gaussian", budget=0.5), ROW,
        {"value": ("gaussian", 1.0)}, None),                       # σ = 1/√(2ρ)
    "count, found privately, zCDP": (
        ADULT, spec(["occupation"], public=False, noise="gaussian", budget=0.5, delta=1e-5),
        ROW, {"groups": ("gaussian", 1.0)}, 1.0 + stats.norm.isf(1e-5)),
    "count, found privately, person, pure": (
        VISITS, spec(["diagnosis"], public=False, budget=0.8), PERSON,
        {"groups": ("laplace", 2 * 3 / 0.8)},                       # b = k·r/ε
        3 + 2 * 3 / 0.8 * math.log(2 / (2 * 1e-6))),                # T = r + b·ln(k/(2δ))
    "sum, public, person, pure": (
        VISITS, spec(["age_band"], "sum", column="cost", lower=0.0, upper=M, budget=1.0),
        PERSON, {"sum": ("laplace", 2 * 3 * M / 1.0)}, None),       # k·r·M on ε
    "mean, public, person, zCDP": (
        VISITS, spec(["age_band"], "mean", column="cost", lower=0.0, upper=M,
                     noise="gaussian", budget=0.5), PERSON,
        {"sum": ("gaussian", SQ2 * 3 * M / math.sqrt(2 * 0.25)),     # √k·r·M, ρ/2 each
         "count": ("gaussian", SQ2 * 3 / math.sqrt(2 * 0.25))}, None),
    "sum, found privately, person, zCDP": (
        VISITS, spec(["diagnosis"], "sum", column="cost", lower=0.0, upper=M, public=False,
                     noise="gaussian", budget=0.5, delta=1e-5), PERSON,
        {"groups": ("gaussian", SQ2 * 3 / math.sqrt(2 * 0.25)),
         "sum": ("gaussian", SQ2 * 3 * M / math.sqrt(2 * 0.25))},
        3 + SQ2 * 3 / math.sqrt(0.5) * stats.norm.isf(1e-5 / 2)),   # r + σ·Φ⁻¹(1 − δ/k)
    "mean, found privately, person, pure": (
        VISITS, spec(["diagnosis"], "mean", column="cost", lower=0.0, upper=M, public=False,
                     budget=2.0), PERSON,
        {"groups": ("laplace", 6 / 1.0), "sum": ("laplace", 6 * M / 0.5),
         "count": ("laplace", 6 / 0.5)},                              # ε/2, then ε/4 each
        3 + 6.0 * math.log(2 / (2 * 1e-6))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_page_simulates_the_parts_the_release_draws(loaded, case):
    name, s, unit, closed, threshold = CASES[case]
    data = loaded[name]
    release = page_release(data, s, unit)
    panel = panel_built(data, s, unit)
    page_parts = {p.name: p for p in release.built.parts}
    assert list(page_parts) == [p.name for p in panel.parts] == list(closed)
    for part in panel.parts:
        mine = page_parts[part.name]
        assert law(mine) == law(part) == closed[part.name][0]
        assert mine.scale == part.scale
        # the plan rounds so that the privacy spent never exceeds the budget
        assert mine.scale == pytest.approx(closed[part.name][1], rel=1e-9)
        assert mine.loss == part.loss
    if threshold is None:
        assert release.threshold is None and release.delta == 0.0
        assert release.kept.all() and release.keep_chance is None
    else:
        assert release.threshold == panel.parts[0].mechanism.threshold
        # raised above the closed form only by the margin for OpenDP's rounding
        assert threshold <= release.threshold <= threshold * (1 + 2.0**-20)
        assert 0 < release.delta <= s.delta
        np.testing.assert_array_equal(release.kept, release.gate_counts >= release.threshold)
    # each noisy column holds what its part drew, nothing else
    table = ga.group_table(release, s)
    assert ("Noisy count" in table) == ("count" in closed or "value" in closed
                                        or "groups" in closed)
    assert ("Noisy sum" in table) == ("sum" in closed)


def test_a_mean_is_its_parts_combined_as_the_release_combines_them(loaded):
    """The noisy count floored at 1, the ratio clamped to the bounds (the kind's
    post-processing): the page kept NaN for a noisy count at or below 0 and divided by a
    noisy count below 1."""
    data = loaded[VISITS]
    s = spec(["diagnosis"], "mean", column="cost", lower=0.0, upper=M, budget=0.05)
    built = page_release(data, s, ROW).built
    counts = np.tile([0.0, 1.0, 2.0, 40.0], 500)
    totals = counts * 1000.0
    labels = tuple(str(i) for i in range(counts.size))
    release = ga._released(labels, counts, totals, s, built, data.key, data.relation, 5)
    assert (release.noisy_counts < 1).any()
    expected = np.clip(release.noisy_totals / np.maximum(release.noisy_counts, 1.0), 0.0, M)
    np.testing.assert_array_equal(release.noisy_means, expected)
    table = ga.group_table(release, s)
    np.testing.assert_array_equal(table["Noisy mean (clamped to the bounds)"], expected)
    assert not table["Noisy mean (clamped to the bounds)"].isna().any()


def _noise_of(release, counts):
    return np.asarray(release.released_counts, dtype=np.float64) - counts


def _whole_laplace_variance(b: float) -> float:
    """Var of the discrete Laplace P(z) ∝ e^{−|z|/b}: 2e^{−1/b}/(1 − e^{−1/b})²."""
    q = math.exp(-1.0 / b)
    return 2 * q / (1 - q) ** 2


def _draw(loaded, query, n=200_000, count=500.0, seed=11):
    data = loaded[ADULT]
    built = build(query, model.PrivacyUnit())
    counts = np.full(n, count)
    s = spec(["race"], public=query.threshold is None)
    release = ga._released(tuple(map(str, range(n))), counts, None, s, built, data.key,
                           data.relation, seed)
    return release, _noise_of(release, counts)


def _count_by_race(noise, *, keys=True, threshold=None):
    values = model.Categories(("a", "b")) if keys else None
    return model.PlanQuery("q", "count", model.GroupBy("race", "count", keys=values), noise,
                           "groups", threshold)


def test_the_pages_noise_has_the_law_of_the_release(loaded):
    """Laplace on the counts (float noise, as OpenDP's make_laplace on floats): variance
    2b², and Kolmogorov–Smirnov against Laplace(b); Gaussian on the threshold: variance σ²."""
    release, noise = _draw(loaded, _count_by_race(model.Noise("laplace", "pure", epsilon=0.5)))
    b = release.count_scale
    assert b == pytest.approx(2.0)
    assert noise.var() == pytest.approx(2 * b * b, rel=0.02)
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > 1e-3
    release, noise = _draw(loaded, _count_by_race(
        None, keys=False, threshold=model.Threshold("gaussian", 1e-6, rho=0.125)))
    assert release.count_scale == pytest.approx(2.0)            # σ = 1/√(2ρ)
    assert noise.var() == pytest.approx(4.0, rel=0.02)
    assert stats.kstest(noise, stats.norm(scale=2.0).cdf).pvalue > 1e-3
    np.testing.assert_array_equal(release.kept, release.gate_counts >= release.threshold)


def test_whole_number_noise_where_the_release_draws_whole_numbers(loaded):
    """A part the release draws on integers (the catalogue's discrete Laplace on counts,
    partition selection's discrete Laplace threshold) is simulated with whole-number noise
    of the same variance."""
    b = 1 / 0.4
    release, noise = _draw(loaded, _count_by_race(model.Noise("geometric", "pure",
                                                              epsilon=0.4)))
    assert release.parts.counts.integer and release.count_scale == pytest.approx(b)
    np.testing.assert_array_equal(noise, np.round(noise))
    assert noise.var() == pytest.approx(_whole_laplace_variance(b), rel=0.02)
    release, noise = _draw(loaded, _count_by_race(
        None, keys=False, threshold=model.Threshold("discrete_laplace", 1e-6, epsilon=0.4)))
    assert release.parts.gate.noise == "discrete_laplace"
    np.testing.assert_array_equal(noise, np.round(noise))
    assert noise.var() == pytest.approx(_whole_laplace_variance(b), rel=0.02)
    assert float(release.threshold).is_integer()
    np.testing.assert_array_equal(release.kept, release.gate_counts >= release.threshold)
    # the chart's ±α for whole-number noise: the smallest whole α with P(|Z| > α) <= 5%
    alpha = ga.chart_values(release, spec(["race"], public=False)).alpha
    law = stats.dlaplace(1 / b)
    assert alpha.is_integer() and 2 * law.sf(alpha) <= 0.05 < 2 * law.sf(alpha - 1)


def test_a_query_a_release_cannot_draw_is_refused_with_the_plans_reason(loaded):
    """Two columns found privately are no query of the plan: the page says so."""
    s = spec(["sex", "race"], public=False)
    with pytest.raises(ValueError, match="declare both columns' categories"):
        ga.page_built(loaded[ADULT], s, ROW)


def test_the_privacy_sentence_escapes_the_person_column(loaded):
    """The unit's words carry a column name from the user's file: escaped for markdown."""
    s = spec(["diagnosis"], public=False)
    release = page_release(loaded[VISITS], s, PERSON)
    said = ga.privacy_sentence(release, s, PrivacyUnit("*pid*_[x](y)", 3, 2))
    assert "\\*pid\\*\\_\\[x\\]\\(y\\)" in said and "*pid*" not in said


# -- intervals for each group's true value (issue 22) --------------------------------------------

Z975 = stats.norm.isf(0.025)      # Gaussian, 5 % two-sided
Z9875 = stats.norm.isf(0.0125)    # Gaussian, each of a mean's two parts at 2.5 %


def _ratio_closed_form(noisy_sum, noisy_count, sum_half, count_half, lower, upper):
    """A mean's interval: the sum within ±sum_half, the count within ±count_half (at least
    1), the ratio's corners, clipped to the bounds."""
    s_low, s_high = noisy_sum - sum_half, noisy_sum + sum_half
    c_low = np.maximum(noisy_count - count_half, 1.0)
    c_high = np.maximum(noisy_count + count_half, c_low)
    low = np.minimum(s_low / c_low, s_low / c_high)
    high = np.maximum(s_high / c_low, s_high / c_high)
    return np.clip(low, lower, upper), np.clip(high, lower, upper)


def _closed_interval(case, release):
    """The interval closed form for each case, from the scales of ``CASES`` (not the page's)."""
    closed = CASES[case][3]
    if case.startswith("mean"):
        z = Z9875 if "zCDP" in case else math.log(1 / 0.025)   # Laplace: b·ln(1/(α/2))
        return _ratio_closed_form(release.noisy_totals, release.noisy_counts,
                                  closed["sum"][1] * z, closed["count"][1] * z, 0.0, M)
    z = Z975 if "zCDP" in case else math.log(20)
    if case.startswith("sum"):
        half, values = closed["sum"][1] * z, release.noisy_totals
    elif "privately" in case:
        half, values = closed["groups"][1] * z, release.gate_counts
    else:
        half, values = closed["value"][1] * z, release.noisy_counts
    return values - half, values + half


@pytest.mark.parametrize("case", list(CASES))
def test_each_groups_interval_is_its_closed_form(loaded, case):
    """Per group at 95 %: noisy ± b·ln 20 (Laplace) or ± σ·Φ⁻¹(0.975) (Gaussian) around the
    released value (a count found privately: the threshold's own noisy count); a mean from
    its noisy sum and count at 2.5 % each; a dropped group has none."""
    name, s, unit, _, _ = CASES[case]
    release = page_release(loaded[name], s, unit)
    low, high = ga.group_intervals(release)
    want_low, want_high = _closed_interval(case, release)
    kept = release.kept
    np.testing.assert_allclose(low[kept], want_low[kept], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(high[kept], want_high[kept], rtol=1e-9, atol=1e-9)
    assert np.isnan(low[~kept]).all() and np.isnan(high[~kept]).all()
    table = ga.group_table(release, s)
    np.testing.assert_array_equal(table["Lower 95%"], low)
    np.testing.assert_array_equal(table["Upper 95%"], high)
    caption = ga.interval_caption(release)
    assert ("given that the group was kept" in caption) == (case.startswith("count, found"))
    assert ("noisy sum and noisy count" in caption) == case.startswith("mean")


@pytest.mark.parametrize("case", ["count, public, pure", "count, found privately, zCDP",
                                  "mean, public, person, zCDP"])
def test_group_intervals_cover_over_fixed_seed_releases(loaded, case):
    """20,000 groups of the same true size drawn as the page draws them (each its own noise,
    the parts the page built): a count's interval covers 95 % of them (for groups far above
    the threshold, kept whatever the noise), a mean's at least 95 % (conservative)."""
    name, s, unit, _, _ = CASES[case]
    data = loaded[name]
    built = page_release(data, s, unit).built
    n = 20_000
    counts = np.full(n, 400.0)
    totals = None if s.statistic == "count" else counts * 0.3 * M   # mean 0.3·M
    release = ga._released(tuple(map(str, range(n))), counts, totals, s, built, data.key,
                           data.relation, 2026)
    assert release.kept.all()
    low, high = ga.group_intervals(release)
    truth = counts if totals is None else totals / counts
    covered = float(np.mean((low <= truth) & (truth <= high)))
    se = math.sqrt(0.95 * 0.05 / n)
    if s.statistic == "count":
        assert abs(covered - 0.95) < 4 * se
    else:
        assert covered >= 0.95 - 4 * se
