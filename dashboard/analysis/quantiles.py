"""Quantiles page: the median and other quantiles of a numeric column by the exponential
mechanism over a public grid of candidates, with the exact output distribution and accuracy.

The candidates' scores #{x < c} come from the engine (``Binned`` with rank cells); the true
quantile from the column's distinct values (a second ``Binned``), when there are few enough.
Plain functions and one cached wrapper, ``quantile_release``; no widgets.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.data import facts
from dashboard.datasets import LoadedDataset
from dashboard.exports import noise_stream
from dashboard.person import PrivacyUnit
from dpcore import figures
from dpcore.quantiles import (
    expected_rank_error,
    quantile_accuracy,
    quantile_probabilities,
    quantile_sensitivity,
    rank_errors,
    sample_quantile,
    split_quantile_budget,
    true_quantile,
)
from engine import Binned, Contribution, DistinctValues
from engine.queries import MAX_POINTS

#: Most candidates the page scores (the engine's limit on a binned query's points).
MAX_CANDIDATES = MAX_POINTS
#: Most quantiles released together on the page.
MAX_LEVELS = 20
#: Candidates of an evenly spaced grid unless the user says otherwise.
DEFAULT_POINTS = 201
#: The quantiles the page starts with.
DEFAULT_LEVELS = "0.5"
GRID_MODES = {"even": "Evenly spaced between two bounds", "typed": "Typed list of candidates"}
_RNG_OFFSET = 7   # the Quantiles page's own random stream


# --------------------------------------------------------------------------------------------
# What the user asks: the column, the grid, the quantiles


@dataclass(frozen=True)
class GridBounds:
    """Where an evenly spaced grid starts and ends, and whether that was read off the data."""

    lower: float
    upper: float
    from_data: bool


def default_bounds(loaded: LoadedDataset, column: str) -> GridBounds:
    """The column's declared bounds; else its smallest and largest value (flagged: read off
    the data); else [0, 1]."""
    domain = loaded.domains.get(column)
    if domain is not None and domain.kind == "numeric":
        return GridBounds(float(domain.lower), float(domain.upper), False)
    found = facts.value_range(loaded.relation, column)
    if found is not None and all(map(math.isfinite, found)) and found[0] < found[1]:
        return GridBounds(float(found[0]), float(found[1]), True)
    return GridBounds(0.0, 1.0, False)


def default_points(loaded: LoadedDataset, column: str, bounds: GridBounds) -> int:
    """One candidate per whole number for a whole-number column over a short range, else
    ``DEFAULT_POINTS``."""
    domain = loaded.domains.get(column)
    span = bounds.upper - bounds.lower
    if domain is not None and domain.integer and float(bounds.lower).is_integer() \
            and float(bounds.upper).is_integer() and span <= 1000:
        return int(span) + 1
    return DEFAULT_POINTS


def default_alpha(loaded: LoadedDataset, column: str, bounds: GridBounds) -> float:
    """One step of the default grid: the score counts values strictly below a candidate, so
    on whole numbers with ties the mechanism aims at the candidate just above the true
    quantile, and a narrower α would miss it."""
    step = (bounds.upper - bounds.lower) / (default_points(loaded, column, bounds) - 1)
    return float(step) if step > 0 else 1.0


def even_grid(lower: float, upper: float, points: int) -> NDArray[np.float64]:
    """``points`` evenly spaced candidates from ``lower`` to ``upper`` (both included)."""
    if not (math.isfinite(lower) and math.isfinite(upper)) or not lower < upper:
        raise ValueError(f"the grid's lower end ({lower:g}) must be below its upper end "
                         f"({upper:g})")
    if not 2 <= points <= MAX_CANDIDATES:
        raise ValueError(f"the grid needs from 2 to {MAX_CANDIDATES:,} candidates, got "
                         f"{points:,}")
    grid = np.unique(np.linspace(lower, upper, int(points)))
    if grid.size < 2:  # pragma: no cover — lower < upper gives two distinct ends
        raise ValueError("the grid's ends are too close together")
    return grid


def typed_grid(text: str) -> NDArray[np.float64]:
    """Candidates typed as numbers separated by commas, spaces or semicolons (sorted, each
    once)."""
    parts = [p for p in re.split(r"[,;\s]+", text.strip()) if p]
    if not parts:
        raise ValueError("the list of candidates is empty: type at least one number, e.g. "
                         "10, 20, 30")
    try:
        values = np.array([float(p) for p in parts])
    except ValueError:
        bad = next(p for p in parts if not _is_number(p))
        raise ValueError(f"{bad[:40]!r} is not a number: type the candidates as numbers "
                         "separated by commas") from None
    if not np.all(np.isfinite(values)):
        raise ValueError("the candidates must be finite numbers (no nan or inf)")
    grid = np.unique(values)
    if grid.size > MAX_CANDIDATES:
        raise ValueError(f"at most {MAX_CANDIDATES:,} candidates, got {grid.size:,}")
    return grid


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_levels(text: str) -> tuple[float, ...]:
    """Quantiles typed as numbers in [0, 1] ("0.25, 0.5, 0.75"), each once, in order."""
    parts = [p for p in re.split(r"[,;\s]+", text.strip()) if p]
    if not parts:
        raise ValueError("no quantile given: type at least one number between 0 and 1, e.g. "
                         "0.5 for the median")
    if not all(_is_number(p) for p in parts):
        bad = next(p for p in parts if not _is_number(p))
        raise ValueError(f"{bad[:40]!r} is not a number: type quantiles such as 0.25, 0.5")
    levels = sorted({float(p) for p in parts})
    if not all(0 <= q <= 1 for q in levels):
        raise ValueError("quantiles must lie between 0 and 1 (0.5 is the median, 0.9 the "
                         "90th percentile)")
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"at most {MAX_LEVELS} quantiles at once, got {len(levels)}")
    return tuple(levels)


def level_name(q: float) -> str:
    return "median" if q == 0.5 else f"{q:g}-quantile"


def rows_per_person(unit: PrivacyUnit) -> int:
    """r: the most rows one person keeps for a quantile (all their rows, no groups)."""
    return unit.max_rows


def contribution(unit: PrivacyUnit, seed: int) -> Contribution | None:
    """The engine's truncation for a quantile: at most r rows per person in all (a quantile
    has no groups, so a group bound does not apply)."""
    if unit.person is None:
        return None
    return Contribution(unit.person, unit.max_rows, None, seed)


# --------------------------------------------------------------------------------------------
# From the engine: the candidates' scores and the true quantiles


def rank_cells(relation, column: str, grid: NDArray[np.float64],
               bound: Contribution | None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The column as weighted stand-in values that give every candidate its exact
    #{x < c}: one value per rank cell of ``Binned(cells="ranks")`` (a value just below each
    candidate for the values between it and the one before, the candidate itself for the
    values equal to it, the last candidate for those above), weighted by the cell's count.

    Returns (values, weights), each of 2m + 1 entries for m candidates.
    """
    counts = np.asarray(relation.answer(Binned(column, tuple(map(float, grid)), cells="ranks",
                                               contribution=bound)).counts, dtype=np.float64)
    m = grid.size
    values = np.empty(2 * m + 1)
    values[0:2 * m:2] = np.nextafter(grid, -np.inf)   # strictly between two candidates
    values[1::2] = grid                               # equal to a candidate
    values[2 * m] = grid[-1]                          # above the last: not below any
    return values, counts


