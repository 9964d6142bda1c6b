"""Quantiles page: the median and other quantiles of a numeric column by report noisy min over
a public grid of candidates, with the exact output distribution and accuracy.

The page builds its query as the release plan's query (the one "Add to plan" adds:
``plan_entries.quantiles_query``) and builds it with ``plan.build``: each level is the part a
release draws, with its mechanism (noise, scale, sensitivity) and budget share. Its law and
its simulated draw read OpenDP's scores (``dpcore.quantiles.quantile_scores``) from the
engine's rank cells of the built query, as ``plan.kinds.quantiles`` draws a release: a
simulated release differs from a real one only in who draws the noise (seeded numpy here,
OpenDP in ``release``). The true quantile comes from the column's distinct values (a second
``Binned``), when there are few enough. Plain functions and one cached wrapper,
``quantile_release``; no widgets.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard import number_text
from dashboard.analysis import plan_entries
from dashboard.analysis import selection_choices as sel
from dashboard.analysis.intervals import kind_intervals
from dashboard.analysis.releasable import releasability
from dashboard.data import column_facts
from dashboard.datasets import LoadedDataset
from dashboard.exports import noise_stream
from dashboard.person import PrivacyUnit
from dashboard.person import contribution as truncation
from dpcore import safe_rounding
from dpcore.intervals import DEFAULT_ALPHA
from dpcore.quantiles import (
    probability_within,
    quantile_fraction,
    quantile_scores,
    true_quantile,
)
from dpcore.selection import report_noisy_max, selection_probabilities
from engine import Binned, Contribution, DistinctValues
from engine.queries import MAX_POINTS
from plan import model
from plan.build import Built, NoisyMax, Part, build
from plan.kinds.quantiles import rank_counts

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

#: The privacy measures the page offers, and the noise each starts with: under pure DP the
#: noise OpenDP certifies as ε-DP (permute-and-flip), under zCDP the exponential mechanism
#: (OpenDP certifies it with ρ = ε²/8).
MEASURES = {"pure": "Pure DP (ε)", "zcdp": "zCDP (ρ)"}
DEFAULT_NOISE = {"pure": "exponential", "zcdp": "gumbel"}
#: The noises, named as everywhere else (dpcore's labels: the Selection page, the release
#: plan, a release's description).
NOISES = {"exponential": sel.NOISES["exponential"], "gumbel": sel.NOISES["gumbel"]}
#: How α is written, in the accuracy box and in the sentences and table: the same digits in
#: both (Streamlit's default, two decimals, showed 0.03 for the 0.025 the text used).
ALPHA_FORMAT = "%g"
#: ρ the zCDP measure starts with: Gumbel noise at ρ = 1/8 is the same noise as at ε = 1.
DEFAULT_RHO = 0.125
SYMBOL = {"pure": "ε", "zcdp": "ρ"}


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
    found = column_facts.value_range(loaded.relation, column)
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
    """One step of the default grid: within one candidate of the true quantile."""
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


def contribution(unit: PrivacyUnit, seed: int) -> Contribution | None:
    """The engine's truncation for a quantile: at most r rows per person in all (a quantile
    has no groups, so a group bound does not apply); ``seed`` picks which rows a person keeps
    (the page's seed; a release draws with seed 0)."""
    return truncation(unit, grouped=False, seed=seed)


# --------------------------------------------------------------------------------------------
# The query: the plan's, built as a release builds it


def page_query(unit: PrivacyUnit, *, column: str, levels: tuple[float, ...],
               grid: tuple[float, ...], noise: str, measure: str, budget: float,
               from_data: bool) -> model.PlanQuery:
    """The page's settings as the plan's query: the very query "Add to plan" adds
    (``plan_entries.quantiles_query``), checked and built once under the privacy unit.

    Raises
    ------
    ValueError
        The settings are not a query a release can draw (a grid of one candidate, a budget
        too small for float64, …): the plan's reason, naming its field.
    """
    try:
        return plan_entries.quantiles_query(
            unit, column=column, levels=levels, grid=grid, noise=noise, measure=measure,
            budget=budget, from_data=from_data)
    except model.PlanError as exc:   # the field as the plan file names it, then the reason
        field = exc.field.removeprefix("query.")
        raise ValueError(f"a release cannot draw these settings: the plan's {field} "
                         f"{exc.reason}") from None


def page_built(query: model.PlanQuery, unit: PrivacyUnit) -> Built:
    """The page's query built by ``plan.build`` under the plan's privacy unit: one part per
    level, each the noisy arg-min a release draws."""
    return build(query, plan_entries.plan_unit(unit))


@st.cache_data(show_spinner=False, max_entries=32)
def release_refusal(query: model.PlanQuery, unit: PrivacyUnit) -> str | None:
    """Cached: why a release refuses the page's query as set (OpenDP certifies no measurement
    for it, e.g. Gumbel noise under pure DP), None when it draws it: the page still shows the
    setting's law, as a teaching example no release draws (:func:`teaching_note`). No data is
    read (``analysis.releasable``: the query alone certified as a release would)."""
    return releasability(query, plan_entries.plan_unit(unit)).reason


def teaching_note(reason: str) -> str:
    """What the page says above the results of a setting a release refuses."""
    return (f"**Not releasable as set:** {reason}. What follows is the exact law of this "
            "setting, shown to teach how its noise behaves; no release draws it. The Release "
            "plan panel at the bottom offers settings a release can draw.")


# --------------------------------------------------------------------------------------------
# From the engine: the candidates' scores and the true quantiles


def rank_cells(relation, built: Built, bound: Contribution | None
               ) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """(#{x < c}, #{x = c}, n) for every candidate c, from the built query's engine query
    (the rank cells: the values below the first candidate, equal to it, between it and the
    next, …, above the last) under the page's truncation ``bound``, read as a release reads
    them (``plan.kinds.quantiles.rank_counts``)."""
    [ranks] = built.engine_queries
    counts = relation.answer(replace(ranks, contribution=bound)).counts
    below, equal, total = rank_counts(counts, len(built.query.query.candidates.values))
    return np.asarray(below, dtype=np.int64), np.asarray(equal, dtype=np.int64), total


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


@dataclass(frozen=True, eq=False)
class LevelScores:
    """One level's part (``plan.build``'s) and its candidates' rank errors: OpenDP's scores
    (:func:`dpcore.quantiles.quantile_scores`, what ``plan.kinds.quantiles`` hands the
    release's measurement) over the level's denominator, in the units of the part's scale."""

    part: Part
    errors: NDArray[np.float64]

    @property
    def mechanism(self) -> NoisyMax:
        return self.part.mechanism

    def probabilities(self) -> NDArray[np.float64]:
        """The exact law of the candidate the part releases (its noise at its scale)."""
        m = self.mechanism
        return selection_probabilities(self.errors, scale=m.scale, noise=m.noise,
                                       negate=m.negate)

    def draw(self, *, rng: np.random.Generator, trials: int | None = None
             ) -> int | NDArray[np.int64]:
        """Index of the released candidate (``trials`` of them): the part's noise added to
        each rank error, the smallest taken — seeded numpy in place of OpenDP's sampler."""
        m = self.mechanism
        return report_noisy_max(self.errors, scale=m.scale, noise=m.noise, negate=m.negate,
                                trials=trials, rng=rng)


def level_scores(built: Built, below: NDArray, equal: NDArray, total: int
                 ) -> tuple[LevelScores, ...]:
    """Each built part with its candidates' rank errors, in the release's order."""
    out = []
    for part in built.parts:
        _, den = quantile_fraction(part.quantile)
        scores = quantile_scores(below, equal, total, part.quantile)
        out.append(LevelScores(part, scores.astype(np.float64) / den))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# The release


@dataclass(frozen=True)
class QuantileResult:
    """One quantile: the mechanism ``plan.build`` gives its part, its budget share (ε or ρ:
    the part's planned loss), the exact distribution over the candidates, the true quantile
    (None when it cannot be read exactly), one simulated release and the exact accuracy;
    ``excess_bound``: E, in rows, such that with probability 1 − ``DEFAULT_ALPHA`` the
    released candidate's rank error is at most the best candidate's + E, as a release
    computes it (the kind's intervals, method "rank": None where it gives none)."""

    q: float
    mechanism: NoisyMax
    budget: float
    probabilities: NDArray[np.float64]
    true_value: float | None
    released: float
    within_alpha: float | None
    expected_rank_error: float
    released_rank_error: float
    best_rank_error: float
    excess_bound: float | None = None

    @property
    def sensitivity(self) -> float:
        return self.mechanism.sensitivity

    @property
    def scale(self) -> float:
        return self.mechanism.scale


@dataclass(frozen=True)
class QuantileRelease:
    """Every quantile asked, over one grid, with the numbers behind them."""

    grid: NDArray[np.float64]
    results: tuple[QuantileResult, ...]
    rows: int
    max_rows: int
    measure: str
    noise: str
    budget: float
    alpha: float
    stream: int

    @property
    def symbol(self) -> str:
        return SYMBOL[self.measure]


@st.cache_data(show_spinner=False, max_entries=32)
def quantile_release(_relation, data_key: str, query: model.PlanQuery, unit: PrivacyUnit,
                     alpha: float, seed: int) -> QuantileRelease:
    """Cached: the exact distribution, accuracy and one simulated release of each level of
    the page's ``query`` (:func:`page_query`), from the parts ``plan.build`` gives it."""
    if not alpha > 0 or not math.isfinite(alpha):
        raise ValueError(f"α must be a positive number, got {alpha:g}")
    built = page_built(query, unit)
    spec, noise = query.query, query.mechanism
    points = np.asarray(spec.candidates.values, dtype=np.float64)
    bound = contribution(unit, seed)
    below, equal, total = rank_cells(_relation, built, bound)
    if not total > 0:
        raise ValueError(f"the column {spec.column!r} has no value to take a quantile of (all "
                         "missing)")
    exact = distinct_values(_relation, spec.column, bound)
    grid = spec.candidates.values
    stream = noise_stream(data_key, _relation, "quantiles", spec.column, grid[0], grid[-1],
                          len(grid), spec.levels, noise.measure, noise.noise)
    rng = np.random.default_rng([seed, _RNG_OFFSET, stream])
    results = []
    for level in level_scores(built, below, equal, total):
        q, loss = level.part.quantile, level.part.loss
        probs = level.probabilities()
        index = int(level.draw(rng=rng))
        truth = within = None
        if exact is not None:
            truth = true_quantile(exact[0], q, counts=exact[1])
            within = float(probability_within(points, probs, truth, alpha))
        results.append(QuantileResult(
            q=q, mechanism=level.mechanism,
            budget=loss.epsilon if loss.rho is None else loss.rho, probabilities=probs,
            true_value=truth, released=float(points[index]), within_alpha=within,
            expected_rank_error=float(np.dot(probs, level.errors)),
            released_rank_error=float(level.errors[index]),
            best_rank_error=float(level.errors.min())))
    found = kind_intervals(built, [x.released for x in results], DEFAULT_ALPHA)
    if found is not None:   # (0, E) per level: the excess over the grid's best, in rows
        results = [replace(x, excess_bound=float(high))
                   for x, high in zip(results, found[1], strict=True)]
    total_budget = noise.epsilon if noise.rho is None else noise.rho
    return QuantileRelease(grid=points, results=tuple(results), rows=total,
                           max_rows=built.unit.max_rows, measure=noise.measure,
                           noise=noise.noise, budget=total_budget, alpha=alpha, stream=stream)


# --------------------------------------------------------------------------------------------
# What the page says


def budget_sentence(release: QuantileRelease) -> str:
    m = len(release.results)
    symbol, measure = release.symbol, "pure DP" if release.measure == "pure" else "zCDP"
    total, share = number_text.loss(release.budget), number_text.loss(release.results[0].budget)
    how = NOISES[release.noise][0].lower() + NOISES[release.noise][1:]
    # the page's one note on ↑ (the table's column repeats these figures)
    note = f" {number_text.ROUNDED_UP}" if number_text.UP_MARK in total + share else ""
    if m == 1:
        return (f"**Privacy:** {symbol} = {total} ({measure}), all of it on this one "
                f"quantile; released by {how}, over the grid.{note}")
    return (f"**Privacy:** {symbol} = {total} ({measure}) in all, split equally over the {m} "
            f"quantiles: each is released with {symbol} = {share}, and by sequential "
            f"composition the releases together spend at most the total; each is released "
            f"by {how}, over the grid.{note}")


def sensitivity_sentence(release: QuantileRelease, unit: PrivacyUnit) -> str:
    r = release.max_rows
    who = ("one row" if unit.per_row else
           f"one person with up to {r:,} row{'s' if r > 1 else ''} (a quantile has no groups: "
           "each person keeps at most that many rows in all)")
    per = ", ".join(f"{level_name(x.q)} Δ = {safe_rounding.upper(x.sensitivity, 4)}"
                    for x in release.results)
    return (f"**Sensitivity** of the rank error |(1 − q)·#{{x < c}} − q·#{{x > c}}| (OpenDP's "
            f"score, values equal to c on neither side): r·max(q, 1 − q) under add/remove of "
            f"{who} — {per}. **Privacy unit:** {unit.describe()}.")


def results_table(release: QuantileRelease) -> pd.DataFrame:
    """One row per quantile: budget, truth, the simulated release and its exact accuracy."""
    alpha = ALPHA_FORMAT % release.alpha
    rows = []
    for x in release.results:
        rows.append({
            "Quantile": level_name(x.q),
            f"{release.symbol} spent": number_text.loss(x.budget),
            "True quantile": "—" if x.true_value is None else f"{x.true_value:,.6g}",
            "Simulated release": f"{x.released:,.6g}",
            f"P(|released − true| ≤ {alpha})": ("—" if x.within_alpha is None
                                                 else safe_rounding.percent_lower(x.within_alpha)),
            "Expected rank error": rank_text(x.expected_rank_error),
            "Rank error of this release": f"{x.released_rank_error:,.6g}",
            f"Rank error above the best's, at most ({_confidence()})": (
                "—" if x.excess_bound is None else safe_rounding.upper(x.excess_bound, 4)),
        })
    return pd.DataFrame(rows)


#: An expected rank error below this is shown as "less than" it (2.7e-27 ranks reads as an
#: arithmetic error; the exact value is in the downloaded parameters).
RANK_FLOOR = 0.001


def rank_text(value: float) -> str:
    """A rank error for the page: rounded up to 4 significant digits; below
    :data:`RANK_FLOOR` (but not 0), "less than 0.001"."""
    if 0 < value < RANK_FLOOR:
        return f"less than {RANK_FLOOR:g}"
    return safe_rounding.upper(value, 4)


def _confidence() -> str:
    return f"{100 * (1 - DEFAULT_ALPHA):g} %"


def rank_bound_sentence(release: QuantileRelease) -> str:
    """Each level's bound on how much worse than the grid's best candidate the released one
    ranks, in words for a newcomer, as a release states it (method "rank"); "" when the
    kind gives none."""
    said = [f"the released {level_name(x.q)}'s rank error is at most "
            f"{safe_rounding.upper(x.excess_bound, 4)} rows more than the best grid value's "
            f"(this release: {x.released_rank_error:,.6g}, the best: "
            f"{x.best_rank_error:,.6g})"
            for x in release.results if x.excess_bound is not None]
    if not said:
        return ""
    return (f"With {_confidence()}, " + "; ".join(said) + ". A release drawing this setting "
            "states the same bound: it comes from the noise's law, its scale and the number "
            "of candidates alone, never the data (a union bound over the other candidates: "
            "conservative, it holds at least as often as stated). How far the best grid value "
            "is from the true quantile depends on the data and the grid, and is not "
            "bounded.")


def accuracy_sentence(release: QuantileRelease, column: str) -> str:
    """The first quantile's accuracy in words (exact, from the output distribution)."""
    x = release.results[0]
    n = release.rows
    text = (f"The released {level_name(x.q)} is {rank_text(x.expected_rank_error)} "
            f"ranks away from the true one on average (of {n:,} values; the best candidate "
            f"of the grid is {x.best_rank_error:,.6g} ranks away)")
    if x.within_alpha is None:
        return (text + ". The true quantile cannot be read exactly (more than "
                f"{MAX_CANDIDATES:,} distinct values, or infinite ones), so the chance of "
                "landing within α of it is not shown.")
    return (text + f"; it lands within ±{ALPHA_FORMAT % release.alpha} of the true value "
            f"{x.true_value:,.6g} with probability {safe_rounding.percent_lower(x.within_alpha)} "
            "(exact, from the distribution below).")


def distribution_note(release: QuantileRelease, *, releasable: bool = True) -> str:
    """How the chart's law comes about: the noise, its scale (each level's part's, from
    ``plan.build``), the candidates and the values counted."""
    if release.noise == "gumbel":
        law = (f"{NOISES['gumbel']}: candidate c comes out with "
               "probability proportional to exp(−err(c)/b)")
        scale = "2Δ/ε" if release.measure == "pure" else "2Δ/√(8ρ)"
    else:
        law = (f"{NOISES['exponential']}: visit the candidates in a random "
               "order and keep c with probability exp(−(err(c) − best err)/b), else go on")
        scale = "2Δ/ε" if release.measure == "pure" else "2Δ/√(2ρ)"
    scales = ", ".join(f"{level_name(x.q)} b = {safe_rounding.upper(x.scale, 4)}"
                       for x in release.results)
    what = "what a release draws" if releasable else "this setting (no release draws it)"
    return (f"Exact probabilities, not a simulation, of {what}: the candidate "
            f"with the smallest rank error err(c) plus noise of scale b = {scale} ({law}; "
            f"{scales}), over {release.grid.size:,} candidates. Missing values are not "
            f"counted; n = {release.rows:,} values. The rank error is OpenDP's: values equal "
            "to a candidate count on neither side, so with many equal values (whole numbers) "
            "the candidate they sit on scores best.")
