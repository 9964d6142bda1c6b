"""Choose epsilon: privacy–utility curves, the smallest epsilon meeting a target, attacker risk.

Plain functions (no Streamlit) read the query set up on another page and sweep it over epsilon;
the ``st.cache_data`` wrappers at the end are what the "Choose epsilon" page calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard import choices, person
from dashboard.analysis import selection_choices as sel
from dashboard.analysis import statistics as stats
from dashboard.analysis import tables
from dashboard.analysis.selection_pricing import (
    EXAMPLE_BIDS,
    parse_bids,
    price_grid,
    revenue_curve,
    simulated_bids,
)
from dashboard.analysis.selection_privacy import data_mechanism, teaching_mechanism
from dashboard.analysis.selection_scores import column_scores, parse_numbers
from dashboard.analysis.selection_wording import categories_origin
from dashboard.analysis.stats_parts import page_built
from dashboard.charts.epsilon import Curve
from dashboard.choices import EPSILON_GRID, MECHANISMS, RHO_GRID, PrivacyChoice
from dashboard.datasets import LoadedDataset, categorical_columns
from dashboard.saved import SelectionQuery, StatisticsQuery, TablesQuery
from dpcore import figures, risk, utility
from dpcore.measures import ZCDP, ApproxDP, PureDP
from dpcore.mechanisms.gaussian import Gaussian
from engine.queries import Contribution
from plan.build import Built
from plan.kinds import KINDS, QueryKind
from plan.parts import NoisyMax

if TYPE_CHECKING:
    from dashboard.person import PrivacyUnit

#: Where the query comes from (the "Query" radio).
SOURCES = {
    "statistics": "The Noisy statistics query",
    "tables": "The Noisy tables crosstab (error per cell)",
    "selection": "The Selection question (is the top category right?)",
}
#: What the curve shows for an error query.
MEASURES = {
    "alpha": "Error bound ±α at the chosen confidence",
    "rmse": "Root mean squared error",
    "mae": "Mean absolute error",
}
CONFIDENCES = (0.8, 0.9, 0.95, 0.99)
#: Epsilons of the exact curves and of the simulated points (0.01 to 10, log-spaced).
GRID = tuple(float(x) for x in np.geomspace(0.01, 10, 41))
SIM_GRID = tuple(float(x) for x in np.geomspace(0.01, 10, 13))
#: Simulated errors per epsilon (pooled over the cells of a histogram or table).
SIM_ERRORS = 20_000
#: The attacker's starting beliefs in the posterior table.
PRIORS = (0.01, 0.1, 0.5)
DEFAULT_DELTA = 1e-6
#: Epsilons of the selection curve: counts of thousands are picked right far below 0.01.
SELECTION_GRID = tuple(float(x) for x in np.geomspace(1e-4, 10, 51))
#: Simulated releases per point of a top-k curve (standard error at most 0.5/sqrt(2000) = 1.1%).
TOP_K_TRIALS = 2_000
_ARRAY_MECHANISMS = choices.RANGE_FREE
_RNG_OFFSET = 6  # this page's own random stream


def mechanism_name(kind: str) -> str:
    """'Laplace', 'Geometric', 'Gaussian', 'Bounded Laplace', 'Clamped Laplace'..."""
    return choices.mechanism_name(kind)


def fmt(x: float) -> str:
    return stats.fmt_value(x)


# --------------------------------------------------------------------------------------------
# The question: read off the other pages' remembered widgets


@dataclass(frozen=True)
class ErrorQuery:
    """A query of the Noisy statistics or Noisy tables page whose error is swept over epsilon
    (hashable): the page's settings, built into the plan's query by the page's own function
    (:meth:`built`), so that its sensitivities and mechanisms are what the page simulates and
    a release draws.

    ``kind`` is the plan's query kind (``plan.kinds``). ``what`` names the answer in a
    sentence ("count", "sum of age", "count in each cell") and may quote a column name from
    the user's file: escape it before display.
    """

    source: str
    kind: str
    what: str
    unit: str
    spec: stats.QuerySpec | None = None
    table: tuple[str, str, tuple[str, ...], tuple[str, ...]] | None = None
    #: the table's truncation under the privacy unit (a statistic's is in ``spec``)
    contribution: Contribution | None = None
    mechanisms: tuple[str, ...] = (choices.DEFAULT_KIND,)
    chosen: tuple[str, ...] = (choices.DEFAULT_KIND,)
    answer_range: tuple[float, float] | None = None
    epsilon: float = 1.0
    delta: float = DEFAULT_DELTA
    rho: float | None = None
    sum_share: float = 0.5
    #: The share of the budget a separately released total takes (Noisy tables, rescaled to
    #: a separate noisy count); None when the table gets the whole budget.
    total_share: float | None = None
    note: str = ""
    #: Where bounds, answer range and categories come from (typed, public, or the data).
    origins: tuple[tuple[str, str], ...] = ()
    #: a histogram's categories as the page found them (None: declared, or not a histogram)
    labels: tuple[object, ...] | None = None

    @property
    def query_kind(self) -> QueryKind:
        """What the plan knows of the query's kind (looked up by name)."""
        return KINDS[self.kind]

    @property
    def per_cell(self) -> bool:
        return self.query_kind.per_cell

    @property
    def made_of_parts(self) -> bool:
        """A mean or a variance: simulated from its parts, no closed form."""
        return self.query_kind.made_of_parts

    @property
    def relative_by_default(self) -> bool:
        """Whether errors start as a share of the true value (a sum, a mean, a variance)."""
        return self.query_kind.relative_error

    def built(self, mechanism: str, epsilon: float, delta: float) -> Built:
        """The page's query at this mechanism and budget, built by the page's own function
        (``stats_parts.page_built``, ``tables.table_built``: ``plan.build`` of the plan's
        query). For a table, (ε, δ) is the cells' share. Raises ValueError when it cannot
        be built."""
        choice = choices.calibrated_from_epsilon(mechanism, epsilon, delta)
        if self.table is not None:
            row, column, row_cats, col_cats = self.table
            return tables.table_built(row, column, row_cats, col_cats, choice,
                                      self.contribution)
        return page_built(self.spec, choice, sum_share=self.sum_share,
                          answer_range=self.answer_range, labels=self.labels)


@dataclass(frozen=True)
class SelectionQuestion:
    """Which candidate has the best score, answered by report noisy max (hashable).

    ``what`` names the right answer in a sentence ("the most common education") and may quote
    a column name from the user's file: escape it before display. ``parts``: for each noise,
    the mechanism the Selection page takes for these settings at ε = 1 (the part
    ``plan.build`` gives the release of a pick among a column's counts,
    ``selection.data_mechanism``; ``selection.teaching_mechanism`` for scores typed in or
    revenues from bids): its sensitivity and calibration are the curve's (:meth:`mechanism`).
    """

    scores: tuple[float, ...]
    what: str
    noise: str = sel.DEFAULT_NOISE
    parts: tuple[tuple[str, NoisyMax], ...] = ()
    monotonic: bool = True
    negate: bool = False
    k: int = 1
    epsilon: float = 1.0
    rho: float | None = None
    note: str = ""
    origins: tuple[tuple[str, str], ...] = ()
    neighbours: str = "add/remove one row (one row = one person)"

    def mechanism(self) -> NoisyMax:
        """The Selection page's mechanism for this question at its noise, at ε = 1 (pure DP):
        at ε its scale is this one over ε (``dpcore.selection.noisy_max_scale``, the map
        ``plan.build`` calibrates it by)."""
        return dict(self.parts)[self.noise]

    @property
    def sensitivity(self) -> float:
        """Δ of the scores: the most one person moves any score (the mechanism's)."""
        return self.mechanism().sensitivity


