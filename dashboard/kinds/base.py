"""What a query kind is on the pages: the :class:`PageKind` base of every page adapter, and
the page settings (:class:`PageSettings`) its ``page_query`` turns into the plan's query.

A page adapter says what the release side (``plan.kinds``) does not: its label and when a
page offers it, the controls it needs (a column of which type, clamping bounds), the one
conversion from a page's settings to a ``plan.model.PlanQuery`` (:meth:`PageKind.page_query`:
Add to plan, the page's simulation and Choose epsilon all build their query there), its true
answer, and its words. Nothing here imports ``dashboard.analysis``: the analysis modules look
an adapter up (``dashboard.kinds.adapter_of``), never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from dashboard.choices import PrivacyChoice
from dashboard.data import true_answers
from dashboard.data.column_facts import plan_categories
from dashboard.datasets import LoadedDataset, categorical_columns, numeric_columns
from dpcore.contributions import ContributionCells, PrivacyUnit
from dpcore.mechanisms import CATALOGUE
from dpcore.queries import QueryAnswer
from engine import PersonCells, RowsPerPerson
from plan import model
from plan.kinds import KINDS, QueryKind

__all__ = ["PageKind", "PageSettings", "Declared", "Neighbours", "plan_noise", "with_range",
           "Cells"]

#: What the bounds-cost panel breaks an answer's error down by: each person's cells
#: (``dpcore.contributions.ContributionCells``), the rows left out (no person id, value or
#: category), and a per-cell answer's labels (None: one answer).
Cells = tuple[ContributionCells, int, tuple[str, ...] | None]


def plan_noise(choice: PrivacyChoice) -> model.Noise:
    """The plan's mechanism for a page's choice. A pure-DP kind offered under approximate DP
    (its ε-DP is also (ε, δ)-DP for every δ) enters as what it is: pure DP at its ε."""
    spec = CATALOGUE[choice.mechanism]
    measure = choice.measure
    if measure not in spec.measures and "pure" in spec.measures:
        measure = "pure"
    budget = {name: getattr(choice, name) for name in spec.budgets[measure]}
    return model.Noise(choice.mechanism, measure, epsilon=budget.get("epsilon"),
                       delta=budget.get("delta"), rho=budget.get("rho"))


def with_range(noise: model.Noise, answer_range: tuple[float, float] | None,
               origin: str = "typed") -> model.Noise:
    """``noise`` with the page's public answer range, when its mechanism needs one."""
    if answer_range is None or not CATALOGUE[noise.kind].needs_range:
        return noise
    return replace(noise, lower=float(answer_range[0]), upper=float(answer_range[1]),
                   range_origin=origin)


@dataclass(frozen=True)
class Declared:
    """Where a query's declarations come from, as Add to plan records them (the page's
    simulation leaves them out: an origin changes no figure)."""

    bounds: model.Bounds | None = None
    categories: model.Categories | None = None
    range_origin: str = "typed"


@dataclass(frozen=True)
class PageSettings:
    """What a page set for one query: the kind, its column, bounds and declared categories,
    the privacy choice, a mean's budget share and the answer range.

    ``labels``: the categories the page found in the data (a histogram without declared
    ones). ``declared``: the declarations with their origins (Add to plan); None: as typed.
    """

    query: str
    choice: PrivacyChoice
    column: str | None = None
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] | None = None
    sum_share: float = 0.5
    answer_range: tuple[float, float] | None = None
    labels: tuple[object, ...] | None = None
    declared: Declared | None = None


@dataclass(frozen=True)
class Neighbours:
    """Who the neighbours are, in the words a sensitivity sentence of the Noisy statistics
    page uses (``stats_wording.describe_plan`` makes it; each adapter words its own change).

    ``one``: how many rows one person changes ("1", or the unit's max rows); ``who``: the
    sentence's subject; ``bound``: the engine's truncation (None: one row = one person);
    ``norm`` with ``norm_words``: the sensitivity's norm and what it means; ``fmt``: how the
    page writes a number.
    """

    one: str
    who: str
    bound: Any
    norm: str
    norm_words: str
    fmt: Callable[[float], str]

    @property
    def rows(self) -> str:
        """'' (one row = one person) or 'max rows × ', before a clamped value's reach."""
        return "" if self.bound is None else f"{self.one} × "


