"""Intervals for the true value behind a released one: (1 − alpha) from the noise's law and
public parameters only (the scale, the released value, the declared bounds), never the data.

Each mechanism of the catalogue knows its own law (its class's ``_interval_half_width`` and
``_interval_around``); this module combines them for counts and sums, means, tables (per cell
or simultaneous) and monotone post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.checks import check_int, check_probability_open, finite_array
from dpcore.mechanisms.base import AdditiveMechanism, check_mechanism

__all__ = ["DEFAULT_ALPHA", "METHODS", "INTERVAL_OF", "CHOICE_ERROR", "noise_half_width",
           "noise_interval", "table_interval", "mean_interval", "ratio_interval",
           "variance_interval", "monotone_interval"]

#: The default: 95 % intervals.
DEFAULT_ALPHA = 0.05

#: How each interval is computed, in words (the release card says which one a value has).
METHODS = {
    "exact": "from the quantiles of the noise's exact law (for whole-number noise the whole "
             "quantile, so the level is at least the one stated)",
    "range": "the interval of the noise before the answer range was applied, intersected with "
             "what the range says (conservative where the range conditions the noise)",
    "per cell": "each cell's interval holds at the stated level on its own",
    "simultaneous": "all cells of the table hold at once at the stated level (Bonferroni: each "
                    "cell at alpha / cells)",
    "mean": "conservative: alpha split equally between the sum's and the count's intervals, "
            "the ratio's extremes over both (a count below 1 is raised to 1: a mean has at least "
            "one value), then the declared bounds",
    "variance": "conservative: alpha split equally between the intervals of the count, the sum "
                "of deviations and the sum of squared deviations, the variance's extremes over "
                "all three by interval arithmetic (a count below 1 is raised to 1), then the "
                "public range [0, ((upper − lower)/2)²]",
    "shortfall": "for a choice by report noisy max: how far the chosen candidate's true count "
                 "falls short of the top true count among the candidates not chosen before it "
                 "(rank 1: the top count), from 0 to the upper end at the stated level for each "
                 "rank on its own; conservative: a union bound over the other candidates on "
                 "the law of the difference of two noises at the noise's scale "
                 "(dpcore.rank_intervals)",
    "rank": "for a quantile chosen from a grid: how far the released candidate's rank error "
            "(|#{values below it} − q·n| when no value equals it; OpenDP's score over its "
            "denominator) exceeds the smallest rank error of the grid's candidates, in rows, "
            "from 0 to the upper end at the stated level for each level on its own; "
            "conservative: a union bound over the other candidates on the noise's law at its "
            "scale (dpcore.rank_intervals). How far the grid's best candidate is from the "
            "true quantile depends on the data and is not bounded",
    "conditional": "for a group found by partition selection, conditional on the group being "
                   "kept: its released count is the selection's own noisy count, and the "
                   "interval comes from that noise's law before selection; a kept group's "
                   "noise leans upwards, so near the threshold it may cover less than stated",
    "kept": "for a group found by partition selection, conditional on the group being kept: "
            "its value's noise is drawn apart from the selection's, so the interval holds at "
            "the stated level for each group kept",
}

#: What an interval bounds when it is not the released value's true value, by method: a
#: released category or grid value has no error, its choice's shortfall does.
INTERVAL_OF = {
    "shortfall": "shortfall from the top count",
    "rank": "excess rank error over the grid's best candidate, in rows",
}
#: A choice's bound for a table cell, its upper end in braces: never written as an interval,
#: so that a rank error in rows cannot be read as bounds on the released value. Short, to fit
#: a table's column: the chosen category's true count at most {} below the top true count
#: among those not chosen before it; the released grid value's rank error at most the grid's
#: best candidate's plus {} rows.
CHOICE_ERROR = {
    "shortfall": "count ≤ {} below the top",
    "rank": "rank error ≤ best + {} rows",
}


def noise_half_width(mechanism: AdditiveMechanism, alpha: float = DEFAULT_ALPHA) -> float:
    """The smallest a (whole for whole-number noise) with P(|noise| > a) <= ``alpha`` for
    every true value the mechanism accepts: a (1 − alpha) bound on the error, read off the
    mechanism's law and its public parameters.

    Symmetric noise puts alpha / 2 in each tail, so ``noise_interval`` is the equal-tailed
    interval. Laplace: b·ln(1/alpha); Gaussian: sigma·Φ⁻¹(1 − alpha/2); geometric and
    discrete Gaussian: their whole quantile; staircase: its exact tail. The bounded Laplace,
    whose noise depends on the true value, gets a bound that holds for all of them.
    """
    mechanism = check_mechanism("mechanism", mechanism)
    alpha = check_probability_open("alpha", alpha)
    return float(mechanism._interval_half_width(alpha))


def noise_interval(mechanism: AdditiveMechanism, released: ArrayLike,
                   alpha: float = DEFAULT_ALPHA) -> tuple[NDArray[np.float64],
                                                          NDArray[np.float64]]:
    """(lower, upper) holding the true value behind each of ``released`` with probability at
    least 1 − ``alpha``, each value on its own (any shape: releases, cells).

    A mechanism with an answer range intersects the interval with what its range says (an
    end at ±inf where a clamped value says only "at or beyond the bound").
    """
    mechanism = check_mechanism("mechanism", mechanism)
    values = finite_array("released", released)
    half = noise_half_width(mechanism, alpha)
    return mechanism._interval_around(values, half)


def table_interval(mechanism: AdditiveMechanism, released: ArrayLike,
                   alpha: float = DEFAULT_ALPHA, *, simultaneous: bool = False,
                   cells: int | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Intervals for the cells of a noisy table (or histogram).

    Per cell (default), each cell's interval holds at 1 − ``alpha``; ``simultaneous``, all
    ``cells`` at once (by default the table's size: its last axes beyond the releases are
    not told apart, so pass ``cells`` when ``released`` holds many releases) at 1 − alpha,
    each cell at alpha / cells (Bonferroni: true whatever the noises' dependence).
    """
    values = finite_array("released", released)
    if simultaneous:
        cells = check_int("cells", values.size if cells is None else cells, minimum=1)
        alpha = check_probability_open("alpha", alpha) / cells
    return noise_interval(mechanism, values, alpha)