def _or(value: object, default: object) -> object:
    """A remembered value, or ``default`` when it was never set."""
    return default if value is None else value


def _in_range(value: object, grid: Sequence[float]) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and grid[0] <= value <= grid[-1])


def _saved_epsilon(value: object, grid: Sequence[float] = EPSILON_GRID) -> float:
    """The epsilon another page's control was left at (on its slider or typed), else 1."""
    return float(value) if _in_range(value, grid) else 1.0


#: ρ values the risk panel offers: both pages' slider grids, so a carried ρ is always on it.
RISK_RHO_GRID: tuple[float, ...] = tuple(sorted(set(RHO_GRID) | set(sel.RHO_GRID)))


def saved_rho(measure: object, value: object, grid: Sequence[float] = RHO_GRID
              ) -> float | None:
    """The ρ another page used when its privacy measure is zCDP (its default 0.5 if the
    control was never moved); None under pure or approximate DP."""
    if measure != "zcdp":
        return None
    return float(value) if _in_range(value, grid) else 0.5


def default_rho(epsilon: float, carried_rho: float | None) -> float:
    """The ρ the risk panel starts at: the query page's ρ under zCDP, else ρ = ε²/2, what
    ε-DP implies (the page forgets a ρ the user set when ε or the query's ρ changes)."""
    return carried_rho if carried_rho is not None else epsilon * epsilon / 2


def _saved_delta(value: object) -> float:
    return float(value) if isinstance(value, float) and 0 < value < 1 else DEFAULT_DELTA


def _count_query_of(loaded: LoadedDataset, note: str, *, upload: bool,
                 bound: Contribution | None = None) -> ErrorQuery:
    spec = stats.QuerySpec("count", contribution=bound)
    answer_range = stats.default_answer_range(spec, len(loaded.relation))
    origins = stats.declaration_origins(loaded, spec, answer_range=answer_range, upload=upload)
    return ErrorQuery("statistics", "count", "count", "people", spec=spec,
                      mechanisms=tuple(MECHANISMS),
                      chosen=(choices.DEFAULT_KIND, choices.APPROX_KIND),
                      answer_range=answer_range, note=note, origins=tuple(origins.items()))


def statistics_query(loaded: LoadedDataset, saved: Mapping, dataset_key: str, *,
                     escape: Callable[[str], str] = str, unit: PrivacyUnit | None = None,
                     seed: int = 0) -> ErrorQuery:
    """The query of the Noisy statistics page, or a count when it has not been set up.

    ``escape`` is applied to the user's text (column names) in the note, which is markdown.
    ``unit`` and ``seed``: the privacy unit and the truncation the Noisy statistics page uses
    (None: one row = one person).
    """
    page = StatisticsQuery.from_saved(saved)
    query = page.query
    upload = dataset_key.startswith("upload:")

    def _count_query(loaded, note, *, upload):   # the fallback, under the same unit
        return _count_query_of(loaded, note, upload=upload, bound=None if unit is None else
                               stats.contribution_for(unit, "count", seed))

    fallback = ("The Noisy statistics page has no query set up for this dataset yet: "
                "showing the **count of rows**. Set up a sum, mean or histogram there and "
                "come back.")
    if query not in stats.available_queries(loaded):
        return _count_query(loaded, fallback, upload=upload)
    columns = stats.columns_for(loaded, query)
    column = page.column if columns else None
    if columns and column not in columns:
        return _count_query(loaded, fallback, upload=upload)
    kind = KINDS[query]
    # the page's own query for these settings (a bound never set: the page's suggestion)
    spec = stats.page_spec(loaded, query, column, page.lower, page.upper, unit=unit, seed=seed)
    if spec.lower is not None and not spec.lower < spec.upper:
        return _count_query(loaded, "The statistics page's bounds are not valid (lower must "
                                    "be below upper): showing the count of rows.",
                            upload=upload)
    categories = spec.categories
    try:
        integer, rows = stats.query_facts(loaded.relation, dataset_key, spec)
    except (ValueError, TypeError):
        return _count_query(loaded, fallback, upload=upload)
    allowed = stats.allowed_mechanisms(query)
    if allowed is None:   # a vector takes no answer range
        allowed = _ARRAY_MECHANISMS if kind.per_cell else MECHANISMS
    offered = tuple(m for m in allowed if integer or not choices.spec(m).integer_only)
    chosen = tuple(dict.fromkeys(
        m for m in (page.mechanism, page.compare) if m in offered))
    answer_range = None
    if choices.uses_answer_range(list(offered)):
        low, high = stats.default_answer_range(spec, rows)
        answer_range = (float(low if page.answer_lower is None else page.answer_lower),
                        float(high if page.answer_upper is None else page.answer_upper))
    share = page.share
    origins = stats.declaration_origins(loaded, spec, answer_range=answer_range, upload=upload)
    labels = None
    if kind.per_cell:
        origins["categories_from"] = categories_origin(categories is not None)
        if categories is None:   # the categories the page finds (as its make_plan)
            labels = tuple(stats.answer_query(loaded.relation, spec).labels)
    what = (f"count of each {column} category" if kind.per_cell else
            f"{query} of {column}" if column is not None else query)
    shown = ErrorQuery(
        "statistics", query, what, stats.answer_unit(loaded, spec), spec=spec,
        mechanisms=offered, chosen=chosen or offered[:1], answer_range=answer_range,
        epsilon=_saved_epsilon(page.epsilon), delta=_saved_delta(page.delta),
        rho=saved_rho(page.measure, page.rho),
        sum_share=float(share) if share in stats.SUM_SHARE_OPTIONS else 0.5,
        note=f"The query set up on the Noisy statistics page: the **{escape(spec.describe())}**.",
        origins=tuple(origins.items()), labels=labels)
    try:   # what the plan refuses (a histogram without categories) the page cannot show
        shown.built(choices.DEFAULT_KIND, 1.0, DEFAULT_DELTA)
    except (ValueError, TypeError):
        return _count_query(loaded, fallback, upload=upload)
    return shown


