"""What Choose epsilon sweeps: the query of Noisy statistics or Noisy tables, or the
Selection page's question, read off those pages' saved settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
from dashboard.choices import EPSILON_GRID, MECHANISMS, RHO_GRID
from dashboard.datasets import LoadedDataset, categorical_columns
from dashboard.page_settings import SelectionQuery, StatisticsQuery, TablesQuery
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
DEFAULT_DELTA = 1e-6
_ARRAY_MECHANISMS = choices.RANGE_FREE


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


def saved_rho(measure: object, value: object, grid: Sequence[float] = RHO_GRID
              ) -> float | None:
    """The ρ another page used when its privacy measure is zCDP (its default 0.5 if the
    control was never moved); None under pure or approximate DP."""
    if measure != "zcdp":
        return None
    return float(value) if _in_range(value, grid) else 0.5


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
    if query not in stats.available_queries(loaded, unit):
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
