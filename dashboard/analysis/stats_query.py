"""Noisy statistics, what the user asks: the queries offered, their columns, bounds,
categories and answer ranges, and where each declaration comes from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dashboard import choices
from dashboard.choices import PrivacyChoice
from dashboard.data import column_facts
from dashboard.datasets import LoadedDataset
from dashboard.kinds import ADAPTERS, adapter_of, offered
from dashboard.person import contribution
from engine.queries import Contribution
from plan.kinds import KINDS

if TYPE_CHECKING:
    from dashboard.person import PrivacyUnit

#: Confidence levels offered for the "± alpha" error bound.
CONFIDENCE_OPTIONS = (0.5, 0.8, 0.9, 0.95, 0.99)
#: Shares of the mean's budget the noisy sum may take (the noisy count gets the rest).
SUM_SHARE_OPTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

#: A histogram column is the default when it has at most this many categories.
DEFAULT_MAX_CATEGORIES = 20

# --------------------------------------------------------------------------------------------
# What the user asks: queries, columns, bounds


def reads_column(query: str) -> bool:
    """Whether ``query`` reads a column: every kind but a number of rows of the whole table
    (a count: rows counted, not one count per cell)."""
    return adapter_of(query).column_type is not None


def _total_of_bounds(query: str) -> bool:
    """Whether ``query``'s answer is one total of values clamped to the bounds (a sum: its
    range is the rows times the bounds; a mean or a variance is made of parts)."""
    kind = KINDS[query]
    return kind.relative_error and not kind.made_of_parts


@dataclass(frozen=True)
class QuerySpec:
    """A query as the user picked it: kind, column, clamping bounds, declared categories."""

    query: str
    column: str | None = None
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] | None = None
    #: the privacy unit's truncation (``contribution_for``); None: one row = one person
    contribution: Contribution | None = None

    def describe(self) -> str:
        """e.g. 'mean of age' (the column name is the user's: escape it before display)."""
        return adapter_of(self.query).describe(self.column)


def contribution_for(unit: PrivacyUnit, query: str, seed: int) -> Contribution | None:
    """The engine's truncation for ``query`` under ``unit``: a count, sum or mean keeps at
    most max rows per person in all (there are no groups); a histogram also bounds the
    categories a person is in when the unit says so. ``seed`` picks which rows are kept."""
    return contribution(unit, grouped=KINDS[query].per_cell, seed=seed)


def page_spec(loaded: LoadedDataset, query: str, column: str | None = None,
              lower: float | None = None, upper: float | None = None, *,
              unit: PrivacyUnit | None, seed: int) -> QuerySpec:
    """The Noisy statistics page's query for its settings: what the page simulates and what
    Choose epsilon sweeps (both build it here).

    A count takes no column; a sum, mean or variance takes clamping bounds (a missing one is
    the column's suggestion, :func:`default_bounds`, as the page's widget starts); a
    histogram takes the column's declared categories (None: found in the data). ``unit``
    and ``seed``: the privacy unit's truncation (:func:`contribution_for`; None: one row =
    one person).
    """
    column = column if reads_column(query) else None
    if adapter_of(query).bounded:
        if lower is None or upper is None:
            suggested = default_bounds(loaded, column)
            lower = suggested.lower if lower is None else lower
            upper = suggested.upper if upper is None else upper
        lower, upper = float(lower), float(upper)
    else:
        lower = upper = None
    categories = declared_categories(loaded, column) if KINDS[query].per_cell else None
    bound = None if unit is None else contribution_for(unit, query, seed)
    return QuerySpec(query, column, lower, upper, categories, bound)


def neighbours_of(contribution: Contribution | None) -> str:
    """The neighbour relation in the parameters files: one row, or one person's rows."""
    if contribution is None:
        return "add/remove one row (one row = one person)"
    groups = ("" if contribution.max_groups is None else
              f" in each of at most {contribution.max_groups:,} groups")
    return (f"add/remove one person (all rows with the same {contribution.person}; at most "
            f"{contribution.max_rows:,} rows kept per person{groups}, chosen at random with "
            f"seed {contribution.seed})")


def unit_note(contribution: Contribution | None) -> str:
    """Who the neighbours are, next to a sensitivity: '(neighbours: add or remove …)'."""
    if contribution is None:
        return "(neighbours: add or remove one row)"
    groups = ("" if contribution.max_groups is None else
              f" in each of at most {contribution.max_groups:,} categories")
    return (f"(neighbours: add or remove one person, all rows with the same "
            f"{contribution.person}; at most {contribution.max_rows:,} rows per person"
            f"{groups})")


@dataclass(frozen=True)
class BoundsSuggestion:
    """Starting bounds for a numeric column and where they come from."""

    lower: float
    upper: float
    public: bool
    note: str
    origin: str = ""

    def shown_note(self, lower: float | None, upper: float | None) -> tuple[str, bool]:
        """(note, warn) under the bounds the user has now: the warning that the bounds come
        from the data holds only while they are the suggested ones."""
        if self.public or (lower, upper) == (self.lower, self.upper):
            return self.note, not self.public
        return (f"Your bounds [{lower:g}, {upper:g}] replace the suggestion read off the data "
                f"([{self.lower:g}, {self.upper:g}]): values outside are clamped. Type bounds "
                "you know without looking at the data."), False


#: Where a declaration comes from, in the parameters file.
TYPED = "typed by the user"
FROM_DATA_BOUNDS = ("the data: round numbers around its own minimum and maximum (they reveal "
                    "roughly how large the values are)")


def available_queries(loaded: LoadedDataset, unit: PrivacyUnit | None = None) -> list[str]:
    """The queries this dataset supports under the privacy ``unit`` (each kind's page
    adapter says when: a count always, the others by column type)."""
    return offered(loaded, unit)


def query_label(query: str) -> str:
    """The page's option for ``query``, in the user's words."""
    return ADAPTERS[query].label


def columns_for(loaded: LoadedDataset, query: str) -> list[str]:
    """Columns a query can use (its page adapter's: numeric for a sum, a mean or a variance,
    categorical for a histogram)."""
    return adapter_of(query).columns(loaded)


def _category_count(loaded: LoadedDataset, column: str) -> int:
    domain = loaded.domains.get(column)
    if domain is not None and domain.categories is not None:
        return len(domain.categories)
    return len(column_facts.data_categories(loaded.relation, column))


def default_column(loaded: LoadedDataset, query: str) -> str | None:
    """The column shown first: a public-range numeric column, or a mid-sized categorical one.

    For a histogram, the column with the most categories up to ``DEFAULT_MAX_CATEGORIES``
    (education on Adult): small categories next to large ones show how noise hits each.
    """
    columns = columns_for(loaded, query)
    if not columns:
        return None
    if KINDS[query].per_cell:
        sizes = [_category_count(loaded, c) for c in columns]
        fitting = [s if s <= DEFAULT_MAX_CATEGORIES else -1 for s in sizes]
        return columns[int(np.argmax(fitting))]
    public = [c for c in columns if getattr(loaded.domains.get(c), "kind", "") == "numeric"]
    return (public or columns)[0]


def _round_up(x: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is >= x (x > 0)."""
    power = 10.0 ** math.floor(math.log10(x))
    for step in (1, 2, 5, 10):
        if step * power >= x:
            return float(step * power)
    return float(10 * power)  # pragma: no cover - the loop always returns


def default_bounds(loaded: LoadedDataset, column: str) -> BoundsSuggestion:
    """The column's public range if known, else round numbers around the data's range.

    Round numbers around the data's minimum and maximum still leak (roughly how large the
    largest value is): the note says so, and the user should replace them.
    """
    domain = loaded.domains.get(column)
    if domain is not None and domain.kind == "numeric" and domain.from_data:
        unit = f" {domain.unit}" if domain.unit else ""
        note = (f"These bounds, [{domain.lower:g}, {domain.upper:g}]{unit}, are declared for "
                f"the column but read off the data ({domain.source}). A bound read off the "
                "data leaks: it says that someone has exactly that value. Type bounds you "
                "know without looking at the data for a release that is private in full.")
        return BoundsSuggestion(float(domain.lower), float(domain.upper), False, note)
    if domain is not None and domain.kind == "numeric":
        unit = f" {domain.unit}" if domain.unit else ""
        note = (f"Bounds from the column's public range [{domain.lower:g}, {domain.upper:g}]"
                f"{unit} — source: {domain.source}. Values outside are clamped. Bounds taken "
                "from the data itself (its minimum and maximum) would leak information "
                "about the people in it.")
        return BoundsSuggestion(float(domain.lower), float(domain.upper), True, note,
                                origin=f"the column's public range (source: {domain.source})")
    extremes = column_facts.value_range(loaded.relation, column) or (0.0, 1.0)
    low, high = (v if math.isfinite(v) else d for v, d in zip(extremes, (0.0, 1.0),
                                                              strict=True))
    lower = 0.0 if low >= 0 else -_round_up(-low)
    upper = _round_up(high) if high > 0 else 0.0
    if upper <= lower:
        upper = lower + 1.0
    note = ("No public range is known for this column, so the bounds start at round numbers "
            "around the data's own minimum and maximum. Bounds taken from the data itself leak "
            "information about the people in it (here, roughly how large the largest value "
            "is): replace them with bounds you know without looking at the data.")
    return BoundsSuggestion(lower, upper, False, note, origin=FROM_DATA_BOUNDS)


def declared_categories(loaded: LoadedDataset, column: str) -> tuple[str, ...] | None:
    """The column's public category list, or None when the categories come from the data."""
    domain = loaded.domains.get(column)
    if domain is not None and domain.categories is not None:
        return tuple(domain.categories)
    return None


def default_answer_range(spec: QuerySpec, rows: int) -> tuple[float, float]:
    """A public range for the answer itself, needed by the bounded and clamped mechanisms.

    A count lies in [0, N] and a sum of values clamped to [L, U] in [N·min(L, 0), N·max(U, 0)],
    with N a round number at or above the number of rows (the built-in datasets publish their
    size; for an upload the user should type a size they could publish).
    """
    size = _round_up(max(rows, 1))
    if _total_of_bounds(spec.query) and spec.lower is not None and spec.upper is not None:
        return size * min(spec.lower, 0.0), size * max(spec.upper, 0.0)
    return 0.0, size


def declaration_origins(loaded: LoadedDataset, spec: QuerySpec, *,
                        answer_range: tuple[float, float] | None,
                        upload: bool) -> dict[str, str]:
    """Where the clamping bounds and the answer range come from, for the parameters file:
    typed by the user, public knowledge, or the data (an upload's row count is its own)."""
    origins: dict[str, str] = {}
    bounds_from_data = False
    if spec.lower is not None and spec.column is not None:
        suggested = default_bounds(loaded, spec.column)
        if (spec.lower, spec.upper) == (suggested.lower, suggested.upper):
            origins["clamping_bounds_from"] = suggested.origin
            bounds_from_data = not suggested.public
        else:
            origins["clamping_bounds_from"] = TYPED
    if answer_range is not None:
        times = " times the clamping bounds" if _total_of_bounds(spec.query) else ""
        if tuple(answer_range) != default_answer_range(spec, len(loaded.relation)):
            origins["answer_range_from"] = TYPED
        elif upload or bounds_from_data:
            origins["answer_range_from"] = ("the data: a round number at or above its number "
                                            f"of rows{times}")
        else:
            origins["answer_range_from"] = ("the dataset's published number of rows, rounded "
                                            f"up{times}")
    return origins


def answer_unit(loaded: LoadedDataset, spec: QuerySpec) -> str:
    """The unit of the answer and of its error: people, or the column's unit when known
    (squared for a variance): the query's page adapter says which."""
    domain = loaded.domains.get(spec.column)
    unit = domain.unit if domain is not None and domain.unit else ""
    return adapter_of(spec.query).answer_unit(unit)


def comparable_mechanisms(choice: PrivacyChoice, *, query: str,
                          integer_query: bool) -> list[str]:
    """The mechanisms valid at the same privacy measure, other than the one chosen."""
    options = choices.offered(choice.measure, integer_query=integer_query,
                              allowed=allowed_mechanisms(query))
    return [m for m in options if m != choice.mechanism]


def allowed_mechanisms(query: str) -> tuple[str, ...] | None:
    """The mechanisms a query takes (None: every one the measure offers). A mean or a
    variance is made of parts that take no answer range; a variance's, on real numbers."""
    return adapter_of(query).mechanisms()


def uses_answer_range(mechanisms: Sequence[str]) -> bool:
    """Whether any of these mechanisms needs a public range for the answer."""
    return choices.uses_answer_range(mechanisms)