def tables_query(loaded: LoadedDataset, saved: Mapping, *,
                 escape: Callable[[str], str] = str,
                 contribution: Contribution | None = None) -> ErrorQuery | None:
    """The crosstab of the Noisy tables page (its default pair when not visited); None when
    the dataset has fewer than two categorical columns. ``contribution``: the privacy unit's
    truncation, as the Noisy tables page applies it."""
    columns = tables.table_columns(loaded)
    axes = tables.default_axes(loaded, columns)
    if axes is None:
        return None
    page = TablesQuery.from_saved(saved)
    row, column = page.row, page.column
    note = "The crosstab set up on the Noisy tables page"
    if row not in columns or column not in columns or row == column:
        row, column = axes
        note = "The Noisy tables page's default crosstab"
    row_cats, row_from_data = tables.declared_categories(loaded, row)
    col_cats, col_from_data = tables.declared_categories(loaded, column)
    chosen = page.mechanism
    share = page.total_share
    separate = page.rescale is True and page.total_source == "separate"
    total_share = (float(share) if share in tables.TOTAL_SHARES else 0.2) if separate else None
    split = ("" if total_share is None else
             f" The table is rescaled to a separate noisy total that takes {total_share:.0%} "
             "of the budget: each ε below is the whole budget, of which the cells get "
             f"{1 - total_share:.0%} (and as much of δ).")
    return ErrorQuery(
        "tables", "crosstab", "count in each cell", "people", table=(row, column, row_cats,
                                                                   col_cats),
        contribution=contribution,
        mechanisms=_ARRAY_MECHANISMS,
        chosen=(chosen,) if chosen in _ARRAY_MECHANISMS else (choices.WHOLE_NUMBER_KIND,),
        epsilon=_saved_epsilon(page.epsilon), delta=_saved_delta(page.delta),
        rho=saved_rho(page.measure, page.rho), total_share=total_share,
        note=f"{note}: **{escape(row)} × {escape(column)}**, "
             f"{len(row_cats) * len(col_cats):,} cells, before post-processing "
             f"(clipping negatives can only bring a cell closer to the truth).{split}",
        origins=(("categories_from", categories_origin(
            not (row_from_data or col_from_data))),))


def cells_budget(query: ErrorQuery, epsilon: float, delta: float) -> tuple[float, float]:
    """The (ε, δ) the cells of a table get out of a total budget (ε, δ): all of it, or what
    the separate total leaves (``tables.split_budget``, the Noisy tables page's own split)."""
    if query.total_share is None:
        return epsilon, delta
    table, _ = tables.split_budget(PrivacyChoice("approx", choices.DEFAULT_KIND, epsilon=epsilon,
                                                 delta=delta), query.total_share)
    return table.epsilon, table.delta


def total_for_cells(query: ErrorQuery, cells_epsilon: float, delta: float) -> float:
    """The smallest total ε whose cells' share is at least ``cells_epsilon`` (the inverse of
    :func:`cells_budget`, raised an ulp at a time where rounding fell short)."""
    if query.total_share is None:
        return cells_epsilon
    total = cells_epsilon / (1 - query.total_share)
    while cells_budget(query, total, delta)[0] < cells_epsilon:
        total = math.nextafter(total, math.inf)
    return total


#: Builds the Selection page's mechanism for one noise at ε = 1 (pure DP), given k,
#: monotonic and negate.
MechanismOf = Callable[..., NoisyMax]


def _selection_scores(loaded: LoadedDataset, saved: Mapping, dataset_key: str, seed: int,
                      source: str, unit: PrivacyUnit
                      ) -> tuple[tuple[float, ...], MechanismOf, str, tuple]:
    """(scores, their mechanism, what is right, origins) as the Selection page computes
    them: the mechanism the page takes for the same settings, at ε = 1 (pure DP)."""
    page = SelectionQuery.from_saved(saved)
    negate = page.negate is True
    if source in ("typed", "pricing"):
        if source == "typed":
            scores = parse_numbers(str(_or(page.scores_text, "0, 2, 4, 6")))
            sensitivity = float(_or(page.sensitivity, 1.0))
            what = "the lowest score" if negate else "the highest score"
        else:
            highest = float(_or(page.highest, 4.0))
            prices = price_grid(highest, float(_or(page.step, 0.01)))
            bids = (simulated_bids(highest, seed) if page.simulated_bids is True
                    else parse_bids(str(_or(page.bids_text, EXAMPLE_BIDS))))
            scores = revenue_curve(bids, prices)
            sensitivity = float(prices[-1])
            what = "the worst price" if negate else "the best price"

        def teaching(noise: str, **settings) -> NoisyMax:
            return teaching_mechanism(noise=noise, measure="pure", level=1.0,
                                      sensitivity=sensitivity, **settings)

        return tuple(float(v) for v in scores), teaching, what, ()
    columns = categorical_columns(loaded)
    column = page.column
    if column not in columns:
        column = "education" if "education" in columns else columns[0]
    domain = loaded.domains.get(column)
    declared = domain.categories if domain is not None else None
    labels, counts = column_scores(loaded.relation, dataset_key, column, declared,
                                   person.contribution(unit, seed=seed))[:2]

    def from_plan(noise: str, **settings) -> NoisyMax:   # the release's part
        return data_mechanism(loaded, unit, column=column, labels=labels,
                              declared=declared is not None, noise=noise, measure="pure",
                              level=1.0, **settings)

    what = f"the {'least' if negate else 'most'} common {column}"
    return (counts, from_plan, what,
            (("categories_from", categories_origin(declared is not None)),))


def selection_question(loaded: LoadedDataset, saved: Mapping, dataset_key: str, seed: int, *,
                       escape: Callable[[str], str] = str,
                       unit: PrivacyUnit | None = None) -> SelectionQuestion | None:
    """The Selection page's question (its remembered widgets), or its default: the most common
    category of a column. None when that default has no categorical column to count.

    ``unit``: the privacy unit the Selection page applies (None: one row = one person); the
    question's mechanism is the one that page takes for the same settings
    (:attr:`SelectionQuestion.parts`).
    """
    unit = person.ONE_ROW if unit is None else unit
    page = SelectionQuery.from_saved(saved)
    source = _or(page.source, "data")
    note = "The question set up on the Selection page"
    if page.source is None:
        note = "The Selection page has no question set up yet; its default"
    negate = page.negate is True

    def settings(source: str, saved: Mapping):
        scores, mechanism_of, what, origins = _selection_scores(loaded, saved, dataset_key,
                                                                seed, source, unit)
        monotonic_key, monotonic_default = sel.monotonic_setting(source)
        monotonic = _or(page.at_key(monotonic_key), monotonic_default) is True
        k = _or(page.k, 1)
        k = k if isinstance(k, int) and 1 <= k < len(scores) else 1
        parts = tuple((n, mechanism_of(n, k=k, monotonic=monotonic, negate=negate))
                      for n in sel.NOISES)
        return scores, parts, what, origins, monotonic, k

    try:
        scores, parts, what, origins, monotonic, k = settings(source, saved)
    except (ValueError, TypeError, IndexError):
        if source == "data" or not categorical_columns(loaded):
            return None
        source = "data"
        scores, parts, what, origins, monotonic, k = settings(source, {})
        note = "The Selection page's scores do not parse; instead"
    noise = page.noise
    zcdp = (" It uses zCDP there; here the privacy level is pure ε."
            if page.measure == "zcdp" else "")
    top = f"a true top {k}" if k > 1 else escape(what)
    return SelectionQuestion(
        scores, what, noise=noise if noise in sel.NOISES else sel.DEFAULT_NOISE,
        parts=parts, monotonic=monotonic, negate=negate,
        k=k, epsilon=_saved_epsilon(page.pure_level, sel.EPSILON_GRID),
        rho=saved_rho(page.measure, page.zcdp_level, sel.RHO_GRID),
        note=f"{note}: does report noisy max pick **{top}** among {len(scores):,} candidates?"
             f"{zcdp}", origins=origins,
        neighbours=stats.neighbours_of(person.contribution(unit, seed=seed)
                                       if source == "data" else None))


# --------------------------------------------------------------------------------------------
# The numbers behind an error query


@dataclass(frozen=True)
class QueryNumbers:
    """True answer and sensitivities of an error query (a mean's or a variance's: its parts',
    in ``parts``, as the Noisy statistics page words them)."""

    true_value: NDArray[np.float64]
    l1: float
    l2: float
    integer: bool
    parts: str | None = None