def ratio_interval(numerator_lower: ArrayLike, numerator_upper: ArrayLike,
                   denominator_lower: ArrayLike, denominator_upper: ArrayLike, *,
                   least_denominator: float = 1.0, lower: float = -math.inf,
                   upper: float = math.inf) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The range of n / d over n in [numerator_lower, numerator_upper] and d in
    [max(denominator_lower, least_denominator), denominator_upper], intersected with [lower,
    upper] (the declared bounds of a mean).

    The denominator is at least ``least_denominator`` > 0 (a mean has at least one value),
    so the ratio is monotone in each argument and its extremes are at the corners. (Where
    the denominator's whole interval lies below ``least_denominator``, it missed the true
    denominator, which is allowed for by the level; the ratio is then read at it.)
    """
    least = float(least_denominator)
    if not least > 0:
        raise ValueError(f"least_denominator must be > 0, got {least_denominator!r}")
    n_low = np.asarray(numerator_lower, dtype=np.float64)
    n_high = np.asarray(numerator_upper, dtype=np.float64)
    d_low = np.maximum(np.asarray(denominator_lower, dtype=np.float64), least)
    d_high = np.maximum(np.asarray(denominator_upper, dtype=np.float64), d_low)
    with np.errstate(invalid="ignore"):  # inf / inf where a clamped end is open: no bound
        corners_low = np.stack(np.broadcast_arrays(n_low / d_low, n_low / d_high))
        corners_high = np.stack(np.broadcast_arrays(n_high / d_low, n_high / d_high))
    low = np.nan_to_num(corners_low, nan=-math.inf).min(axis=0)
    high = np.nan_to_num(corners_high, nan=math.inf).max(axis=0)
    low = np.clip(low, lower, upper)
    high = np.clip(high, lower, upper)
    return low, high


def mean_interval(sum_mechanism: AdditiveMechanism, noisy_sum: ArrayLike,
                  count_mechanism: AdditiveMechanism, noisy_count: ArrayLike, *,
                  lower: float, upper: float, alpha: float = DEFAULT_ALPHA
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(lower, upper) for a mean released as a noisy sum over a noisy count, at least
    1 − ``alpha``: conservative, by splitting alpha equally between the sum's and the count's
    intervals (both hold with probability 1 − alpha by the union bound) and taking the
    ratio's extremes over both (:func:`ratio_interval`), within the declared bounds
    [``lower``, ``upper``] the values were clamped to.
    """
    alpha = check_probability_open("alpha", alpha)
    s_low, s_high = noise_interval(sum_mechanism, noisy_sum, alpha / 2)
    c_low, c_high = noise_interval(count_mechanism, noisy_count, alpha / 2)
    return ratio_interval(s_low, s_high, c_low, c_high, lower=lower, upper=upper)


