"""Tests of the selection page's pure logic: score parsing, pricing, exact vs simulated picks.

Expected values are closed forms or hand computations written here, never the module's output.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from dashboard.analysis import selection_choices
from dashboard.analysis.selection_choices import DEFAULT_LEVEL, EPSILON_GRID, RHO_GRID, fmt_share
from dashboard.analysis.selection_maths import (
    CURVE_MAX_POINTS,
    MAX_DRAWS,
    TOP_K_CURVE_POINTS,
    CorrectnessCurves,
    binomial_half_width,
    compute_curves,
    curve_levels,
    level_reaching,
    p_correct_curve,
    simulate_picks,
    simulated_trials,
    summarise_selection,
)
from dashboard.analysis.selection_pricing import (
    SIMULATED_BIDS,
    parse_bids,
    price_grid,
    revenue_curve,
    simulated_bids,
)
from dashboard.analysis.selection_privacy import (
    noise_scale,
    privacy_map_text,
    privacy_of,
    teaching_mechanism,
)
from dashboard.analysis.selection_scores import (
    MAX_CANDIDATES,
    MAX_SCORE,
    category_counts,
    numbered_labels,
    parse_numbers,
    parse_score_file,
)
from dashboard.analysis.selection_wording import curve_caption, pick_sentence
from dashboard.number_text import up
from dpcore.measures import ZCDP, PureDP
from dpcore.selection import NOISE_TYPES

NOISES = ("laplace", "exponential", "gumbel")


def _summarise(scores, labels, *, sensitivity, noise, measure, level, monotonic, negate, k,
               trials, seed):
    """The page's summary for scores typed in at these settings."""
    mechanism = teaching_mechanism(noise=noise, measure=measure, level=level,
                                   sensitivity=sensitivity, monotonic=monotonic, k=k,
                                   negate=negate)
    return summarise_selection(scores, labels, mechanism=mechanism, level=level,
                               trials=trials, seed=seed)


# ---------------------------------------------------------------------------------------------
# Reading scores


