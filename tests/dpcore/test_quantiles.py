"""Tests for dpcore.quantiles: exact quantile laws (Gumbel and exponential noise), their
accuracy, binning.

The scores, their sensitivity and the level's fraction against OpenDP 0.16's own scorer (ties
and all); the exact distribution against a brute-force enumeration (plain Python, one candidate
at a time), dpcore.selection's independent selection probabilities, simulation, and OpenDP's
Gumbel noisy max; the privacy claim by enumerating neighbours.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from dpcore.quantiles import (
    bin_indices,
    bin_labels,
    binned_counts,
    expected_rank_error,
    private_quantiles,
    quantile_accuracy,
    quantile_fraction,
    quantile_probabilities,
    quantile_scale,
    quantile_scores,
    quantile_sensitivity,
    rank_errors,
    rows_quantile_probabilities,
    sample_max_rows,
    sample_quantile,
    split_quantile_budget,
    true_quantile,
)
from dpcore.selection import selection_probabilities

dp.enable_features("contrib")


def brute_rank_error(values, c, q):
    """|(1 − q')·#{x < c} − q'·#{x > c}|, q' = num/den as OpenDP reads q (ties on neither
    side), one row at a time in exact fractions."""
    num, den = opendp_fraction(q)
    share = Fraction(num, den)
    below = sum(1 for x in values if x < c)
    above = sum(1 for x in values if x > c)
    return float(abs((1 - share) * below - share * above))


def brute_force_probabilities(values, candidates, q, epsilon, max_rows=1):
    """exp(−ε·err(c) / (2·r·max(q', 1 − q'))), one candidate at a time, normalised."""
    num, den = opendp_fraction(q)
    sensitivity = max_rows * max(num, den - num) / den
    weights = [math.exp(-epsilon * brute_rank_error(values, c, q) / (2 * sensitivity))
               for c in candidates]
    total = math.fsum(weights)
    return np.array([w / total for w in weights])


DATA = np.array([3.1, 7.4, 1.2, 9.9, 5.5, 5.5, 2.0, 8.8, 4.4, 6.1, 0.3])
GRID = np.arange(0.0, 11.0, 0.5)


# --- the exact distribution -----------------------------------------------------------------------


@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_probabilities_match_brute_force(q, epsilon):
    got = quantile_probabilities(DATA, GRID, q, epsilon=epsilon)
    np.testing.assert_allclose(got, brute_force_probabilities(DATA, GRID, q, epsilon),
                               rtol=1e-12, atol=1e-300)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)


def test_probabilities_match_selection_probabilities_with_gumbel_noise():
    """The exponential mechanism is report noisy max with Gumbel noise of scale 2Δ/ε:
    dpcore.selection computes its probabilities by its own route."""
    q, epsilon = 0.3, 0.7
    utilities = -rank_errors(DATA, GRID, q)
    scale = 2 * quantile_sensitivity(q) / epsilon
    np.testing.assert_allclose(quantile_probabilities(DATA, GRID, q, epsilon=epsilon),
                               selection_probabilities(utilities, scale=scale, noise="gumbel"),
                               rtol=1e-9, atol=1e-15)


def test_candidates_in_any_order_and_multiplicities():
    shuffled = np.random.default_rng(0).permutation(GRID)
    p = quantile_probabilities(DATA, GRID, 0.5, epsilon=1.0)
    p_shuffled = quantile_probabilities(DATA, shuffled, 0.5, epsilon=1.0)
    np.testing.assert_allclose(p_shuffled, p[np.searchsorted(GRID, shuffled)], rtol=1e-14)
    values, counts = np.unique(DATA, return_counts=True)
    np.testing.assert_allclose(
        quantile_probabilities(values, GRID, 0.5, epsilon=1.0, counts=counts), p, rtol=1e-14)


def test_huge_epsilon_gives_the_best_candidates_and_no_nan():
    # 50,000 values below 49,999.5 (rank error 0), 50,001 below 50,000.5 (rank error 1)
    p = quantile_probabilities(np.arange(10**5, dtype=float), [10.5, 49_999.5, 50_000.5, 9e4],
                               0.5, epsilon=1e300)
    np.testing.assert_array_equal(p, [0.0, 1.0, 0.0, 0.0])
    tied = quantile_probabilities([1.0, 2.0], [0.5, 1.5, 1.5, 2.5], 0.5, epsilon=1e300)
    np.testing.assert_array_equal(tied, [0.0, 0.5, 0.5, 0.0])


def test_rank_errors_match_opendp_scores():
    """OpenDP's quantile score is D·|(1 − α)·#{x < c} − α·#{x > c}| for α = N/D; with no value
    on a candidate, #{x > c} = n − #{x < c} and the score / D is our rank error. Its L∞
    sensitivity is D·max(α, 1 − α): ours times D."""
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    grid = GRID + 0.25  # no value of DATA on a candidate
    for q, denominator in [(0.5, 2), (0.25, 4), (0.75, 4)]:
        scorer = dp.t.make_quantile_score_candidates(domain, dp.symmetric_distance(),
                                                     grid.tolist(), q)
        scores = np.array(scorer(DATA.tolist()), dtype=float)
        np.testing.assert_allclose(scores / denominator, rank_errors(DATA, grid, q))
        assert scorer.map(1) == denominator * quantile_sensitivity(q)


@pytest.mark.slow
def test_distribution_matches_opendp_gumbel_release():
    """OpenDP's score >> make_noisy_max(zCDP, Gumbel noise) at scale 2·D·Δ/ε, run 3,000 times:
    a chi-square test against our exact distribution does not reject (p > 0.001). Its privacy
    map reads ρ = ε²/8, the exponential mechanism's bounded-range zCDP, and its pure-DP
    variant at the same scale reads ε."""
    q, epsilon, denominator = 0.5, 0.8, 2
    grid = np.arange(0.25, 10.5, 1.0)
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    scorer = dp.t.make_quantile_score_candidates(domain, dp.symmetric_distance(),
                                                 grid.tolist(), q)
    scale = 2 * denominator * quantile_sensitivity(q) / epsilon
    gumbel = scorer >> dp.m.then_noisy_max(dp.zero_concentrated_divergence(), scale=scale,
                                           negate=True)
    assert gumbel.map(1) == pytest.approx(epsilon**2 / 8, rel=1e-9)
    pure = scorer >> dp.m.then_noisy_max(dp.max_divergence(), scale=scale, negate=True)
    assert pure.map(1) == pytest.approx(epsilon, rel=1e-9)
    runs = 3000
    picks = np.bincount([gumbel(DATA.tolist()) for _ in range(runs)], minlength=grid.size)
    expected = quantile_probabilities(DATA, grid, q, epsilon=epsilon) * runs
    big = expected >= 5  # pool the cells too small for the chi-square approximation
    observed, pooled = picks[big], expected[big]
    if not np.all(big):
        observed, pooled = np.r_[observed, picks[~big].sum()], np.r_[pooled, expected[~big].sum()]
    assert stats.chisquare(observed, pooled * observed.sum() / pooled.sum()).pvalue > 1e-3


@pytest.mark.parametrize("q", [0.5, 0.2])
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_distribution_matches_simulation(q, noise):
    """400,000 releases by noisy min (Gumbel: the exponential mechanism; exponential noise:
    permute-and-flip): every candidate's share within 5 standard errors."""
    trials = 400_000
    out = sample_quantile(DATA, GRID, q, epsilon=1.5, noise=noise, trials=trials,
                          rng=np.random.default_rng(21))
    share = np.array([(out == c).mean() for c in GRID])
    p = quantile_probabilities(DATA, GRID, q, epsilon=1.5, noise=noise)
    assert np.all(np.abs(share - p) <= 5 * np.sqrt(p * (1 - p) / trials) + 1e-6)


