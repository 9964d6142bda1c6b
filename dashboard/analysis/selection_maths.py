"""How often report noisy max (or top-k) picks the right candidate: exact and simulated
picks at one privacy level, P(correct) across levels, and the cached wrappers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import streamlit as st
from numpy.typing import ArrayLike, NDArray

from dashboard.analysis.selection_choices import _RNG_OFFSET, EPSILON_GRID, RHO_GRID
from dashboard.analysis.selection_privacy import noise_scale, privacy_map_text
from dpcore.checks import check_int, trial_chunks
from dpcore.intervals import DEFAULT_ALPHA
from dpcore.rank_intervals import top_k_shortfalls
from dpcore.selection import (
    NOISE_TYPES,
    expected_score_gap,
    noisy_max_privacy,
    noisy_top_k,
    prob_best_selected,
    report_noisy_max,
    selection_probabilities,
)
from plan.parts import NoisyMax

#: At most this many noise draws (trials × candidates × k) per simulation, so a rerun stays
#: around a second; the page says when fewer releases than asked for were simulated.
MAX_DRAWS = 20_000_000
#: Points per decade of the privacy-level axis of the P(correct) curves, and the most points.
CURVE_POINTS_PER_DECADE = 6
CURVE_MAX_POINTS = 72
TOP_K_CURVE_POINTS = 20
TOP_K_MAX_TRIALS = 2_000
TOP_K_MIN_TRIALS = 200
_Z95 = 1.959963984540054


def binomial_half_width(p: ArrayLike, trials: int) -> NDArray[np.float64]:
    """Half-width of the 95% normal interval for a frequency: 1.96·√(p(1−p)/N)."""
    p = np.asarray(p, dtype=np.float64)
    return _Z95 * np.sqrt(p * (1 - p) / trials)


def simulated_trials(requested: int, candidates: int, k: int = 1) -> int:
    """Releases to simulate: as asked, but at most MAX_DRAWS noise draws (never under 1,000)."""
    return int(min(requested, max(1_000, MAX_DRAWS // (candidates * k))))


def simulate_picks(scores: ArrayLike, *, scale: float, noise: str, negate: bool, k: int,
                   trials: int, rng: np.random.Generator) -> tuple[NDArray, NDArray, float | None]:
    """Simulate ``trials`` releases; return (first-pick counts, top-k inclusion counts,
    share of releases that recovered a true top-k set, or None when k = 1).

    With k > 1 each release is one run of ``noisy_top_k``; its first pick has the same
    distribution as report noisy max at that scale. Simulated in chunks and reduced to counts
    per candidate, so nothing of size ``trials`` is kept.
    """
    values = np.asarray(scores, dtype=np.float64)
    d = values.size
    first = np.zeros(d, dtype=np.int64)
    included = np.zeros(d, dtype=np.int64)
    oriented = -values if negate else values
    kth_best = np.partition(oriented, d - k)[d - k]
    recovered = 0
    for chunk in trial_chunks(trials, d * k):
        if k == 1:
            picks = np.asarray(report_noisy_max(values, scale=scale, noise=noise, negate=negate,
                                                trials=chunk, rng=rng))
            first += np.bincount(picks, minlength=d)
            continue
        chosen = noisy_top_k(values, k, scale=scale, noise=noise, negate=negate, trials=chunk,
                             rng=rng)
        first += np.bincount(chosen[:, 0], minlength=d)
        included += np.bincount(chosen.ravel(), minlength=d)
        recovered += int(np.all(oriented[chosen] >= kth_best, axis=1).sum())
    if k == 1:
        return first, first.copy(), None
    return first, included, recovered / trials


@dataclass(frozen=True, eq=False)
class SelectionSummary:
    """What the page shows for one setting: exact and simulated picks, and sentences;
    ``mechanism`` the report noisy max simulated (its ``scale`` is :attr:`scale`)."""

    labels: tuple[str, ...]
    scores: NDArray[np.float64]
    mechanism: NoisyMax
    scale: float
    exact: NDArray[np.float64]
    empirical: NDArray[np.float64]
    half_width: NDArray[np.float64]
    inclusion: NDArray[np.float64] | None
    trials: int
    requested_trials: int
    within_band: int
    p_correct: float
    expected_gap: float
    top_k: float | None
    best: NDArray[np.bool_]
    map_text: str


def summarise_selection(scores: ArrayLike, labels: tuple[str, ...], *, mechanism: NoisyMax,
                        level: float, trials: int, seed: int) -> SelectionSummary:
    """Exact probabilities, simulated frequencies (seeded numpy draws of exactly the law
    ``mechanism`` names: its noise at its scale, its k, its direction) and the privacy map
    that turns ``level`` into its scale."""
    values = np.asarray(scores, dtype=np.float64)
    k = check_int("k", mechanism.k, minimum=1, maximum=values.size)
    scale, noise, negate = float(mechanism.scale), mechanism.noise, mechanism.negate
    exact = selection_probabilities(values, scale=scale, noise=noise, negate=negate)
    simulated = simulated_trials(trials, values.size, k)
    rng = np.random.default_rng([seed, _RNG_OFFSET, 0])
    first, included, recovered = simulate_picks(values, scale=scale, noise=noise, negate=negate,
                                                k=k, trials=simulated, rng=rng)
    empirical = first / simulated
    oriented = -values if negate else values
    # 1e-12 absorbs the rounding of exact probabilities at 0 or 1 (a zero-width band).
    within = np.abs(empirical - exact) <= binomial_half_width(exact, simulated) + 1e-12
    return SelectionSummary(
        labels=labels, scores=values, mechanism=mechanism, scale=scale, exact=exact,
        empirical=empirical,
        half_width=binomial_half_width(empirical, simulated),
        inclusion=included / simulated if k > 1 else None, trials=simulated,
        requested_trials=trials, within_band=int(within.sum()),
        p_correct=prob_best_selected(values, scale=scale, noise=noise, negate=negate),
        expected_gap=expected_score_gap(values, scale=scale, noise=noise, negate=negate),
        top_k=recovered, best=oriented == oriented.max(),
        map_text=privacy_map_text(noise=noise, measure=mechanism.measure, level=level,
                                  sensitivity=mechanism.sensitivity,
                                  monotonic=mechanism.monotonic, k=k, scale=scale),
    )


def shortfall_bounds(mechanism: NoisyMax, candidates: int, alpha: float = DEFAULT_ALPHA
                     ) -> NDArray[np.float64]:
    """E_r for each rank r = 1..k: with probability at least 1 − ``alpha`` (each rank on its
    own), the score picked at rank r falls short of the best score among the candidates not
    picked before it by at most E_r. What the selection kind's release states (its
    ``intervals``, method "shortfall": ``dpcore.rank_intervals.top_k_shortfalls``), from the
    noise's law, its scale and the number of candidates only: it holds for any scores, so for
    a pick of the smallest (the same law, the scores negated) and for the teaching sources."""
    return top_k_shortfalls(mechanism.noise, float(mechanism.scale), int(candidates),
                            int(mechanism.k), alpha)


def curve_levels(scores: ArrayLike, *, measure: str, sensitivity: float, monotonic: bool,
                 negate: bool, k: int) -> NDArray[np.float64]:
    """Privacy levels for the P(correct) curves: the page's slider range, widened to show the
    whole climb from picking at random to picking right (for these scores).

    Random picking: noise scale 10 × the spread of the scores. Right almost always: scale
    gap / (log d + 5), gap = the smallest positive gap among the top k + 1 scores. The levels
    follow from these scales through the privacy maps (the Gumbel one for the lowest ρ, the
    Laplace one for the highest).
    """
    values = np.sort(-np.asarray(scores, dtype=np.float64) if negate
                     else np.asarray(scores, dtype=np.float64))[::-1]
    grid = EPSILON_GRID if measure == "pure" else RHO_GRID
    low, high = grid[0], grid[-1]
    spread = float(values[0] - values[-1])
    gaps = -np.diff(values[: k + 1])
    gaps = gaps[gaps > 0]
    if spread > 0:
        gap = float(gaps.min()) if gaps.size else spread
        fine = gap / (math.log(values.size) + 5)
        coarse = 10 * spread
        lows = [noisy_max_privacy(coarse, sensitivity=sensitivity, noise=n, monotonic=monotonic,
                                  k=k, measure=measure) for n in NOISE_TYPES]
        highs = [noisy_max_privacy(fine, sensitivity=sensitivity, noise=n, monotonic=monotonic,
                                   k=k, measure=measure) for n in NOISE_TYPES]
        attr = "epsilon" if measure == "pure" else "rho"
        low = min(low, min(getattr(p, attr) for p in lows))
        high = max(high, max(getattr(p, attr) for p in highs))
    # Keep the axis sane for extreme inputs (ε from 1e-8 to 1e6, ρ its square / 2).
    floor, ceiling = (1e-8, 1e6) if measure == "pure" else (1e-16, 1e12)
    low, high = max(low, floor), min(high, ceiling)
    decades = math.log10(high / low)
    points = int(min(CURVE_MAX_POINTS, max(12, math.ceil(decades * CURVE_POINTS_PER_DECADE))))
    return np.geomspace(low, high, points)


def p_correct_curve(scores: ArrayLike, levels: ArrayLike, *, noise: str, measure: str,
                    sensitivity: float, monotonic: bool, negate: bool,
                    k: int = 1) -> NDArray[np.float64]:
    """Exact P(a best candidate is the (first) pick) at each privacy level, for one noise."""
    return np.array([
        prob_best_selected(scores, negate=negate, noise=noise, scale=noise_scale(
            measure, float(level), noise=noise, sensitivity=sensitivity, monotonic=monotonic,
            k=k))
        for level in np.asarray(levels, dtype=np.float64)
    ])


def top_k_trials(candidates: int, k: int, points: int) -> int:
    """Trials per point of the top-k curves: all three noises together stay under MAX_DRAWS."""
    budget = MAX_DRAWS // (len(NOISE_TYPES) * points * candidates * k)
    return int(min(TOP_K_MAX_TRIALS, max(TOP_K_MIN_TRIALS, budget)))


def top_k_curve(scores: ArrayLike, levels: ArrayLike, *, noise: str, measure: str,
                sensitivity: float, monotonic: bool, negate: bool, k: int, trials: int,
                rng: np.random.Generator) -> NDArray[np.float64]:
    """Simulated P(the k picks are a true top-k set) at each privacy level (Monte Carlo)."""
    values = np.asarray(scores, dtype=np.float64)
    out = []
    for level in np.asarray(levels, dtype=np.float64):
        scale = noise_scale(measure, float(level), noise=noise, sensitivity=sensitivity,
                            monotonic=monotonic, k=k)
        _, _, recovered = simulate_picks(values, scale=scale, noise=noise, negate=negate, k=k,
                                         trials=trials, rng=rng)
        out.append(recovered)
    return np.array(out, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class CorrectnessCurves:
    """P(correct) against the privacy level for the three noises; top-k curves when k > 1."""

    levels: NDArray[np.float64]
    p_correct: dict[str, NDArray[np.float64]]
    chance: float
    top_k_levels: NDArray[np.float64] | None = None
    top_k: dict[str, NDArray[np.float64]] | None = None
    top_k_trials: int = 0


def level_reaching(levels: ArrayLike, values: ArrayLike, target: float) -> float | None:
    """The smallest level on the curve from which it stays at or above ``target``."""
    levels = np.asarray(levels, dtype=np.float64)
    below = np.flatnonzero(np.asarray(values, dtype=np.float64) < target)
    if below.size == 0:
        return float(levels[0])
    if below[-1] == levels.size - 1:
        return None
    return float(levels[below[-1] + 1])


def compute_curves(scores: ArrayLike, *, measure: str, sensitivity: float, monotonic: bool,
                   negate: bool, k: int, seed: int) -> CorrectnessCurves:
    """Exact P(correct) curves for the three noises; simulated top-k curves when k > 1."""
    values = np.asarray(scores, dtype=np.float64)
    k = check_int("k", k, minimum=1, maximum=values.size)
    levels = curve_levels(values, measure=measure, sensitivity=sensitivity, monotonic=monotonic,
                          negate=negate, k=k)
    common = {"measure": measure, "sensitivity": sensitivity, "monotonic": monotonic,
              "negate": negate, "k": k}
    p_correct = {n: p_correct_curve(values, levels, noise=n, **common) for n in NOISE_TYPES}
    oriented = -values if negate else values
    chance = float(np.mean(oriented == oriented.max()))
    if k == 1:
        return CorrectnessCurves(levels, p_correct, chance)
    stride = max(1, math.ceil(levels.size / TOP_K_CURVE_POINTS))
    top_levels = levels[::stride]
    trials = top_k_trials(values.size, k, top_levels.size)
    top = {n: top_k_curve(values, top_levels, noise=n, trials=trials,
                          rng=np.random.default_rng([seed, _RNG_OFFSET, 1, i]), **common)
           for i, n in enumerate(NOISE_TYPES)}
    return CorrectnessCurves(levels, p_correct, chance, top_levels, top, trials)


def top_k_standard_error(curves: CorrectnessCurves) -> float:
    """Largest standard error of a simulated probability: 0.5/√trials (at p = 1/2)."""
    return 0.5 / math.sqrt(max(curves.top_k_trials, 1))


@st.cache_data(show_spinner=False, max_entries=64)
def selection_summary(scores: tuple[float, ...], labels: tuple[str, ...], *,
                      mechanism: NoisyMax, level: float, trials: int,
                      seed: int) -> SelectionSummary:
    """:func:`summarise_selection`, cached by every parameter and the seed."""
    return summarise_selection(scores, labels, mechanism=mechanism, level=level, trials=trials,
                               seed=seed)


@st.cache_data(show_spinner=False, max_entries=32)
def correctness_curves(scores: tuple[float, ...], *, measure: str, sensitivity: float,
                       monotonic: bool, negate: bool, k: int, seed: int) -> CorrectnessCurves:
    """:func:`compute_curves`, cached; independent of the noise and the level chosen, so moving
    the slider never recomputes it."""
    return compute_curves(scores, measure=measure, sensitivity=sensitivity, monotonic=monotonic,
                          negate=negate, k=k, seed=seed)