def query_numbers(frame: pd.DataFrame, query: ErrorQuery) -> QueryNumbers:
    """True answer and L1/L2 sensitivity (``plan.build``'s, of the page's query); for a mean
    or a variance, the value its parts estimate (as a release post-processes them) and the
    parts' sensitivities."""
    if query.table is not None:
        row, column, row_cats, col_cats = query.table
        answer = tables.true_table(frame, row, column, row_categories=row_cats,
                                   column_categories=col_cats, contribution=query.contribution)
    else:
        answered = stats.answer_query(frame, query.spec)
        if query.made_of_parts:
            sum_answer = answered[0]
            any_choice = choices.calibrated_from_epsilon(query.mechanisms[0], 1.0, 1e-6)
            plan = stats.make_plan(frame, query.spec, any_choice, sum_share=query.sum_share)
            sensitivity = stats.describe_plan(plan)[0]
            return QueryNumbers(np.asarray(plan.true_value, dtype=np.float64),
                                sum_answer.l1_sensitivity, sum_answer.l2_sensitivity,
                                sum_answer.integer_valued, sensitivity)
        answer = answered
    # the statistic's sensitivity under the unit (any mechanism: the default one always builds)
    sensitivity = query.built(choices.DEFAULT_KIND, 1.0, DEFAULT_DELTA).sensitivity
    return QueryNumbers(np.asarray(answer.true_value, dtype=np.float64), sensitivity.l1,
                        sensitivity.l2, answer.integer_valued)


def sensitivity_note(query: ErrorQuery, numbers: QueryNumbers) -> str:
    """One line: the sensitivity, the neighbour relation, and where clamping bounds come from."""
    bound = query.contribution if query.spec is None else query.spec.contribution
    who = ("a row is added or removed" if bound is None else
           f"all rows of one person (same {bound.person}, at most {bound.max_rows:,} kept) are "
           "added or removed")
    if numbers.parts is not None:
        note = (f"Sensitivities of the {query.kind}'s parts: {numbers.parts} — the most one "
                f"person can change each part when {who}.")
    else:
        note = (f"Sensitivity: L1 = {figures.upper(numbers.l1, 6)}, L2 = "
                f"{figures.upper(numbers.l2, 6)} — the most one person can change the answer "
                f"when {who}.")
    if query.spec is not None and query.spec.lower is not None:
        note += (f" Values are clamped to [{query.spec.lower:g}, {query.spec.upper:g}], the "
                 "bounds set on the Noisy statistics page (the column's public range unless "
                 "you changed them); bounds read off the data itself would leak.")
    return note


def release_part(query: ErrorQuery, mechanism: str, delta: float):
    """The one part a release draws for a count, sum, histogram or table (``plan.build`` of
    the page's query, at the cells' share of δ): its sensitivity is the one its noise is
    calibrated to (in the mechanism's norm, whole for whole-number noise on whole numbers)."""
    return query.built(mechanism, *cells_budget(query, 1.0, delta)).parts[0]


def _options(query: ErrorQuery, mechanism: str, delta: float) -> dict:
    """Keyword arguments of the utility sweeps for one mechanism: the sensitivity of the
    part a release draws, at the cells' share of δ."""
    cells_delta = cells_budget(query, 1.0, delta)[1]
    sensitivity = release_part(query, mechanism, delta).sensitivity
    options: dict = {"sensitivity": sensitivity, "l2_sensitivity": sensitivity}
    if choices.needs_delta(mechanism):
        options["delta"] = cells_delta
    if choices.spec(mechanism).needs_range:
        options["lower"], options["upper"] = query.answer_range
    return options


@dataclass(frozen=True)
class MechanismCurves:
    """Exact (``exact``, None for the mean) and simulated error measures over epsilon."""

    kind: str
    exact: dict[str, NDArray[np.float64]] | None
    simulated: dict[str, NDArray[np.float64]]
    true_value: float | None
    cells: int = 1


def mechanism_curves(frame: pd.DataFrame, query: ErrorQuery, mechanism: str, *, beta: float,
                     delta: float, seed: int) -> MechanismCurves:
    """Sweep one mechanism over :data:`GRID` (exact) and :data:`SIM_GRID` (simulated)."""
    numbers = query_numbers(frame, query)
    scalar = None if query.per_cell else float(numbers.true_value)
    rng = np.random.default_rng([seed, _RNG_OFFSET, 0])
    trials = max(200, math.ceil(SIM_ERRORS / numbers.true_value.size))
    if query.made_of_parts:
        def release(eps: float, n: int, gen: np.random.Generator) -> NDArray:
            choice = choices.calibrated_from_epsilon(mechanism, eps, delta)
            plan = stats.make_plan(frame, query.spec, choice, sum_share=query.sum_share)
            return plan.sample(n, gen)

        simulated = utility.monte_carlo_sweep(release, epsilons=SIM_GRID, true_value=scalar,
                                              trials=trials, rng=rng, beta=beta)
        return MechanismCurves(mechanism, None, simulated, scalar, numbers.true_value.size)
    # A table with a separate total: the cells get their share of each total (ε, δ); the
    # curves are drawn against the total.
    grid = [cells_budget(query, e, delta)[0] for e in GRID]
    sim_grid = [cells_budget(query, e, delta)[0] for e in SIM_GRID]
    options = _options(query, mechanism, delta)
    # Per-cell errors of additive noise do not depend on the cell's value: one sweep serves all.
    exact = utility.error_sweep(mechanism, epsilons=grid, beta=beta, true_value=scalar,
                                **options)
    simulated = utility.monte_carlo_error_sweep(
        mechanism, epsilons=sim_grid, true_value=numbers.true_value, trials=trials, rng=rng,
        beta=beta, **options)
    exact = {**exact, "epsilon": np.array(GRID)}
    simulated = {**simulated, "epsilon": np.array(SIM_GRID)}
    return MechanismCurves(mechanism, exact, simulated, scalar, numbers.true_value.size)


def smallest_for(frame: pd.DataFrame, query: ErrorQuery, mechanism: str, *, alpha: float,
                 beta: float, delta: float,
                 curves: MechanismCurves | None = None) -> utility.SmallestEpsilon:
    """The smallest epsilon meeting P(|error| > alpha) <= beta for one mechanism.

    Exact (``utility.smallest_epsilon``) except for a mean or a variance, which have no closed
    form: there
    it is read off the simulated curve by log-log interpolation between the grid points that
    straddle alpha. Raises ValueError when the target cannot be met.
    """
    numbers = query_numbers(frame, query)
    if not query.made_of_parts:
        options = _options(query, mechanism, delta)
        options.pop("l2_sensitivity")   # the part's sensitivity is in its own norm
        bounded = choices.spec(mechanism).needs_range
        truth = float(numbers.true_value) if bounded else None
        found = utility.smallest_epsilon(mechanism, alpha=alpha, beta=beta, true_value=truth,
                                         **options)
        # The cells' ε, raised to the total that leaves the cells that much.
        return found._replace(epsilon=total_for_cells(query, found.epsilon, delta))
    return read_off(curves.simulated["epsilon"], curves.simulated["alpha"], alpha,
                    decreasing=True)


