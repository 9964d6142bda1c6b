"""dpcore.rank_intervals: the shortfall bounds against closed forms written here, and coverage
over 10^4 fixed-seed releases per noise (report noisy max, peeled top-k, a quantile's noisy
arg-min). A union bound is loose on typical scores (coverage printed, asserted >= 1 − alpha)
and nearly tight where every other candidate sits just beyond it (asserted below a ceiling)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from dpcore import rank_intervals
from dpcore.quantiles import quantile_scale, rank_errors
from dpcore.selection import NOISE_TYPES, noisy_top_k, report_noisy_max

ALPHA = 0.05
RELEASES = 10_000
# three binomial standard deviations of a coverage of 1 − alpha over RELEASES draws
MARGIN = 3 * math.sqrt(ALPHA * (1 - ALPHA) / RELEASES)


def _closed_form(noise: str, scale: float, m: int, alpha: float) -> float:
    """E with (m − 1)·P(Z − Z' > E/b) = alpha, each law's difference written out here."""
    p = alpha / (m - 1)
    if noise == "gumbel":        # logistic: 1 / (1 + e^t)
        return scale * math.log(1 / p - 1)
    if noise == "exponential":   # Laplace: e^{−t} / 2
        return scale * math.log(1 / (2 * p))
    # a difference of two Laplace draws: (2 + t) e^{−t} / 4, solved numerically
    return scale * optimize.brentq(lambda t: (2 + t) * math.exp(-t) / 4 - p, 0.0, 100.0,
                                   xtol=1e-14)


@pytest.mark.parametrize("noise", NOISE_TYPES)
@pytest.mark.parametrize(("m", "alpha"), [(2, 0.05), (10, 0.05), (1000, 0.001)])
def test_the_shortfall_is_the_closed_form(noise, m, alpha):
    expected = _closed_form(noise, 3.0, m, alpha)
    assert rank_intervals.selection_shortfall(noise, 3.0, m, alpha) == pytest.approx(
        expected, rel=1e-9)


def test_the_textbook_bound_of_the_exponential_mechanism_and_permute_and_flip():
    """Gumbel: b·ln((m − 1)/alpha − 1) <= the textbook 2Δ/ε·ln(m/alpha); permute-and-flip's is
    smaller again at the same scale; one candidate or a large alpha: no shortfall."""
    b, m = 2.0, 20
    gumbel = rank_intervals.selection_shortfall("gumbel", b, m, ALPHA)
    assert gumbel <= b * math.log(m / ALPHA)
    assert rank_intervals.selection_shortfall("exponential", b, m, ALPHA) < gumbel
    assert rank_intervals.selection_shortfall("laplace", b, 1, ALPHA) == 0.0
    assert rank_intervals.selection_shortfall("laplace", b, 2, 0.6) == 0.0
    peeled = rank_intervals.top_k_shortfalls("exponential", b, m, 3, ALPHA)
    assert peeled == pytest.approx([_closed_form("exponential", b, c, ALPHA)
                                    for c in (20, 19, 18)], rel=1e-9)


def _scores(rng: np.random.Generator, m: int) -> np.ndarray:
    """Counts of a skewed column over m candidates (a few close at the top)."""
    return np.sort(rng.poisson(rng.uniform(20, 200, m)).astype(float))[::-1]


def _report(label: str, coverage: float) -> None:
    print(f"coverage {label}: {coverage:.4f} (level {1 - ALPHA:.3f})")


@pytest.mark.parametrize("noise", NOISE_TYPES)
def test_coverage_of_report_noisy_max(noise):
    rng = np.random.default_rng(2026)
    scale, m = 8.0, 12
    e = _closed_form(noise, scale, m, ALPHA)
    scores = _scores(rng, m)
    chosen = report_noisy_max(scores, scale=scale, noise=noise, trials=RELEASES, rng=rng)
    shortfall = scores.max() - scores[chosen]
    coverage = float(np.mean(shortfall <= e))
    _report(f"{noise} report noisy max (union bound)", coverage)
    assert coverage >= 1 - ALPHA - MARGIN
    # the worst case: every other candidate just beyond E, each beats the best at p each
    worst = np.array([100.0] + [100.0 - e * (1 + 1e-9)] * (m - 1))
    chosen = report_noisy_max(worst, scale=scale, noise=noise, trials=RELEASES, rng=rng)
    coverage = float(np.mean(worst.max() - worst[chosen] <= e))
    _report(f"{noise} report noisy max, worst case", coverage)
    assert 1 - ALPHA - MARGIN <= coverage <= 1 - ALPHA / 3


@pytest.mark.parametrize("noise", NOISE_TYPES)
def test_coverage_of_a_peeled_top_k(noise):
    rng = np.random.default_rng(27)
    scale, m, k = 6.0, 10, 3
    scores = _scores(rng, m)
    chosen = noisy_top_k(scores, k, scale=scale, noise=noise, trials=RELEASES, rng=rng)
    taken = np.zeros((RELEASES, m), dtype=bool)
    rows = np.arange(RELEASES)
    for r in range(k):   # ranks, not releases: each rank's best among the candidates left
        left_best = np.where(taken, -np.inf, scores).max(axis=1)
        shortfall = left_best - scores[chosen[:, r]]
        e = _closed_form(noise, scale, m - r, ALPHA)
        coverage = float(np.mean(shortfall <= e))
        _report(f"{noise} top-{k} rank {r + 1} (union bound)", coverage)
        assert coverage >= 1 - ALPHA - MARGIN
        taken[rows, chosen[:, r]] = True


@pytest.mark.parametrize("noise", NOISE_TYPES)
def test_coverage_of_a_quantiles_rank_error(noise):
    rng = np.random.default_rng(99)
    values = rng.normal(50.0, 15.0, 800)
    grid = np.linspace(0.0, 100.0, 21)
    errors = rank_errors(values, grid, 0.5)
    scale = quantile_scale(0.5, epsilon=0.2, noise=noise)
    e = _closed_form(noise, scale, grid.size, ALPHA)
    chosen = report_noisy_max(errors, scale=scale, noise=noise, negate=True, trials=RELEASES,
                              rng=rng)
    excess = errors[chosen] - errors.min()
    coverage = float(np.mean(excess <= e))
    _report(f"{noise} median's excess rank error (union bound, E = {e:.1f} rows)", coverage)
    assert coverage >= 1 - ALPHA - MARGIN


def test_a_planted_bug_without_the_union_bound_is_caught():
    """One pair's bound (alpha, not alpha / (m − 1)) misses far too often in the worst case."""
    rng = np.random.default_rng(5)
    scale, m = 8.0, 12
    e = _closed_form("exponential", scale, 2, ALPHA)
    worst = np.array([100.0] + [100.0 - e * (1 + 1e-9)] * (m - 1))
    chosen = report_noisy_max(worst, scale=scale, noise="exponential", trials=RELEASES,
                              rng=rng)
    assert float(np.mean(worst.max() - worst[chosen] <= e)) < 1 - ALPHA - MARGIN