class PageKind:
    """One query kind on the pages. A subclass sets the class attributes and writes
    :meth:`query_spec` and :meth:`true_answer`; the rest has defaults.

    Attributes
    ----------
    name : str
        The kind's name in ``plan.kinds.KINDS``.
    label : str
        The Noisy statistics page's option, in the user's words.
    noun : str
        What one released number is called in a page's sentence ("" : the kind's name; a
        histogram's cells are counts): use :attr:`value_noun`.
    answer_noun : str
        What its answer is called before "of <column>" ("" : :attr:`value_noun`).
    made_of : str
        How its noisy parts make it, in a page's words ("" : computed from its parts).
    error_note : str
        Why a page's error chart of it is a simulation only ("" : its error has a closed
        form).
    column_type : str or None
        The type of column it reads ("numeric", "categorical"; None: no column).
    bounded : bool
        It takes clamping bounds for its column.
    group_label : str
        The Groups page's option for it as the statistic per group ("": not offered there).
    """

    name: ClassVar[str]
    label: ClassVar[str]
    noun: ClassVar[str] = ""
    answer_noun: ClassVar[str] = ""
    made_of: ClassVar[str] = ""
    error_note: ClassVar[str] = ""
    column_type: ClassVar[str | None] = None
    bounded: ClassVar[bool] = False
    group_label: ClassVar[str] = ""
    #: its parts may take whole-number noise (a variance's, of squared deviations, do not)
    whole_number_noise: ClassVar[bool] = True

    @property
    def kind(self) -> QueryKind:
        """Its plan kind (``plan.kinds``): what computes, noises and releases it."""
        return KINDS[self.name]

    # -- when a page offers it, and the controls it needs -----------------------------------

    def columns(self, loaded: LoadedDataset) -> list[str]:
        """The columns of ``loaded`` it can read (none for a kind without a column)."""
        if self.column_type == "numeric":
            return numeric_columns(loaded)
        if self.column_type == "categorical":
            return categorical_columns(loaded)
        return []

    def offered_on(self, loaded: LoadedDataset, unit: PrivacyUnit | None = None) -> bool:
        """Whether the Noisy statistics page offers it for ``loaded`` under the privacy
        ``unit`` (None: one row = one person): a kind without a column always, else when
        the dataset has a column of its type (a kind that needs a person-id column says so
        here)."""
        return self.column_type is None or bool(self.columns(loaded))

    def mechanisms(self) -> tuple[str, ...] | None:
        """The catalogue kinds it takes (None: every one the measure offers). One number made
        of parts takes noise without an answer range (its parts' answers have none), and on
        real numbers only where its parts are not whole (:attr:`whole_number_noise`)."""
        if not self.kind.made_of_parts:
            return None
        return tuple(kind for kind, spec in CATALOGUE.items() if not spec.needs_range
                     and (self.whole_number_noise or not spec.integer_only))

    # -- words ------------------------------------------------------------------------------

    @property
    def value_noun(self) -> str:
        """What one released number is called in a page's sentence."""
        return self.noun or self.name

    def describe(self, column: str | None) -> str:
        """e.g. 'mean of age' (the column name is the user's: escape it before display)."""
        return f"{self.answer_noun or self.value_noun} of {column}"

    def plan_label(self, column: str | None) -> str:
        """The plan query's label: 'Mean of age'."""
        words = self.describe(column)
        return words[:1].upper() + words[1:]

    def answer_unit(self, column_unit: str) -> str:
        """The unit of its answer and of its error, from the column's unit ("" : unknown)."""
        return column_unit or "the column's units"

    def sensitivity_words(self, plan: Any, neighbours: Neighbours) -> tuple[str, str]:
        """(short sensitivity, why) of the page's release plan (``stats_plan.ReleasePlan``)
        under ``neighbours``."""
        raise NotImplementedError

    def parts_explanation(self, plan: Any, sensitivity: str, why: str,
                          fmt: Callable[[float], str]) -> tuple[str, str]:
        """(noise scales, one-line explanation) of a release plan made of several noisy parts
        (its sensitivity already worded: ``sensitivity``, ``why``)."""
        raise NotImplementedError(f"a {self.name} is not made of parts")

    # -- the one conversion from a page's settings to the plan's query ----------------------

    def page_query(self, settings: PageSettings) -> model.PlanQuery:
        """The plan's query for a page's settings: what Add to plan adds, what the page
        simulates and what Choose epsilon sweeps. Declarations carry their origins when
        ``settings.declared`` holds them, else they are as typed."""
        declared = settings.declared
        noise = with_range(plan_noise(settings.choice), settings.answer_range,
                           "typed" if declared is None else declared.range_origin)
        return model.PlanQuery("q", self.plan_label(settings.column),
                               self.query_spec(settings), noise, "statistics")

    def query_spec(self, settings: PageSettings) -> Any:
        """The plan kind's spec (``plan.model.QuerySpec``) for the page's settings."""
        raise NotImplementedError

    # -- true answers -------------------------------------------------------------------------

    def true_answer(self, data: true_answers.Data, spec: Any
                    ) -> QueryAnswer | tuple[QueryAnswer, ...]:
        """Its true answer with its sensitivity for the page's query ``spec`` (its column,
        bounds, declared categories and the unit's truncation, ``spec.contribution``)."""
        raise NotImplementedError

    # -- what the unit's bounds cost (the bounds-cost panel) ---------------------------------

    #: the bounds-cost panel breaks its error down (the bias of the rows the unit's max rows
    #: drop, of clamped values, and the noise): its answer is a total over each person's
    #: kept rows. Not for a ratio of parts, nor an answer max rows does not move.
    breaks_down: ClassVar[bool] = False
    #: what the panel says instead of a breakdown of it (when it does not break it down)
    no_breakdown: ClassVar[str] = (
        "The breakdown of the error into the bounds' bias and the noise is drawn for counts, "
        "sums and histograms; for a mean or a variance, look at the sums and the count it is "
        "made of.")

    def contribution_cells(self, relation: Any, spec: Any,
                           categories: tuple[object, ...] | None) -> Cells:
        """Its answer's cells per person for the bounds-cost panel (``relation``: the loaded
        dataset's; ``spec``: the page's query; ``categories``: a per-cell answer's)."""
        raise NotImplementedError(f"the bounds-cost panel does not break a {self.name} down")

    def reach(self, spec: Any) -> float:
        """How far one kept row moves its answer (1 for a row counted)."""
        return 1.0