# --- the privacy claim, by enumerating neighbours -------------------------------------------------


@pytest.mark.parametrize("q", [0.5, 0.2, 0.9])
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_no_neighbour_moves_a_probability_by_more_than_epsilon(q, noise):
    """Remove each row in turn, or add a row at each of many places (on the candidates too):
    every candidate's log probability moves by at most ε — and by more than 0.6·ε for some
    neighbour (the sensitivity max(q, 1 − q) is not loose)."""
    epsilon = 1.0
    base = np.log(quantile_probabilities(DATA, GRID, q, epsilon=epsilon, noise=noise))
    neighbours = [np.delete(DATA, i) for i in range(DATA.size)]
    neighbours += [np.append(DATA, x) for x in np.arange(-1.0, 12.0, 0.25)]
    worst = max(np.max(np.abs(np.log(quantile_probabilities(x, GRID, q, epsilon=epsilon,
                                                            noise=noise)) - base))
                for x in neighbours)
    assert worst <= epsilon * (1 + 1e-12)
    assert worst > 0.6 * epsilon


def test_person_level_sensitivity_covers_a_person_with_many_rows():
    """A person with 4 rows below every candidate removed (each rank error below the median
    falls by 2, above it rises by 2): within ε with max_rows = 4, beyond ε with the row-level
    sensitivity (the planted bug max_rows = 1 is caught)."""
    epsilon, q = 1.0, 0.5
    person = np.full(4, -1.0)
    with_person = np.r_[DATA, person]
    for max_rows, within in ((4, True), (1, False)):
        p = quantile_probabilities(with_person, GRID, q, epsilon=epsilon, max_rows=max_rows)
        p_without = quantile_probabilities(DATA, GRID, q, epsilon=epsilon, max_rows=max_rows)
        loss = np.max(np.abs(np.log(p) - np.log(p_without)))
        assert bool(loss <= epsilon * (1 + 1e-12)) is within, loss