def variance_interval(count_mechanism: AdditiveMechanism, noisy_count: ArrayLike,
                      deviations_mechanism: AdditiveMechanism, noisy_deviations: ArrayLike,
                      squares_mechanism: AdditiveMechanism, noisy_squares: ArrayLike, *,
                      half_width: float, alpha: float = DEFAULT_ALPHA
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(lower, upper) for a variance released as S₂/n − (S₁/n)² from a noisy count n, sum of
    deviations S₁ and sum of squared deviations S₂ (deviations from the bounds' midpoint, in
    [−h, h] with h = ``half_width``), at least 1 − ``alpha``.

    Conservative: alpha split equally between the three parts' intervals (all three hold with
    probability 1 − alpha by the union bound); on that box the function is not monotone in
    S₁, so it is bounded by interval arithmetic: S₁/n and S₂/n by their corners
    (:func:`ratio_interval`, n raised to 1), (S₁/n)² by its extremes (0 where the interval
    holds 0), then S₂/n − (S₁/n)² from the ends; intersected with [0, h²], where every
    variance of values in [L, U] lies.
    """
    alpha = check_probability_open("alpha", alpha) / 3
    half = float(half_width)
    if not 0 < half < math.inf:
        raise ValueError(f"half_width must be positive and finite, got {half_width!r}")
    n_low, n_high = noise_interval(count_mechanism, noisy_count, alpha)
    d_low, d_high = noise_interval(deviations_mechanism, noisy_deviations, alpha)
    s_low, s_high = noise_interval(squares_mechanism, noisy_squares, alpha)
    m_low, m_high = ratio_interval(d_low, d_high, n_low, n_high)
    q_low, q_high = ratio_interval(s_low, s_high, n_low, n_high)
    square_high = np.maximum(m_low * m_low, m_high * m_high)
    square_low = np.where((m_low <= 0) & (m_high >= 0), 0.0,
                          np.minimum(m_low * m_low, m_high * m_high))
    with np.errstate(invalid="ignore"):  # inf − inf where an end is open: no bound
        low = np.nan_to_num(q_low - square_high, nan=-math.inf)
        high = np.nan_to_num(q_high - square_low, nan=math.inf)
    top = half * half
    return np.clip(low, 0.0, top), np.clip(high, 0.0, top)


def monotone_interval(lower: ArrayLike, upper: ArrayLike,
                      transform: Callable[[NDArray[np.float64]], ArrayLike]
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """An interval after post-processing by a non-decreasing ``transform`` (clipping at 0,
    rounding to whole numbers): (transform(lower), transform(upper)).

    Valid for a true value that the transform leaves as it is (a count is ≥ 0 and whole):
    lower <= true <= upper gives transform(lower) <= true <= transform(upper).
    """
    low = np.asarray(transform(np.asarray(lower, dtype=np.float64)), dtype=np.float64)
    high = np.asarray(transform(np.asarray(upper, dtype=np.float64)), dtype=np.float64)
    if np.any(low > high):
        raise ValueError("transform must be non-decreasing: it put a lower end above an "
                         "upper end")
    return low, high