def read_off(epsilons: NDArray, values: NDArray, target: float, *,
             decreasing: bool) -> utility.SmallestEpsilon:
    """The smallest epsilon where a simulated curve reaches ``target`` (an error falling to it,
    or a success rate rising to it), by log-log interpolation between the straddling points."""
    eps = np.asarray(epsilons, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    meets = np.flatnonzero(values <= target if decreasing else values >= target)
    if meets.size == 0:
        raise ValueError(f"no simulated epsilon up to {eps[-1]:g} reaches the target "
                         f"{fmt(target)}")
    i = int(meets[0])
    if i == 0:
        return utility.SmallestEpsilon(float(eps[0]), True)
    x0, x1 = math.log(eps[i - 1]), math.log(eps[i])
    y0, y1, y = (math.log(max(v, 1e-300)) for v in (values[i - 1], values[i], target))
    t = (y - y0) / (y1 - y0) if y1 != y0 else 1.0
    return utility.SmallestEpsilon(float(math.exp(x0 + t * (x1 - x0))), False)


# --------------------------------------------------------------------------------------------
# What the page draws and says


#: Where each query is set up: (page file, page title), for "use this ε".
QUERY_PAGES = {
    "statistics": ("app_pages/statistics.py", "Noisy statistics"),
    "tables": ("app_pages/tables.py", "Noisy tables"),
    "selection": ("app_pages/selection.py", "Selection"),
}


@dataclass(frozen=True)
class UseEpsilon:
    """A "use this ε" action: the smallest ε found, rounded up (so the target is still met)
    into the query page's range, and the settings it writes for that page (its remembered
    measure, mechanism, ε and δ). ``problem`` says why it cannot be used (ε beyond the
    page's range), else None."""

    kind: str
    epsilon: float
    text: str
    page: str
    page_title: str
    settings: dict
    help: str
    problem: str | None = None


def use_epsilon(source: str, kind: str, answer: utility.SmallestEpsilon, *,
                delta: float | None, query_kind: str | None = None) -> UseEpsilon:
    """What "use this ε" sets on the query's page for one mechanism (or noise) and its answer.

    The ε is the one the sentence shows, rounded up to three significant digits, never
    below the lowest ε the page offers (a larger ε only lowers the error). The Gaussian
    mechanism needs approximate DP at the δ of the curves; the others are pure ε-DP there.
    ``query_kind`` (statistics) is set too: the count shown here when that page has none.
    """
    page, title = QUERY_PAGES[source]
    grid = sel.EPSILON_GRID if source == "selection" else EPSILON_GRID
    text = figures.upper(answer.epsilon)
    value = float(text)
    if value < grid[0]:
        value, text = float(grid[0]), f"{grid[0]:g}"
    if source == "selection":
        settings = SelectionQuery.settings(measure="pure", noise=kind, pure_level=value)
        name = sel.NOISES[kind]
        how = "pure DP"
    else:
        page_query = StatisticsQuery if source == "statistics" else TablesQuery
        choice = choices.calibrated_from_epsilon(kind, value, delta)
        chosen = {"measure": choice.measure, "mechanism": kind, "epsilon": value}
        if choices.needs_delta(kind):
            chosen["delta"] = delta
        if source == "statistics" and query_kind is not None:
            chosen["query"] = query_kind
        settings = page_query.settings(**chosen)
        name = mechanism_name(kind)
        how = f"δ = {delta:g}" if choices.needs_delta(kind) else "pure DP"
    problem = None
    if value > grid[-1]:
        problem = (f"ε = {text} is above the largest ε the {title} page offers "
                   f"({grid[-1]:g}).")
    return UseEpsilon(kind, value, text, page, title, settings,
                      help=problem or f"Opens the {title} page with {name} at ε = {text} "
                                      f"({how}).", problem=problem)


@dataclass
class CurveView:
    """Everything the privacy–utility chart and its sentences need."""

    curves: list[Curve] = field(default_factory=list)
    title: str = ""
    y_title: str = ""
    measure_label: str = ""
    band_label: str | None = None
    target: float | None = None
    smallest: list[tuple[str, float]] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    log_y: bool = True
    value_format: str = ",.3g"
    #: "up" for error bounds, "down" for success rates (how hover values are rounded)
    round_values: str = "up"
    caption: str = ""
    #: one per sentence: what its "use this ε" button does
    uses: list[UseEpsilon] = field(default_factory=list)


def look_at_curve(view: CurveView) -> str:
    """Presentation mode's one sentence over the privacy–utility chart: the first mechanism's
    smallest ε meeting the target, when there is one."""
    if view.sentences:
        return f"**Look at:** where the line crosses the target. {view.sentences[0]}"
    return ("**Look at:** how the line falls as ε grows: to the right, less privacy and "
            "less noise.")


def error_view(query: ErrorQuery, results: Mapping[str, MechanismCurves],
               answers: Mapping[str, utility.SmallestEpsilon | str], *, measure: str,
               relative: bool, beta: float, delta: float, target_value: float,
               escape: Callable[[str], str] = str) -> CurveView:
    """Curves (exact line, simulated 5–95% band and points) and the target's sentences.

    ``target_value`` is in the units shown (a percentage when ``relative``).
    """
    conf = 1 - beta
    scale = 100.0 if relative else 1.0
    unit = "% of the true value" if relative else query.unit
    measure_words = {"alpha": f"±α at {conf:.0%} confidence", "rmse": "RMSE",
                     "mae": "mean absolute error"}[measure]
    view = CurveView(
        title=f"Error of the {query.what} against ε: {measure_words}",
        y_title=f"{measure_words} ({unit}, log scale)",
        band_label="5–95% of simulated |errors|",
        measure_label={"alpha": f"error at most {{y}} in {conf:.0%} of releases",
                       "rmse": "RMSE {y}", "mae": "mean |error| {y}"}[measure]
        + (" %" if relative else ""),
        target=target_value if measure == "alpha" else None,
    )
    if query.per_cell:
        view.title += " (per cell)"

    def pick(values: Mapping[str, NDArray], name: str) -> NDArray:
        return values[f"relative_{name}" if relative else name] * scale

    for kind, res in results.items():
        name, sim = mechanism_name(kind), res.simulated
        band = {"low": pick(sim, "p05"), "high": pick(sim, "p95")}
        if res.exact is not None:
            curve = Curve(name, np.asarray(GRID), line=pick(res.exact, measure),
                          simulated=pick(sim, measure), simulated_epsilon=sim["epsilon"],
                          **band)
        else:  # the mean: only simulated
            curve = Curve(f"{name} (simulated)", sim["epsilon"], line=pick(sim, measure), **band)
        view.curves.append(curve)
        answer = answers.get(kind)
        if answer is None:
            continue
        if isinstance(answer, str):
            view.problems.append(f"{name}: {answer}")
            continue
        if measure == "alpha":
            view.smallest.append((curve.name, answer.epsilon))
        view.sentences.append(target_sentence(query, kind, answer, beta=beta, delta=delta,
                                              target_value=target_value, relative=relative,
                                              true_value=res.true_value, cells=res.cells,
                                              escape=escape))
        view.uses.append(use_epsilon(query.source, kind, answer, delta=delta,
                                     query_kind=query.kind))
    view.caption = error_caption(view, measure=measure) + off_chart_note(view)
    return view


def off_chart_note(view: CurveView) -> str:
    """A caption's last words when a target's smallest ε lies beyond the curves' ε range."""
    grids = [np.asarray(c.epsilon, dtype=np.float64) for c in view.curves]
    if not grids or not view.smallest:
        return ""
    low, high = min(g.min() for g in grids), max(g.max() for g in grids)
    if all(low <= eps <= high for _, eps in view.smallest):
        return ""
    return " A smallest ε beyond the chart's range is named at that edge instead of a diamond."


def error_caption(view: CurveView, *, measure: str) -> str:
    """What the error chart draws: only what is on it (the mean has no exact line, no dots)."""
    exact = any(c.simulated is not None for c in view.curves)
    parts = [("Lines: the exact error of each mechanism; shaded: where 90% of simulated "
              "releases' errors fall (5th to 95th percentile); dots: the same measure from the "
              "simulation.") if exact else
             ("Lines: the error of each mechanism from the simulation (a noisy mean has no "
              "closed form); shaded: where 90% of simulated releases' errors fall (5th to 95th "
              "percentile).")]
    parts.append("Diamonds: the smallest ε meeting the target; dashed: the current ε."
                 if measure == "alpha" else "Dashed: the current ε. The target is about the ±α "
                 "error bound: choose that measure to see it on the chart.")
    values = [np.asarray(part, dtype=np.float64) for c in view.curves
              for part in (c.line, c.low, c.simulated) if part is not None]
    if view.log_y and any(np.any(v <= 0) for v in values):
        parts.append("An error of 0 (discrete noise: the exact answer) sits on the line "
                     "marked 0 at the bottom, as a log axis has no 0.")
    return " ".join(parts)


def target_sentence(query: ErrorQuery, kind: str, answer: utility.SmallestEpsilon, *,
                    beta: float, delta: float, target_value: float, relative: bool,
                    true_value: float | None, cells: int = 1,
                    escape: Callable[[str], str] = str) -> str:
    """e.g. 'With Laplace noise, ε ≥ 0.3 keeps the count within ±10 of the truth in 95% of
    releases.' (may quote a column name: escape before display).

    For a histogram or table the bound holds for each cell on its own; the cells' noise is
    independent, so all ``cells`` at once hold in at least (1 − β)^cells of releases.
    """
    name = mechanism_name(kind) + " noise" + (f" (δ = {delta:g})" if choices.needs_delta(kind)
                                              else "")
    what = escape(query.what)
    if relative:
        within = f"±{target_value:g}% (±{fmt(target_value / 100 * abs(true_value))})"
    else:
        within = f"±{fmt(target_value)}"
    how = "≈ " if query.made_of_parts else ""
    tail = (f" (read off the simulated curve: a noisy {query.kind} has no closed form)"
            if query.made_of_parts else "")
    if cells > 1:
        tail = f" ({all_cells_note(1 - beta, cells)})"
    if answer.met_at_lower_end:
        return (f"With {name}, every ε down to {figures.upper(answer.epsilon)} keeps the "
                f"{what} within {within} of the truth in {1 - beta:.0%} of releases{tail}.")
    return (f"With {name}, ε ≥ {how}{figures.upper(answer.epsilon)} keeps the {what} within "
            f"{within} of the truth in {1 - beta:.0%} of releases{tail}.")


def all_cells_note(confidence: float, cells: int) -> str:
    """What a per-cell bound says about all cells at once, with independent noise per cell."""
    return (f"each one on its own; all {cells:,} at once in at least "
            f"{figures.percent_lower(confidence**cells)} of releases, the noise being "
            "independent")


def selection_view(question: SelectionQuestion,
                   results: Mapping[str, tuple[Mapping[str, NDArray],
                                               utility.SmallestEpsilon | str]], *,
                   target: float, escape: Callable[[str], str] = str) -> CurveView:
    """P(correct) against epsilon for report noisy max with each noise in ``results`` (noise →
    its sweep and smallest epsilon), and the target sentences."""
    # the sentences are markdown (escaped); the chart escapes its title itself
    top = f"a true top {question.k}" if question.k > 1 else None
    right = top or escape(question.what)
    view = CurveView(
        title=f"How often report noisy max picks {top or question.what}, against ε",
        y_title="Releases that pick the right answer (%)",
        measure_label="the right answer in {y}% of releases",
        target=100 * target, log_y=False, value_format=".3g", round_values="down",
        caption="The probability that report noisy max picks the right answer (exact for one "
                "pick, simulated for k > 1); a tie for first counts as right. Diamonds: the "
                "smallest ε meeting the target; dashed: the current ε.")
    approx = "≈ " if question.k > 1 else ""
    for kind, (sweep, answer) in results.items():
        noise = sel.NOISES[kind]
        view.curves.append(Curve(name=noise + (" (simulated)" if question.k > 1 else ""),
                                 epsilon=sweep["epsilon"], line=100 * sweep["p_correct"]))
        if isinstance(answer, str):
            view.problems.append(f"{noise}: {answer}")
            continue
        view.smallest.append((view.curves[-1].name, answer.epsilon))
        if answer.met_at_lower_end:
            view.sentences.append(f"With {noise}, every ε down to "
                                  f"{figures.upper(answer.epsilon)} picks {right} in at "
                                  f"least {target:.0%} of releases.")
        else:
            view.sentences.append(
                f"With {noise}, ε ≥ {approx}{figures.upper(answer.epsilon)} picks "
                f"{right} in at least {target:.0%} of releases.")
        view.uses.append(use_epsilon("selection", kind, answer, delta=None))
    view.caption += off_chart_note(view)
    return view


@dataclass(frozen=True)
class RiskSummary:
    """Trade-off curves, posterior table and sentences for one privacy level.

    ``posteriors`` has one row per statement (a guarantee, or the Gaussian mechanism itself):
    the highest belief from each prior in :data:`PRIORS`, rounded up, and the probability
    that the belief passes it (rounded up). ``sentences`` start with a bold label saying which
    statement they are about.
    """

    fpr: NDArray[np.float64]
    curves: list[tuple[str, NDArray[np.float64]]]
    posteriors: pd.DataFrame
    sentences: list[str]


#: Column of the posterior table that holds the failure probability.
FAILS_COLUMN = "Passed with probability"


def prior_column(prior: float) -> str:
    """The posterior table's column for one prior: 'From 1%'."""
    return f"From {prior:.0%}"


def chance_text(p: float) -> str:
    """A failure probability rounded up to two significant digits: 2e-06, 1.9e-05."""
    return f"{float(figures.upper(p, 2)):.2g}" if p > 0 else "0"


def risk_summary(epsilon: float, *, delta: float | None, pure: bool,
                 rho: float | None = None) -> RiskSummary:
    """What an attacker can learn at ``epsilon``: pure DP and, with ``delta``, the Gaussian.

    ``pure`` adds the ε-DP guarantee (Laplace-type mechanisms, selection); ``delta`` adds the
    (ε, δ)-DP guarantee and the Gaussian mechanism calibrated to it, exactly μ-Gaussian-DP
    with μ = sensitivity / σ (the same for every sensitivity): its trade-off curve, and how
    often its privacy loss, N(μ²/2, μ²), lifts the belief past the ε-only bound. ``rho`` adds
    a ρ-zCDP guarantee (its trade-off is the envelope over its privacy profile, its belief
    bound the tail of its privacy loss at ``risk.DEFAULT_FAILURE``).

    Every belief is rounded up and every failure probability is at least the probability
    that the belief passes the belief as shown.
    """
    fpr = np.linspace(0.0, 1.0, 201)
    priors = np.array(PRIORS)
    curves, sentences, rows = [], [], []
    eps = figures.upper(epsilon, 4)

    def row(label: str, posterior: NDArray, fails: str) -> None:
        rows.append({"Release": label, **{prior_column(p): figures.percent_upper(float(b))
                                          for p, b in zip(PRIORS, posterior, strict=True)},
                     FAILS_COLUMN: fails})

    if pure:
        measure = PureDP(epsilon)
        curves.append((f"Any ε-DP release, ε = {eps}", np.asarray(risk.tradeoff(measure, fpr))))
        row(f"Any ε-DP release (ε = {eps})", risk.max_posterior(measure, priors).posterior,
            "never")
        sentences.append("**Any ε-DP release** (Laplace, geometric, selection): "
                         + risk.describe_risk(measure, 0.5))
    if delta is not None:
        measure = ApproxDP(epsilon, delta)
        curves.append((f"Any (ε, δ)-DP release, ε = {eps}, δ = {delta:g}",
                       np.asarray(risk.tradeoff(measure, fpr))))
        bound = risk.max_posterior(measure, priors)
        row(f"Any (ε, δ)-DP release (δ = {delta:g})", bound.posterior,
            f"at most {chance_text(bound.failure_probability)}")
        sentences.append(f"**Any (ε, δ)-DP release** (δ = {delta:g}): "
                         + risk.describe_risk(measure, 0.5))
        mu = 1.0 / Gaussian(sensitivity=1.0, epsilon=epsilon, delta=delta).scale
        ceiling = risk.max_posterior(PureDP(epsilon), priors).posterior
        # The belief passes the ε-only bound exactly when the privacy loss passes ε, from any
        # prior: one probability for the row (and at least that of passing the rounded-up
        # belief shown).
        passes = float(np.max(risk.exceed_probability(None, priors, ceiling, gaussian_mu=mu)))
        row("The Gaussian mechanism itself (passing the ε-only bound)", ceiling,
            f"{chance_text(passes)} (exact)")
        sentences.append(
            f"**The Gaussian mechanism itself** (μ = {figures.upper(mu)}): "
            + risk.describe_risk(None, 0.5, gaussian_mu=mu, delta=delta)[:-1]
            + f". It passes {figures.percent_upper(float(ceiling[PRIORS.index(0.5)]))}, the "
            f"bound ε = {eps} alone would set, with probability {chance_text(passes)} "
            f"(about {max(1, round(passes / delta)):,} × δ).")
    if rho is not None:
        zcdp = ZCDP(rho)
        curves.append((f"Any ρ-zCDP release, ρ = {figures.upper(rho, 4)}",
                       np.asarray(risk.tradeoff(zcdp, fpr))))
        bound = risk.max_posterior(zcdp, priors)
        row(f"Any ρ-zCDP release (ρ = {figures.upper(rho, 4)})", bound.posterior,
            f"at most {chance_text(bound.failure_probability)}")
        sentences.append(f"**Any ρ-zCDP release** (ρ = {figures.upper(rho, 4)}): "
                         + risk.describe_risk(zcdp, 0.5))
    if delta is not None:
        curves.append((f"The Gaussian mechanism itself (exactly μ-GDP, μ = {figures.upper(mu)})",
                       np.asarray(risk.gaussian_tradeoff(mu, fpr))))
    return RiskSummary(fpr, curves, pd.DataFrame(rows), sentences)


# --------------------------------------------------------------------------------------------
# Cached wrappers (what the page calls)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_numbers(_frame: pd.DataFrame, dataset_key: str, query: ErrorQuery) -> QueryNumbers:
    return query_numbers(_frame, query)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_curves(_frame: pd.DataFrame, dataset_key: str, query: ErrorQuery, mechanism: str,
                  beta: float, delta: float, seed: int) -> MechanismCurves:
    return mechanism_curves(_frame, query, mechanism, beta=beta, delta=delta, seed=seed)


def sweep_mechanisms(frame: pd.DataFrame, dataset_key: str, query: ErrorQuery,
                     mechanisms: Sequence[str], *, alpha: float, beta: float, delta: float,
                     seed: int) -> tuple[dict, dict, list[str]]:
    """(curves, smallest ε, problems) for each mechanism: one whose sweep fails is left out,
    with a message saying what to fix (the user's text in it is not escaped)."""
    results, answers, problems = {}, {}, []
    for kind in mechanisms:
        try:
            results[kind] = cached_curves(frame, dataset_key, query, kind, beta, delta, seed)
        except (ValueError, TypeError) as exc:
            problems.append(f"{mechanism_name(kind)}: {exc}")
            continue
        answers[kind] = cached_smallest(frame, dataset_key, query, kind, alpha, beta, delta,
                                        seed)
    return results, answers, problems


def zcdp_note(rho: float) -> str:
    return (f"That page uses zCDP, ρ = {figures.upper(rho, 4)}: the curves below are drawn "
            "against ε; the risk panel at the bottom shows what that ρ lets an attacker learn.")


GDP_NOTE = ("μ-GDP (Gaussian differential privacy, Dong, Roth & Su 2022): telling 'Alice in' "
            "from 'Alice out' is exactly as hard as telling whether one number was drawn from "
            "a normal distribution with mean 0 or mean μ (standard deviation 1). Gaussian "
            "noise σ gives μ = sensitivity / σ: the smaller μ, the closer the line to the "
            "blind guess.")


@st.cache_data(show_spinner=False, max_entries=256)
def cached_smallest(_frame: pd.DataFrame, dataset_key: str, query: ErrorQuery, mechanism: str,
                    alpha: float, beta: float, delta: float, seed: int
                    ) -> utility.SmallestEpsilon | str:
    """The smallest epsilon, or the reason it does not exist (a message)."""
    curves = None
    if query.made_of_parts:
        curves = cached_curves(_frame, dataset_key, query, mechanism, beta, delta, seed)
    try:
        return smallest_for(_frame, query, mechanism, alpha=alpha, beta=beta, delta=delta,
                            curves=curves)
    except ValueError as exc:
        return str(exc)


def selection_curve(question: SelectionQuestion, target: float, *, seed: int
                    ) -> tuple[dict[str, NDArray], utility.SmallestEpsilon | str]:
    """P(correct) over :data:`SELECTION_GRID` and the smallest epsilon meeting ``target``, of
    the Selection page's mechanism (:meth:`SelectionQuestion.mechanism`: its noise,
    sensitivity, calibration, k and pick), swept over ε by the map that calibrates it.

    k = 1: exact (``utility.selection_sweep`` and ``smallest_epsilon_for_selection``). k > 1:
    P(true top k recovered) simulated, and the smallest epsilon read off that curve.
    """
    part = question.mechanism()
    common = {"noise": part.noise, "sensitivity": part.sensitivity,
              "monotonic": part.monotonic, "negate": part.negate}
    rng = np.random.default_rng([seed, _RNG_OFFSET, 1])
    sweep = utility.selection_sweep(question.scores, epsilons=SELECTION_GRID, k=part.k,
                                    trials=TOP_K_TRIALS, rng=rng, **common)
    try:
        if part.k == 1:
            return sweep, utility.smallest_epsilon_for_selection(question.scores, target=target,
                                                                 **common)
        return sweep, read_off(sweep["epsilon"], sweep["p_correct"], target, decreasing=False)
    except ValueError as exc:
        return sweep, str(exc)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_selection(question: SelectionQuestion, target: float, seed: int
                     ) -> tuple[dict[str, NDArray], utility.SmallestEpsilon | str]:
    return selection_curve(question, target, seed=seed)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_risk(epsilon: float, delta: float | None, pure: bool,
                rho: float | None = None) -> RiskSummary:
    return risk_summary(epsilon, delta=delta, pure=pure, rho=rho)


# --------------------------------------------------------------------------------------------
# Downloads: the curve's numbers and the settings behind them

NEIGHBOURS = "add/remove one row (one row = one person)"


def curve_values(view: CurveView, *, computed_by: Sequence[str],
                 scales: Sequence[NDArray | None], unit: str, scale_unit: str) -> pd.DataFrame:
    """The chart's numbers, one line per curve and ε, in long format.

    ``computed_by[i]`` says how curve i's line was computed ("closed form" or "simulation");
    its simulated points (and the 5–95% band, where drawn) follow as "simulation" lines.
    ``scales[i]`` is the noise scale at each ε of the line (None: not one number, e.g. the
    mean's two parts). These are simulated and analytic results, not a data release.
    """
    value = view.y_title.replace(", log scale)", ")")
    low = f"5th percentile of simulated |error| ({unit})"
    high = f"95th percentile of simulated |error| ({unit})"
    scale_header = f"Noise scale ({scale_unit})"
    frames = []
    for curve, how, scale in zip(view.curves, computed_by, scales, strict=True):
        epsilon = np.asarray(curve.epsilon, dtype=np.float64)
        nothing = np.full(epsilon.size, np.nan)
        band_on_line = curve.simulated is None and curve.low is not None
        frames.append(pd.DataFrame({
            "Curve": curve.name, "Computed by": how, "epsilon": epsilon,
            value: np.asarray(curve.line, dtype=np.float64),
            low: np.asarray(curve.low, dtype=np.float64) if band_on_line else nothing,
            high: np.asarray(curve.high, dtype=np.float64) if band_on_line else nothing,
            scale_header: nothing if scale is None else np.asarray(scale, dtype=np.float64)}))
        if curve.simulated is not None:
            at = np.asarray(curve.simulated_epsilon if curve.simulated_epsilon is not None
                            else curve.epsilon, dtype=np.float64)
            frames.append(pd.DataFrame({
                "Curve": curve.name, "Computed by": "simulation", "epsilon": at,
                value: np.asarray(curve.simulated, dtype=np.float64),
                low: np.asarray(curve.low, dtype=np.float64),
                high: np.asarray(curve.high, dtype=np.float64),
                scale_header: np.full(at.size, np.nan)}))
    table = pd.concat(frames, ignore_index=True)
    if view.band_label is None:
        table = table.drop(columns=[low, high])
    return table


def error_download(view: CurveView, query: ErrorQuery, results: Mapping[str, MechanismCurves],
                   numbers: QueryNumbers, *, dataset: str, measure: str, relative: bool,
                   beta: float, delta: float, epsilon: float,
                   target: float) -> tuple[pd.DataFrame, dict]:
    """(curve table, parameters) of an error query for ``controls.downloads``."""
    unit = "% of the true value" if relative else query.unit
    table = curve_values(
        view, computed_by=["simulation" if r.exact is None else "closed form"
                           for r in results.values()],
        scales=[None if r.exact is None else r.exact["scale"] for r in results.values()],
        unit=unit, scale_unit=query.unit)
    spec = query.spec
    cells = int(numbers.true_value.size)
    parameters = {
        "page": "Choose epsilon", "dataset": dataset, "query_from": SOURCES[query.source],
        "query": query.kind, "description": query.what,
        "column": spec.column if spec is not None else None,
        "clamping_bounds": (None if spec is None or spec.lower is None
                            else [spec.lower, spec.upper]),
        "table": (None if query.table is None else
                  {"rows": query.table[0], "columns": query.table[1]}),
        "cells": cells, "neighbouring_datasets": stats.neighbours_of(
            query.contribution if spec is None else spec.contribution),
        "l1_sensitivity": numbers.l1, "l2_sensitivity": numbers.l2,
        "mechanisms": list(results),
        "privacy_measure": {k: choices.calibrated_from_epsilon(k, 1.0, delta).measure
                            for k in results},
        "delta": delta if any(map(choices.needs_delta, results)) else None, "rho": None,
        "answer_range": (list(query.answer_range) if query.answer_range is not None and
                         choices.uses_answer_range(list(results)) else None),
        "mean_sum_share": getattr(query.built(choices.DEFAULT_KIND, 1.0, delta).query.query,
                                  "sum_share", None),
        "table_separate_total_share": query.total_share,
        "error_measure": MEASURES[measure], "confidence": round(1 - beta, 10),
        "relative": relative, "target": target, "target_unit": unit,
        "smallest_epsilon": dict(view.smallest), "current_epsilon": epsilon,
        "epsilons_closed_form": list(GRID), "epsilons_simulated": list(SIM_GRID),
        # As mechanism_curves: about SIM_ERRORS errors per epsilon, pooled over the cells.
        "simulated_releases_per_epsilon": max(200, math.ceil(SIM_ERRORS / cells)),
        "noise_scale": (f"each part of the {query.kind} gets its share of ε: no single scale"
                        if query.made_of_parts else
                        "per ε in the CSV's noise scale column (L1 sensitivity / ε for "
                        "Laplace and geometric; calibrated for the others)"
                        + ("" if query.total_share is None else
                           ", at the cells' share of ε (and δ)")),
        "simulation_random_stream": f"numpy.random.default_rng([seed, {_RNG_OFFSET}, 0])",
    }
    origins = dict(query.origins)
    if parameters["answer_range"] is None:
        origins.pop("answer_range_from", None)
    return table, parameters | origins


def selection_download(view: CurveView, question: SelectionQuestion,
                       results: Mapping[str, tuple[Mapping[str, NDArray], object]], *,
                       dataset: str, epsilon: float, target: float
                       ) -> tuple[pd.DataFrame, dict]:
    """(curve table, parameters) of the selection question for ``controls.downloads``."""
    how = "closed form" if question.k == 1 else "simulation"
    table = curve_values(view, computed_by=[how] * len(results),
                         scales=[sweep["scale"] for sweep, _ in results.values()], unit="%",
                         scale_unit="score units")
    top = f", top {question.k} picks" if question.k > 1 else ""
    parameters = {
        "page": "Choose epsilon", "dataset": dataset, "query_from": SOURCES["selection"],
        "question": question.what, "number_of_candidates": len(question.scores),
        "mechanism": [sel.NOISES[n] + top for n in results],
        "noise": list(results), "measure": "pure", "delta": None, "rho": None,
        "sensitivity": question.sensitivity, "neighbouring_datasets": question.neighbours,
        "monotonic": question.monotonic,
        "pick": "smallest score" if question.negate else "largest score", "k": question.k,
        "target_share_right": target, "smallest_epsilon": dict(view.smallest),
        "current_epsilon": epsilon, "epsilons": list(SELECTION_GRID),
        "noise_scale": "per ε in the CSV's noise scale column",
        "simulated_releases_per_epsilon": TOP_K_TRIALS if question.k > 1 else None,
        "simulation_random_stream": (f"numpy.random.default_rng([seed, {_RNG_OFFSET}, 1])"
                                     if question.k > 1 else None),
    }
    return table, parameters | dict(question.origins)