class RowsPage(PageKind):
    """A number of rows of the whole table (a count)."""

    def describe(self, column: str | None) -> str:
        return "number of rows"

    def answer_unit(self, column_unit: str) -> str:
        return "people"

    def sensitivity_words(self, plan, neighbours):
        one = neighbours.one
        return one, f"{neighbours.who} changes the count by at most {one}"

    def query_spec(self, settings: PageSettings) -> Any:
        return self.kind.spec()

    def true_answer(self, data, spec):
        return true_answers.count(data, contribution=spec.contribution)

    breaks_down = True

    def contribution_cells(self, relation, spec, categories):
        """The count's cells: rows per person, from the engine's histogram of them (any
        source, any size)."""
        agg = relation.answer(RowsPerPerson(spec.contribution.person))
        if agg.total_people == 0:
            raise ValueError(f"no row has a value in {spec.contribution.person}: nothing to "
                             "break down")
        n = agg.rows.astype(np.float64)
        return (ContributionCells(group=np.zeros_like(n), rows=n,
                                  persons=agg.people.astype(float)),
                int(agg.missing_person_rows), None)


class ClampedPage(PageKind):
    """One total of a numeric column clamped to bounds (a sum)."""

    column_type = "numeric"
    bounded = True

    def bounds(self, settings: PageSettings) -> model.Bounds:
        if settings.declared is not None and settings.declared.bounds is not None:
            return settings.declared.bounds
        return model.Bounds(float(settings.lower), float(settings.upper))

    def query_spec(self, settings: PageSettings) -> Any:
        share = (float(settings.sum_share),) if self.kind.split_by_share else ()
        return self.kind.spec(settings.column, self.bounds(settings), *share)

    def clamped_sum_words(self, plan: Any, neighbours: Neighbours) -> tuple[str, str]:
        """(the clamped sum's sensitivity, why): what a sum and a mean's sum say."""
        answer = plan.answer
        total = neighbours.fmt(answer.l1_sensitivity)
        why = (f"values are clamped to [{answer.lower:g}, {answer.upper:g}], so "
               f"{neighbours.who} changes the sum by at most {neighbours.rows}max(|lower|, "
               f"|upper|) = {total}")
        return total, why

    def sensitivity_words(self, plan, neighbours):
        return self.clamped_sum_words(plan, neighbours)

    def true_answer(self, data, spec):
        return true_answers.bounded_sum(data, spec.column, lower=spec.lower, upper=spec.upper,
                                        contribution=spec.contribution)

    breaks_down = True

    def contribution_cells(self, relation, spec, categories):
        """The sum's cells: each person's values, from the engine's per-person aggregates."""
        agg = relation.answer(PersonCells(spec.contribution.person, spec.column, spec.lower,
                                          spec.upper))
        return person_cells(agg), agg.left_out, None

    def reach(self, spec):
        return max(abs(spec.lower), abs(spec.upper))