def test_parse_numbers_reads_comma_separated_scores():
    np.testing.assert_array_equal(parse_numbers("0, 2, 4, 6"), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(parse_numbers("0,2,4,6"), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(parse_numbers(" -1.5, 3e2 , 7,"), [-1.5, 300.0, 7.0])


@pytest.mark.parametrize("text, expected", [
    ("1,5; 2,5; 3,5", [1.5, 2.5, 3.5]),           # issue 9: was read as 6 candidates
    (" -1,5;3e2 ; 7;", [-1.5, 300.0, 7.0]),
    ("1.234,5; 0,25; 2", [1234.5, 0.25, 2.0]),     # a thousands point, as the uploader reads
    ("1.5; 2.5", [1.5, 2.5]),                      # points still work between semicolons
])
def test_parse_numbers_reads_decimal_commas_between_semicolons(text, expected):
    np.testing.assert_array_equal(parse_numbers(text), expected)


@pytest.mark.parametrize("text", ["1,5, 2,5, 3,5", "0,5, 1"])
def test_parse_numbers_refuses_commas_that_may_be_decimal_commas(text):
    with pytest.raises(ValueError, match=r"decimal commas.*semicolons.*1,5; 2,5; 3,5"):
        parse_numbers(text)


@pytest.mark.parametrize("text, which", [
    ("1e308, 0, 1", "'1e308' (number 1)"), ("0; -1e308", "'-1e308' (number 2)"),
    ("0, 1000000000000001", "'1000000000000001' (number 2)"),
])
def test_parse_numbers_refuses_scores_too_large_naming_them(text, which):
    """±1e308 overflowed inside the selection, whose message blamed "the settings"."""
    with pytest.raises(ValueError, match=re.escape(f"the score {which} is too large")) as raised:
        parse_numbers(text)
    assert "Divide every score and the sensitivity by the same number" in str(raised.value)
    assert parse_numbers(f"0, {MAX_SCORE:.0f}")[1] == MAX_SCORE   # the limit holds


@pytest.mark.slow
def test_scores_at_the_limit_work_for_every_noise_and_measure():
    """The largest scores allowed go through the page's computations without overflow."""
    import warnings

    scores = (MAX_SCORE, 0.0, -MAX_SCORE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # an overflow warning fails the test
        for noise, measure, sensitivity in (("laplace", "pure", 1e-6), ("gumbel", "zcdp", 1e9),
                                            ("exponential", "pure", 1.0)):
            summary = _summarise(
                scores, numbered_labels(3), sensitivity=sensitivity, noise=noise,
                measure=measure, level=DEFAULT_LEVEL[measure], monotonic=False,
                negate=False, k=1, trials=1000, seed=1)
            curves = compute_curves(scores, measure=measure, sensitivity=sensitivity,
                                    monotonic=False, negate=False, k=1, seed=1)
            assert 0 <= summary.p_correct <= 1
            assert all(np.all(np.isfinite(c)) for c in curves.p_correct.values())


def test_bids_may_be_large():
    np.testing.assert_array_equal(parse_bids("1e308, 2"), [1e308, 2.0])


@pytest.mark.parametrize("text, message", [
    ("a, b", "'a' is not a number"),
    ("1 2 3", "'1 2 3' is not a number"),
    ("1, nan", "not a finite number"),
    ("1, 1e400", "not a finite number"),
    ("5", "^1 score given: type at least 2"),
    ("", "0 scores given"),
    (", ".join(["1"] * (MAX_CANDIDATES + 1)), f"more than the {MAX_CANDIDATES}"),
])
def test_parse_numbers_rejects_bad_text_with_a_clear_message(text, message):
    with pytest.raises(ValueError, match=message):
        parse_numbers(text)


def test_parse_numbers_rejects_non_text():
    with pytest.raises(TypeError):
        parse_numbers(None)  # type: ignore[arg-type]


def test_score_file_with_header_and_labels():
    labels, scores = parse_score_file(b"name,score\nalpha,3\nbeta,1.5\n\n,2\nalpha,4\n")
    np.testing.assert_array_equal(scores, [3.0, 1.5, 2.0, 4.0])
    # A missing or repeated label becomes the candidate's number.
    assert labels == ("alpha", "beta", "#3", "#4")


def test_score_file_of_bare_numbers_with_semicolons_or_one_column():
    labels, scores = parse_score_file("\ufeff1\n2\n3\n".encode())
    np.testing.assert_array_equal(scores, [1.0, 2.0, 3.0])
    assert labels == ("#1", "#2", "#3")
    _, scores = parse_score_file(b"a;1\nb;2\n")
    np.testing.assert_array_equal(scores, [1.0, 2.0])
    _, scores = parse_score_file(b"a;1,5\nb;2,5\n")   # decimal commas, as the uploader
    np.testing.assert_array_equal(scores, [1.5, 2.5])


@pytest.mark.parametrize("data, message", [
    (b"1\nx\n", "line 2 .* not a number"),
    (b"1,2,3\n", "3 fields"),
    (b"only\n5\n", r"holds 1 score\(s\)"),
    (b"\xff\xfe\x00", "not UTF-8"),
    (b"1\n" * 60_000, "keep it under"),
    (b"1\n-1e308\n", "score on line 2 of the score file is too large"),
])
def test_score_file_errors_name_the_problem(data, message):
    with pytest.raises(ValueError, match=message):
        parse_score_file(data)


def test_category_counts_cover_declared_categories_most_common_first():
    import pandas as pd

    frame = pd.DataFrame({"c": pd.Categorical(["b", "a", "b", None, "b", "a"],
                                              categories=["a", "b"])})
    labels, counts, missing = category_counts(frame, "c", ("a", "b", "z"))
    assert labels == ("b", "a", "z")
    np.testing.assert_array_equal(counts, [3.0, 2.0, 0.0])
    assert missing == 1


# ---------------------------------------------------------------------------------------------
# The pricing example


def test_revenue_curve_by_hand_small_bid_list():
    # Bids 2, 5, 5 at prices 1..5: buyers 3, 3, 2, 2, 2 → revenue 3, 6, 6, 8, 10.
    prices = price_grid(5.0, 1.0)
    np.testing.assert_array_equal(prices, [1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(revenue_curve([5, 2, 5], prices), [3, 6, 6, 8, 10])


def test_revenue_curve_of_the_classic_example_keeps_the_cliff_at_3_01():
    prices = price_grid(4.0, 0.01)
    assert prices.size == 400
    revenue = dict(zip(prices.tolist(), revenue_curve([1, 1, 1, 3.01], prices).tolist(),
                       strict=True))
    # 0.01 × 301 is 3.0100000000000002 in floating point: without rounding the grid, the
    # bid of exactly 3.01 would not buy at "3.01" and the revenue there would read 0.
    assert revenue[3.01] == pytest.approx(3.01)
    assert revenue[3.02] == 0.0
    assert revenue[1.0] == pytest.approx(4.0)       # everyone buys: the best price
    assert revenue[1.01] == pytest.approx(1.01)     # only the 3.01 bidder buys
    assert revenue[0.5] == pytest.approx(2.0)
    assert revenue[4.0] == 0.0


@pytest.mark.parametrize("highest, step, message", [
    (4.0, 3.0, "1 price"), (100.0, 0.01, "10,000 prices"), (float("nan"), 0.1, "highest"),
    (4.0, -1.0, "price step"),
])
def test_price_grid_limits(highest, step, message):
    with pytest.raises(ValueError, match=message):
        price_grid(highest, step)


def test_simulated_bids_are_reproducible_and_in_range():
    a, b = simulated_bids(4.0, 7), simulated_bids(4.0, 7)
    np.testing.assert_array_equal(a, b)
    assert a.size == SIMULATED_BIDS and a.min() >= 0 and a.max() <= 4.0
    assert not np.array_equal(a, simulated_bids(4.0, 8))
    with pytest.raises(ValueError, match="negative"):
        parse_bids("1, -2")


# ---------------------------------------------------------------------------------------------
# Privacy level → scale (formulas written here)


@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("monotonic", [True, False])
def test_noise_scale_matches_the_privacy_map_formulas(noise, monotonic):
    c = 1 if monotonic else 2
    delta, k = 3.0, 2
    kw = {"noise": noise, "sensitivity": delta, "monotonic": monotonic, "k": k}
    assert noise_scale("pure", 0.5, **kw) == pytest.approx(k * c * delta / 0.5)
    rho = 0.02
    if noise == "gumbel":   # ε-bounded range: ρ = k (cΔ/b)² / 8
        expected = c * delta * math.sqrt(k / (8 * rho))
    else:                   # only via pure DP of the k picks (OpenDP's): ρ = (k cΔ/b)² / 2
        expected = k * c * delta / math.sqrt(2 * rho)
    assert noise_scale("zcdp", rho, **kw) == pytest.approx(expected)


def test_privacy_map_text_shows_the_numbers_and_the_check():
    text = privacy_map_text(noise="exponential", measure="pure", level=0.5, sensitivity=2,
                            monotonic=True, k=1, scale=4.0)
    assert "ε = Δ/b" in text and "**4**" in text and "ε = 0.5 (pure DP)" in text
    text = privacy_map_text(noise="laplace", measure="zcdp", level=0.5, sensitivity=1,
                            monotonic=False, k=1, scale=2.0)
    assert "ρ = ε²/2" in text and "half this scale" in text and "ρ = 0.5 (zCDP)" in text
    with pytest.raises(ValueError, match="measure"):
        privacy_of("approx", 1.0)


# ---------------------------------------------------------------------------------------------
# Exact vs simulated selection


SCORES = (10.0, 12.0, 9.0, 13.0, 11.5, 4.0)


@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("negate", [False, True])
def test_exact_probabilities_sum_to_one_and_simulation_agrees_within_5_se(noise, negate):
    labels = numbered_labels(len(SCORES))
    summary = _summarise(SCORES, labels, sensitivity=1.0, noise=noise,
                        measure="pure", level=0.5, monotonic=True, negate=negate,
                        k=1, trials=40_000, seed=11)
    assert summary.exact.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.all(summary.exact >= 0)
    n = summary.trials
    assert n == 40_000
    se = np.sqrt(summary.exact * (1 - summary.exact) / n)
    # 5 SE per candidate: a false alarm has probability < 6 × 6e-7 for a correct module.
    assert np.all(np.abs(summary.empirical - summary.exact) <= 5 * se + 1e-12)
    best = int(np.argmin(SCORES) if negate else np.argmax(SCORES))
    assert summary.best.tolist() == [i == best for i in range(len(SCORES))]
    assert summary.p_correct == pytest.approx(summary.exact[best], abs=1e-12)
    assert int(np.argmax(summary.exact)) == best


def test_simulation_detects_a_wrong_scale():
    # Power check of the 5-SE test above: simulating at twice the scale (a planted bug) puts
    # the best candidate's frequency far outside 5 SE of the exact probability.
    from dpcore.selection import report_noisy_max, selection_probabilities

    exact = selection_probabilities(SCORES, scale=2.0, noise="laplace")
    wrong = report_noisy_max(SCORES, scale=4.0, noise="laplace", trials=40_000,
                             rng=np.random.default_rng(3))
    freq = np.bincount(wrong, minlength=len(SCORES)) / 40_000
    se = np.sqrt(exact * (1 - exact) / 40_000)
    assert np.max(np.abs(freq - exact) / se) > 5


def test_gumbel_exact_is_the_softmax_closed_form():
    summary = _summarise(SCORES, numbered_labels(6), sensitivity=2.0,
                        noise="gumbel", measure="pure", level=1.0,
                        monotonic=False, negate=False, k=1, trials=1_000, seed=0)
    b = 2 * 2.0 / 1.0
    weights = np.exp(np.array(SCORES) / b)
    np.testing.assert_allclose(summary.exact, weights / weights.sum(), rtol=1e-12)
    assert summary.scale == pytest.approx(b)


def test_top_k_simulation_counts():
    rng = np.random.default_rng(5)
    first, included, recovered = simulate_picks(SCORES, scale=1e-3, noise="laplace",
                                                negate=False, k=3, trials=500, rng=rng)
    # Almost no noise: always 13 first, always {13, 12, 11.5}.
    assert recovered == 1.0
    assert first.tolist() == [0, 0, 0, 500, 0, 0]
    assert included.tolist() == [0, 500, 0, 500, 500, 0]
    first, included, recovered = simulate_picks(SCORES, scale=1e6, noise="gumbel",
                                                negate=True, k=2, trials=20_000, rng=rng)
    assert included.sum() == 2 * 20_000
    # Huge noise: any of the C(6, 2) = 15 pairs equally likely, so P(recovered) = 1/15.
    assert recovered == pytest.approx(1 / 15, abs=5 * math.sqrt((1 / 15) * (14 / 15) / 20_000))


def test_simulated_trials_cap_the_work():
    assert simulated_trials(10_000, 16) == 10_000
    assert simulated_trials(1_000_000, 400) == MAX_DRAWS // 400
    assert simulated_trials(1_000_000, 10**6, k=10) == 1_000


def test_binomial_half_width_formula():
    np.testing.assert_allclose(binomial_half_width([0.5, 0.0, 0.1], 100),
                               [1.96 * 0.05, 0.0, 1.96 * 0.03], rtol=1e-3)


# ---------------------------------------------------------------------------------------------
# P(correct) against the privacy level


@pytest.mark.slow
@pytest.mark.parametrize("measure", ["pure", "zcdp"])
def test_p_correct_curves_increase_from_chance_to_certainty(measure):
    scores = (0.0, 2.0, 4.0, 6.0)
    curves = compute_curves(scores, measure=measure, sensitivity=1.0, monotonic=True,
                            negate=False, k=1, seed=0)
    levels = curves.levels
    assert np.all(np.diff(levels) > 0)
    grid = EPSILON_GRID if measure == "pure" else RHO_GRID
    assert levels[0] <= grid[0] and levels[-1] >= grid[-1]   # the slider's range is covered
    assert curves.chance == 0.25
    for noise in NOISES:
        p = curves.p_correct[noise]
        assert np.all(np.diff(p) >= -1e-12), noise
        assert p[0] < 0.26 and p[-1] > 0.99, noise
    # Same ε (pure DP) → same scale for all noises; here permute-and-flip (exponential noise)
    # also picks the best at least as often as the exponential mechanism (McKenna & Sheldon
    # 2020 show it is never worse in expected score).
    if measure == "pure":
        assert np.all(curves.p_correct["exponential"] >= curves.p_correct["gumbel"] - 1e-12)


def test_p_correct_curve_matches_two_candidate_closed_form():
    # Two candidates, gap g, Gumbel noise of scale b: P(best) = 1 / (1 + e^{-g/b}); with
    # pure DP, monotonic, Δ = 1: b = 1/ε.
    levels = np.array([0.1, 1.0, 3.0])
    p = p_correct_curve((0.0, 2.0), levels, noise="gumbel", measure="pure",
                        sensitivity=1.0, monotonic=True, negate=False)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-2.0 * levels)), rtol=1e-12)
    # Exponential noise: P(best) = 1 − e^{-g/b}/2 (permute-and-flip with two candidates).
    p = p_correct_curve((0.0, 2.0), levels, noise="exponential", measure="pure",
                        sensitivity=1.0, monotonic=True, negate=False)
    np.testing.assert_allclose(p, 1 - np.exp(-2.0 * levels) / 2, rtol=1e-9)


@pytest.mark.slow
def test_top_k_curves_and_levels_for_k_above_one():
    curves = compute_curves(SCORES, measure="pure", sensitivity=1.0, monotonic=True,
                            negate=False, k=2, seed=1)
    assert curves.top_k is not None and curves.top_k_levels.size <= TOP_K_CURVE_POINTS
    for noise in NOISES:
        p = curves.top_k[noise]
        assert p[0] < 0.2 and p[-1] > 0.98   # 1/15 by chance, certain with little noise


@pytest.mark.slow
def test_curve_levels_reach_the_climb_of_large_counts():
    # Counts in the thousands: picked right at every slider ε, so the axis extends below it.
    scores = (15_784.0, 10_878.0, 8_025.0, 83.0)
    levels = curve_levels(scores, measure="pure", sensitivity=1.0, monotonic=True,
                          negate=False, k=1)
    assert levels[0] < 1e-5 and levels.size <= CURVE_MAX_POINTS
    p = p_correct_curve(scores, levels, noise="laplace", measure="pure", sensitivity=1.0,
                        monotonic=True, negate=False)
    assert p[0] < 0.3 and p[-1] == pytest.approx(1.0)


def test_level_reaching():
    levels = [0.1, 1.0, 10.0, 100.0]
    assert level_reaching(levels, [0.2, 0.95, 0.85, 0.99], 0.9) == 100.0
    assert level_reaching(levels, [0.95, 0.96, 0.97, 0.99], 0.9) == 0.1
    assert level_reaching(levels, [0.2, 0.3, 0.4, 0.5], 0.9) is None


# ---------------------------------------------------------------------------------------------
# Sentences


def test_pick_sentence_escapes_labels_and_names_the_runner_up():
    labels = ("*bold*", "[link](x)", "c")
    summary = _summarise((5.0, 1.0, 0.0), labels, sensitivity=1.0, noise="gumbel",
                        measure="pure", level=1.0, monotonic=True, negate=False,
                        k=1, trials=1_000, seed=0)
    sentence = pick_sentence(summary, measure="pure", level=1.0, negate=False, k=1)
    p = math.exp(5) / (math.exp(5) + math.exp(1) + 1)
    assert sentence.startswith(r"At ε = 1, **\*bold\***")
    assert f"is picked {p:.1%} of the time" in sentence
    assert r"\[link\]\(x\)" in sentence and "[link](x)" not in sentence


def test_pick_sentence_for_ties_and_minimum():
    summary = _summarise((1.0, 1.0, 3.0), ("a", "b", "c"), sensitivity=1.0,
                        noise="gumbel", measure="zcdp", level=0.5, monotonic=True,
                        negate=True, k=1, trials=1_000, seed=0)
    sentence = pick_sentence(summary, measure="zcdp", level=0.5, negate=True, k=1)
    assert "At ρ = 0.5, one of the 2 candidates tied for the lowest score" in sentence


@pytest.mark.parametrize("p, text", [
    (1.0, "100%"), (1 - 1e-12, "100%"), (0.9995, "more than 99.9%"), (0.923, "92.3%"),
    (0.0004, "less than 0.1%"), (1e-9, "0%"), (0.0, "0%"),
])
def test_fmt_share(p, text):
    assert fmt_share(p) == text


def test_curve_caption_rounds_the_level_up():
    """The curve reaches 90% at ε = 0.01449 on its grid: shown as "0.014" (two digits, to
    nearest) the claim would hold from a level where it does not; it must read 0.015."""
    levels = np.array([0.01, 0.012, 0.01449, 0.02])
    p_correct = {n: np.array([0.5, 0.8, 0.9, 0.95]) for n in NOISE_TYPES}
    curves = CorrectnessCurves(levels, p_correct, chance=0.25)
    caption = curve_caption(curves, noise="laplace", measure="pure")
    assert "from ε ≈ 0.015 upwards" in caption


def test_one_name_per_selection_noise_everywhere():
    """'Exponential (permute-and-flip)' on one page, 'Gumbel (exponential mechanism)' on
    another, 'report noisy max' for a quantile in the plan (issue 21 item 10): the Selection
    and Quantiles pages, the release plan and a release's description all read dpcore's
    labels, each the mechanism first, then its noise."""
    from dashboard.analysis import quantiles as qa
    from dashboard.analysis.release_plan import budget_text
    from dpcore.selection import NOISE_LABELS
    from plan import model
    from plan.kinds.quantiles import Quantiles

    assert selection_choices.NOISES == NOISE_LABELS
    assert qa.NOISES == {k: NOISE_LABELS[k] for k in ("exponential", "gumbel")}
    assert NOISE_LABELS["exponential"] == "Permute-and-flip (exponential noise)"
    assert NOISE_LABELS["gumbel"] == "Exponential mechanism (Gumbel noise)"
    median = Quantiles("x", (0.5,), model.Grid((0.0, 1.0, 2.0)))
    for noise, expected in (
            (model.SelectionNoise("exponential", "pure", epsilon=1.0),
             "Permute-and-flip (exponential noise), ε = 1"),
            (model.SelectionNoise("gumbel", "zcdp", rho=0.125),
             "Exponential mechanism (Gumbel noise), ρ = 0.125")):
        assert budget_text(model.PlanQuery("q", "median", median, noise, "quantiles")) == expected


@pytest.mark.parametrize("measure", ["pure", "zcdp"])
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_privacy_map_text_says_what_the_k_picks_are_charged(measure, noise, k):
    """The sentence on how the k picks share the budget against closed forms at a fixed
    scale b (Δ = 1.5, monotonic): ε = kΔ/b under pure DP (each pick Δ/b, 1/k of it);
    ρ = k(Δ/b)²/8 for Gumbel noise under zCDP (each pick 1/k of it); ρ = (kΔ/b)²/2 for
    exponential or Laplace noise under zCDP, one pick's ρ₀ = (Δ/b)²/2 being 1/k² of it. On
    main the sentence said "each pick gets 1/k of it" for every measure."""
    delta, b = 1.5, 2.0
    eps0 = delta / b
    if measure == "pure":
        charged, one, share = PureDP(k * eps0), PureDP(eps0), k
    elif noise == "gumbel":
        charged, one, share = ZCDP(k * eps0**2 / 8), ZCDP(eps0**2 / 8), k
    else:
        charged, one, share = ZCDP((k * eps0) ** 2 / 2), ZCDP(eps0**2 / 2), k * k
    level = charged.epsilon if measure == "pure" else charged.rho
    text = privacy_map_text(noise=noise, measure=measure, level=level, sensitivity=delta,
                            monotonic=True, k=k, scale=b)
    assert f"costs {charged.describe()}." in text          # the privacy map check
    assert "1/k of it" not in text
    if k == 1:
        assert "picks" not in text
        return
    assert f"{one.describe()}, 1/{share} " in text
    assert f"of the {charged.describe()} charged" in text
    if share == k * k:
        assert f"ε₀ = √(2ρ)/{k} = {up(eps0)}" in text and "1/k², not 1/k" in text
    else:
        assert "sequential composition" in text