# --- accuracy -------------------------------------------------------------------------------------


def test_true_quantile_is_the_inverse_cdf():
    rng = np.random.default_rng(2)
    for _ in range(20):
        x = rng.integers(0, 10, size=rng.integers(1, 30)).astype(float)
        w = rng.integers(0, 4, size=x.size).astype(float)
        w[0] = max(w[0], 1.0)
        for q in (0.0, 0.1, 0.5, 0.77, 1.0):
            assert true_quantile(x, q) == np.quantile(x, q, method="inverted_cdf")
            assert true_quantile(x, q, counts=w) == np.quantile(x, q, method="inverted_cdf",
                                                                weights=w)


def test_accuracy_and_rank_error_match_brute_force():
    q, epsilon = 0.5, 0.6
    p = brute_force_probabilities(DATA, GRID, q, epsilon)
    truth = np.quantile(DATA, q, method="inverted_cdf")
    alphas = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 100.0])
    expected = [sum(pc for c, pc in zip(GRID, p, strict=True) if abs(c - truth) <= a)
                for a in alphas]
    got = quantile_accuracy(DATA, GRID, q, alphas, epsilon=epsilon)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    assert got[-1] == pytest.approx(1.0)
    errors = [brute_rank_error(DATA, c, q) for c in GRID]
    assert expected_rank_error(DATA, GRID, q, epsilon=epsilon) == pytest.approx(
        float(np.dot(p, errors)), rel=1e-12)


def test_accuracy_matches_simulation():
    q, epsilon, trials = 0.25, 0.4, 200_000
    out = sample_quantile(DATA, GRID, q, epsilon=epsilon, trials=trials,
                          rng=np.random.default_rng(8))
    truth = true_quantile(DATA, q)
    for alpha in (0.5, 1.0, 3.0):
        p = float(quantile_accuracy(DATA, GRID, q, alpha, epsilon=epsilon))
        assert np.mean(np.abs(out - truth) <= alpha) == pytest.approx(
            p, abs=5 * math.sqrt(p * (1 - p) / trials) + 1e-9)
    below = np.searchsorted(np.sort(DATA), out, side="left")
    simulated = np.mean(np.abs(below - q * DATA.size))
    assert simulated == pytest.approx(expected_rank_error(DATA, GRID, q, epsilon=epsilon),
                                      rel=0.02)


# --- several quantiles and the budget split -------------------------------------------------------


def test_split_budget_never_overspends():
    for epsilon, m in [(1.0, 3), (0.1, 7), (2.0, 1), (1e-3, 999)]:
        share = split_quantile_budget(epsilon, m)
        assert math.fsum([share] * m) <= epsilon
        assert share == pytest.approx(epsilon / m, rel=1e-15)


def test_private_quantiles_use_their_share_of_the_budget():
    """Three quantiles at ε = 1.2: each column is distributed as one quantile at ε = 0.4
    (200,000 releases, 5 standard errors)."""
    qs = [0.25, 0.5, 0.75]
    trials = 200_000
    out = private_quantiles(DATA, GRID, qs, epsilon=1.2, trials=trials,
                            rng=np.random.default_rng(9))
    assert out.shape == (trials, 3)
    for j, q in enumerate(qs):
        p = quantile_probabilities(DATA, GRID, q, epsilon=0.4)
        share = np.array([(out[:, j] == c).mean() for c in GRID])
        assert np.all(np.abs(share - p) <= 5 * np.sqrt(p * (1 - p) / trials) + 1e-6)
    one = private_quantiles(DATA, GRID, qs, epsilon=1.2, rng=np.random.default_rng(1))
    assert one.shape == (3,) and set(one.tolist()) <= set(GRID.tolist())