def distinct_values(relation, column: str, bound: Contribution | None
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Every distinct finite value and how many (kept) rows have it; None when there are
    more than ``MAX_CANDIDATES`` of them or an infinite value (no exact true quantile)."""
    found = relation.answer(DistinctValues(column, limit=MAX_CANDIDATES))
    values = np.array([float(v) for v in found.values], dtype=np.float64)
    if found.more or values.size == 0 or not np.all(np.isfinite(values)):
        return None
    counts = np.asarray(relation.answer(Binned(column, tuple(values), cells="ranks",
                                               contribution=bound)).counts, dtype=np.float64)
    if counts[0::2].sum() > 0:   # a value between the distinct values: cannot be
        return None               # pragma: no cover
    return values, counts[1::2]


# --------------------------------------------------------------------------------------------
# The release


@dataclass(frozen=True)
class QuantileResult:
    """One quantile: its budget share, sensitivity, the exact distribution over the
    candidates, the true quantile (None when it cannot be read exactly), one simulated
    release and the exact accuracy."""

    q: float
    epsilon: float
    sensitivity: float
    probabilities: NDArray[np.float64]
    true_value: float | None
    released: float
    within_alpha: float | None
    expected_rank_error: float
    released_rank_error: float
    best_rank_error: float


@dataclass(frozen=True)
class QuantileRelease:
    """Every quantile asked, over one grid, with the numbers behind them."""

    grid: NDArray[np.float64]
    results: tuple[QuantileResult, ...]
    rows: int
    max_rows: int
    epsilon: float
    alpha: float
    stream: int


@st.cache_data(show_spinner=False, max_entries=32)
def quantile_release(_relation, data_key: str, column: str, grid: tuple[float, ...],
                     levels: tuple[float, ...], epsilon: float, unit: PrivacyUnit,
                     alpha: float, seed: int) -> QuantileRelease:
    """Cached: the exact distribution, accuracy and one simulated release of each quantile."""
    if not alpha > 0 or not math.isfinite(alpha):
        raise ValueError(f"α must be a positive number, got {alpha:g}")
    points = np.asarray(grid, dtype=np.float64)
    bound = contribution(unit, seed)
    values, weights = rank_cells(_relation, column, points, bound)
    if not weights.sum() > 0:
        raise ValueError(f"the column {column!r} has no value to take a quantile of (all "
                         "missing)")
    exact = distinct_values(_relation, column, bound)
    r = rows_per_person(unit)
    share = split_quantile_budget(epsilon, len(levels))
    stream = noise_stream(data_key, _relation, "quantiles", column, grid[0], grid[-1],
                          len(grid), levels)
    rng = np.random.default_rng([seed, _RNG_OFFSET, stream])
    results = []
    for q in levels:
        probs = quantile_probabilities(values, points, q, epsilon=share, max_rows=r,
                                       counts=weights)
        released = float(sample_quantile(values, points, q, epsilon=share, max_rows=r,
                                         counts=weights, rng=rng))
        errors = rank_errors(values, points, q, counts=weights)
        truth = within = None
        if exact is not None:
            truth = true_quantile(exact[0], q, counts=exact[1])
            within = float(quantile_accuracy(exact[0], points, q, alpha, epsilon=share,
                                             max_rows=r, counts=exact[1]))
        results.append(QuantileResult(
            q=q, epsilon=share, sensitivity=quantile_sensitivity(q, max_rows=r),
            probabilities=probs, true_value=truth, released=released,
            within_alpha=within,
            expected_rank_error=expected_rank_error(values, points, q, epsilon=share,
                                                    max_rows=r, counts=weights),
            released_rank_error=float(errors[np.searchsorted(points, released)]),
            best_rank_error=float(errors.min())))
    return QuantileRelease(grid=points, results=tuple(results), rows=int(weights.sum()),
                           max_rows=r, epsilon=epsilon, alpha=alpha, stream=stream)


# --------------------------------------------------------------------------------------------
# What the page says


def budget_sentence(release: QuantileRelease) -> str:
    m = len(release.results)
    share = figures.upper(release.results[0].epsilon, 4)
    if m == 1:
        return (f"**Privacy:** ε = {figures.upper(release.epsilon, 4)} (pure DP), all of it "
                "on this one quantile.")
    return (f"**Privacy:** ε = {figures.upper(release.epsilon, 4)} (pure DP) in all, split "
            f"equally over the {m} quantiles: each is released with ε = {share} (at most), and "
            "by sequential composition the releases together spend at most the total.")


def sensitivity_sentence(release: QuantileRelease, unit: PrivacyUnit) -> str:
    r = release.max_rows
    who = ("one row" if unit.per_row else
           f"one person with up to {r:,} row{'s' if r > 1 else ''} (a quantile has no groups: "
           "each person keeps at most that many rows in all)")
    per = ", ".join(f"{level_name(x.q)} Δ = {figures.upper(x.sensitivity, 4)}"
                    for x in release.results)
    return (f"**Sensitivity** of the score −|#{{x < c}} − q·n|: r·max(q, 1 − q) under "
            f"add/remove of {who} — {per}. **Privacy unit:** {unit.describe()}.")


def results_table(release: QuantileRelease) -> pd.DataFrame:
    """One row per quantile: budget, truth, the simulated release and its exact accuracy."""
    alpha = f"{release.alpha:g}"
    rows = []
    for x in release.results:
        rows.append({
            "Quantile": level_name(x.q),
            "ε spent": figures.upper(x.epsilon, 4),
            "True quantile": "—" if x.true_value is None else f"{x.true_value:,.6g}",
            "Simulated release": f"{x.released:,.6g}",
            f"P(|released − true| ≤ {alpha})": ("—" if x.within_alpha is None
                                                 else figures.percent_lower(x.within_alpha)),
            "Expected rank error": figures.upper(x.expected_rank_error, 4),
            "Rank error of this release": f"{x.released_rank_error:,.6g}",
        })
    return pd.DataFrame(rows)


def accuracy_sentence(release: QuantileRelease, column: str) -> str:
    """The first quantile's accuracy in words (exact, from the output distribution)."""
    x = release.results[0]
    n = release.rows
    text = (f"The released {level_name(x.q)} is {figures.upper(x.expected_rank_error, 4)} "
            f"ranks away from the true one on average (of {n:,} values; the best candidate "
            f"of the grid is {x.best_rank_error:,.6g} ranks away)")
    if x.within_alpha is None:
        return (text + ". The true quantile cannot be read exactly (more than "
                f"{MAX_CANDIDATES:,} distinct values, or infinite ones), so the chance of "
                "landing within α of it is not shown.")
    return (text + f"; it lands within ±{release.alpha:g} of the true value "
            f"{x.true_value:,.6g} with probability {figures.percent_lower(x.within_alpha)} "
            "(exact, from the distribution below).")


def distribution_note(release: QuantileRelease) -> str:
    return ("Exact probabilities, not a simulation: the exponential mechanism picks candidate "
            "c with probability proportional to exp(−ε·|#{x < c} − q·n| / (2Δ)), and the "
            f"grid has {release.grid.size:,} candidates. Missing values are not counted; "
            f"n = {release.rows:,} values. The score counts the values strictly below a "
            "candidate: with many equal values (whole numbers) the most likely candidate can "
            "be the one just above the true quantile.")