class PartsPage(ClampedPage):
    """One number of a clamped numeric column post-processed from several noisy parts (a
    mean, a variance): its true answer is the clamped sum and the count of values."""

    def true_answer(self, data, spec):
        return true_answers.bounded_mean_parts(data, spec.column, lower=spec.lower,
                                               upper=spec.upper,
                                               contribution=spec.contribution)

    # its error is a ratio's: not split by the bounds-cost panel
    breaks_down = False


class CellsPage(PageKind):
    """A count per category of a categorical column (a histogram)."""

    column_type = "categorical"

    def categories(self, settings: PageSettings) -> model.Categories:
        if settings.declared is not None and settings.declared.categories is not None:
            return settings.declared.categories
        values: Sequence[object] | None = (settings.categories if settings.categories
                                           is not None else settings.labels)
        if not values:
            raise ValueError(f"{settings.column!r} has no categories to count")
        return model.Categories(plan_categories(values))

    def query_spec(self, settings: PageSettings) -> Any:
        return self.kind.spec(settings.column, self.categories(settings))

    def answer_unit(self, column_unit: str) -> str:
        return "people"

    def sensitivity_words(self, plan, neighbours):
        answer, bound, fmt, norm = plan.answer, neighbours.bound, neighbours.fmt, neighbours.norm
        shown = fmt(answer.l1_sensitivity if norm == "L1" else answer.l2_sensitivity)
        groups = ("" if bound is None or bound.max_groups is None else
                  f" in at most {bound.max_groups:,} categories")
        change = ("changes one category's count by 1" if bound is None else
                  f"changes the counts{groups} by at most L1 = "
                  f"{fmt(answer.l1_sensitivity)}, L2 = {fmt(answer.l2_sensitivity)}")
        return shown, (f"{neighbours.who} {change} ({norm} sensitivity {shown}; "
                       f"{neighbours.norm_words})")

    def true_answer(self, data, spec):
        return true_answers.histogram(data, spec.column, categories=spec.categories,
                                      contribution=spec.contribution)

    breaks_down = True

    def contribution_cells(self, relation, spec, categories):
        """The histogram's cells: each person's rows per category with rows, the categories
        sorted as text (the groups are numbered in that order), with their labels."""
        agg = relation.answer(PersonCells(spec.contribution.person, spec.column,
                                          categories=tuple(plan_categories(categories))))
        present = np.unique(agg.group)
        names = np.array([str(categories[g]) for g in present], dtype=object)
        order = np.argsort(names.astype(str), kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        group = rank[np.searchsorted(present, agg.group)]
        return (person_cells(agg, group), agg.left_out,
                tuple(str(n) for n in names[order]))


def person_cells(agg: Any, group: Any = None) -> ContributionCells:
    """The bounds-cost panel's cells of the engine's per-person aggregates (``PersonCells``):
    rows without a person id are left out; rows without a value or category add to no
    answer but count among their person's rows (the unit's one truncation ranks them too,
    so they take kept slots)."""
    if agg.rows.size == 0:
        raise ValueError("no row has both a person id and a value: nothing to break down")
    group = agg.group if group is None else group
    return ContributionCells(group=group.astype(float), rows=agg.rows.astype(float),
                             persons=agg.persons.astype(float),
                             person_rows=agg.person_rows.astype(float),
                             person_groups=agg.person_groups.astype(float),
                             value_sum=agg.value_sum, value_sum_squares=agg.value_sum_squares,
                             value_squares=agg.value_squares, raw_value_sum=agg.raw_value_sum)