# --- a private max_rows ---------------------------------------------------------------------------


def test_rows_quantile_is_the_tilted_quantile_of_rows_per_person():
    """The rank error of each candidate c, plus (c − 1)·max(q, 1 − q): one person's worth
    per row of the bound (issue 21 item 11), under permute-and-flip at scale 2Δ/ε."""
    rows, persons = np.array([1, 2, 3, 7, 150]), np.array([500, 200, 80, 10, 2])
    per_person = np.repeat(rows, persons).astype(float)
    got = rows_quantile_probabilities(rows, persons, 0.9, epsilon=0.5, largest=20)
    c = np.arange(1.0, 21.0)
    below = (per_person[None, :] < c[:, None]).sum(axis=1)
    above = (per_person[None, :] > c[:, None]).sum(axis=1)
    errors = np.abs(0.1 * below - 0.9 * above) + 0.9 * (c - 1)
    np.testing.assert_allclose(   # exponential noise: what a real draw of max rows uses
        got, selection_probabilities(errors, scale=2 * 0.9 / 0.5, noise="exponential",
                                     negate=True), rtol=1e-9, atol=1e-300)
    # one person removed (any number of rows): within ε, the sensitivity max(q, 1 − q)
    fewer = rows_quantile_probabilities(rows, persons - np.array([0, 0, 0, 0, 1]), 0.9,
                                        epsilon=0.5, largest=20)
    assert np.max(np.abs(np.log(got) - np.log(fewer))) <= 0.5 * (1 + 1e-12)


def test_a_balanced_panel_draws_its_rows_per_person():
    """545 people with 8 rows each, q = 0.99, ε = 1, candidates 1..100: every candidate
    above 8 has the same quantile score (0.01·545), so the untilted quantile drew 8 with
    probability 0.17 and otherwise anything from 9 to 100 (issue 21 item 11). Tilted, the
    exponential mechanism's closed form (which permute-and-flip's P(best) is never below,
    McKenna & Sheldon 2020) gives 8 at least 1 / (1 + Σ_j e^(−(5.45 + 0.99·j)/1.98)) ≈ 0.91."""
    p = rows_quantile_probabilities([8], [545], 0.99, epsilon=1.0, largest=100)
    j = np.arange(1, 93)     # candidates 9..100; those below 8 score 0.99·545 + tilt
    em_best = 1 / (1 + np.sum(np.exp(-(0.01 * 545 + 0.99 * j) / (2 * 0.99))))
    assert em_best > 0.9 and p[7] >= em_best * (1 - 1e-9)
    drawn = sample_max_rows([8], [545], 0.99, epsilon=1.0, largest=100, trials=4000,
                            rng=np.random.default_rng(21))
    assert np.mean(drawn == 8) > 0.88 and np.mean(drawn <= 10) > 0.97


def test_sample_max_rows_returns_candidates():
    rows, persons = [1, 2, 3, 150], [500, 200, 80, 3]
    one = sample_max_rows(rows, persons, 0.9, epsilon=1.0, largest=10,
                          rng=np.random.default_rng(0))
    many = sample_max_rows(rows, persons, 0.9, epsilon=1.0, largest=10, trials=1000,
                           rng=np.random.default_rng(0))
    assert isinstance(one, int) and 1 <= one <= 10
    assert many.dtype == np.int64 and np.all((1 <= many) & (many <= 10))
    p = rows_quantile_probabilities(rows, persons, 0.9, epsilon=1.0, largest=10)
    assert np.argmax(np.bincount(many, minlength=11)[1:]) == np.argmax(p)


# --- binned histograms ----------------------------------------------------------------------------


def test_binning_matches_numpy_histogram_inside_the_edges():
    rng = np.random.default_rng(4)
    edges = np.array([0.0, 10.0, 18.0, 30.0, 65.0, 100.0])
    values = np.r_[rng.uniform(0, 100, 1000), edges]  # values on every edge too
    inside, _ = np.histogram(values, bins=edges)
    np.testing.assert_array_equal(binned_counts(values, edges, outside="clamp"), inside)
    np.testing.assert_array_equal(binned_counts(values, edges)[1:-1], inside)


def test_values_outside_the_edges():
    edges = [0, 10, 20]
    values = [-5.0, -np.inf, 0.0, 9.99, 10.0, 20.0, 20.5, np.inf, np.nan]
    assert bin_indices(values, edges).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, -1]
    assert bin_indices(values, edges, outside="clamp").tolist() == [0, 0, 0, 0, 1, 1, 1, 1, -1]
    assert binned_counts(values, edges).tolist() == [2, 2, 2, 2]
    assert binned_counts(values, edges, outside="clamp").tolist() == [4, 4]
    assert bin_labels(edges) == ("< 0", "[0, 10)", "[10, 20]", "> 20")
    assert bin_labels([0.5, 1.25], outside="clamp") == ("[0.5, 1.25]",)


def test_binning_validation():
    with pytest.raises(ValueError, match="edges"):
        bin_indices([1.0], [0, 0, 1])
    with pytest.raises(ValueError, match="edges"):
        bin_indices([1.0], [1.0])
    with pytest.raises(ValueError, match="outside"):
        bin_indices([1.0], [0, 1], outside="drop")
    with pytest.raises(TypeError, match="values"):
        bin_indices(["a"], [0, 1])


def test_quantile_validation():
    with pytest.raises(ValueError, match="q"):
        quantile_probabilities(DATA, GRID, 1.5, epsilon=1.0)
    with pytest.raises(ValueError, match="candidates"):
        quantile_probabilities(DATA, [], 0.5, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        quantile_probabilities(DATA, GRID, 0.5, epsilon=0.0)
    with pytest.raises(ValueError, match="counts"):
        quantile_probabilities(DATA, GRID, 0.5, epsilon=1.0, counts=[1.0])
    with pytest.raises(ValueError, match="values"):
        true_quantile([], 0.5)
    with pytest.raises(ValueError, match="alpha"):
        quantile_accuracy(DATA, GRID, 0.5, -1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="max_rows"):
        quantile_sensitivity(0.5, max_rows=0)
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        quantile_probabilities(DATA, GRID, 0.5, epsilon=1.0, rho=0.5)
    with pytest.raises(ValueError, match="exactly one of epsilon"):
        quantile_probabilities(DATA, GRID, 0.5)
    with pytest.raises(ValueError, match="noise"):
        quantile_probabilities(DATA, GRID, 0.5, epsilon=1.0, noise="cauchy")
    with pytest.raises(ValueError, match="total"):
        quantile_scores([3], [2], 4, 0.5)
    with pytest.raises(ValueError, match="below"):
        quantile_scores([1.5], [0], 4, 0.5)


# --- the law of the release: OpenDP's scores, sensitivity and noise ------------------------------

_FLOATS = dp.vector_domain(dp.atom_domain(T=float, nan=False))
#: Levels OpenDP reads exactly (1/2, 1/4), as tenths of a thousandth (0.3, 1/3, 0.12345, …),
#: and the ends.
LEVELS = (0.0, 0.1, 0.25, 0.3, 1 / 3, 0.5, 0.12345, 0.98765, 0.9, 1.0)


def opendp_scorer(grid, q):
    return dp.t.make_quantile_score_candidates(_FLOATS, dp.symmetric_distance(),
                                               [float(c) for c in grid], alpha=q)


def opendp_fraction(q):
    """(num, den) as OpenDP reads q: its scores at one value 0, candidates −1 and 1."""
    num, rest = opendp_scorer([-1.0, 1.0], q)([0.0])
    return int(num), int(num) + int(rest)


def test_scores_equal_opendps_scorer_on_random_data_with_ties():
    """Whole numbers with many ties, candidates on and between the values: dpcore's scores
    from the counts below and equal to each candidate are OpenDP's, integer for integer."""
    rng = np.random.default_rng(5)
    for trial in range(60):
        values = rng.integers(-5, 15, int(rng.integers(1, 400))).astype(float)
        grid = np.unique(np.r_[rng.integers(-8, 18, int(rng.integers(1, 12))),
                               rng.uniform(-8, 18, 2)])
        q = LEVELS[trial % len(LEVELS)] if trial < 40 else float(rng.random())
        below = [int(np.sum(values < c)) for c in grid]
        equal = [int(np.sum(values == c)) for c in grid]
        ours = quantile_scores(below, equal, values.size, q)
        assert [int(s) for s in ours] == opendp_scorer(grid, q)(values.tolist()), (trial, q)


def test_the_law_is_opendps_scores_over_their_denominator_with_ties():
    """Planted: the score |#{x < c} − q·n| of old. With ties, OpenDP scores
    |(1 − q)·#{x < c} − q·#{x > c}|: on 1, 2, 2, 2, 3 the median's scores are 4, 0, 4 (the
    candidate 2 wins outright), where the old score had 2 and 3 tied at 1.5."""
    p = quantile_probabilities([1.0, 2.0, 2.0, 2.0, 3.0], [1.0, 2.0, 3.0], 0.5, epsilon=1e300)
    np.testing.assert_array_equal(p, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(rank_errors([1.0, 2.0, 2.0, 2.0, 3.0], [1.0, 2.0, 3.0], 0.5),
                                  [2.0, 0.0, 2.0])


@pytest.mark.parametrize("q", [0.5, 0.25, 0.3, 0.12345, 0.98765])
@pytest.mark.parametrize("max_rows", [1, 3])
def test_probabilities_are_the_law_of_opendps_scores_and_noise(q, max_rows):
    """Data with ties on the candidates: the page's distribution is the law of argmin(score/den
    + noise·scale), with OpenDP's scores, OpenDP's stability map at max_rows rows per person
    (over den) as Δ and the scale 2Δ/ε: softmax for Gumbel noise, dpcore.selection's
    quadrature for exponential noise."""
    values = np.random.default_rng(3).integers(0, 12, 300).astype(float)
    grid = np.arange(-1.0, 14.0)
    scorer = opendp_scorer(grid, q)
    _, den = opendp_fraction(q)
    scores = np.array(scorer(values.tolist()), dtype=float) / den
    delta = scorer.map(max_rows) / den
    for noise in ("gumbel", "exponential"):
        law = selection_probabilities(scores, scale=2 * delta / 0.5, noise=noise, negate=True)
        chosen = {} if noise == "gumbel" else {"noise": noise}   # Gumbel: the default
        got = quantile_probabilities(values, grid, q, epsilon=0.5, max_rows=max_rows, **chosen)
        np.testing.assert_allclose(got, law, rtol=1e-9, atol=1e-15)


def test_sensitivity_is_opendps_stability_map():
    """Δ = OpenDP's map of its scores at r rows per person, over den (rounded up): for
    q = 0.12345 OpenDP reads 1234/10000, whose sensitivity 0.8766 is above max(q, 1 − q)."""
    rng = np.random.default_rng(8)
    for q in [*LEVELS, *rng.random(300).tolist()]:
        scorer = opendp_scorer([-1.0, 1.0], q)
        _, den = opendp_fraction(q)
        for r in (1, 3, 7):
            exact = Fraction(int(scorer.map(r)), den)
            ours = quantile_sensitivity(q, max_rows=r)
            assert Fraction(ours) >= exact and ours == pytest.approx(float(exact), rel=1e-15)


def test_the_fraction_and_the_scale_are_opendps_and_the_plans():
    """dpcore reads q as OpenDP does (asked here of OpenDP itself), and the scale is the one a
    plan builds (dpcore.selection.noisy_max_scale at Δ, not monotonic)."""
    from dpcore.measures import ZCDP, PureDP
    from dpcore.selection import noisy_max_scale

    rng = np.random.default_rng(13)
    for q in [*LEVELS, *rng.random(500).tolist(), 0.00015, 0.99995, 5e-5]:
        assert quantile_fraction(q) == opendp_fraction(q), q
    for q, r in [(0.5, 1), (0.3, 4), (0.12345, 2)]:
        delta = quantile_sensitivity(q, max_rows=r)
        assert quantile_scale(q, epsilon=0.7, noise="exponential", max_rows=r) == (
            noisy_max_scale(PureDP(0.7), sensitivity=delta, noise="exponential"))
        assert quantile_scale(q, rho=0.2, max_rows=r) == noisy_max_scale(
            ZCDP(0.2), sensitivity=delta, noise="gumbel")
        assert quantile_scale(q, rho=0.2, max_rows=r) == pytest.approx(
            2 * delta / math.sqrt(8 * 0.2), rel=1e-15)
