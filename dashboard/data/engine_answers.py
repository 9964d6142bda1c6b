"""The engine's aggregates as ``dpcore.queries.QueryAnswer``, with dpcore's sensitivities: the
dashboard's drop-in for the pandas path (the engine itself returns true values only).

Each function answers what its namesake in ``dpcore.queries`` answers on a frame — the same
true value, sensitivities (one row = one person), labels, description and missing/clamped
counts — but computed by the engine on any source. The dashboard swaps
``queries.histogram(frame, c, categories=cats)`` for ``engine_answers.histogram(engine, source, c,
categories=cats)``. With ``contribution`` (a person-id column and bounds) the engine drops
the rows beyond the bounds first, and the sensitivities are the person-level ones of
``dpcore.contributions`` (neighbours differ by all rows of one person).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpcore.contributions import (
    ContributionBounds,
    Sensitivity,
    count_sensitivity,
    sum_sensitivity,
)
from dpcore.queries import QueryAnswer
from engine.queries import (
    BoundedSum,
    CategoryCounts,
    CategoryTable,
    Contribution,
    CountRows,
    DistinctValues,
)
from engine.service import Engine
from engine.sources import Source

__all__ = ["count", "bounded_sum", "bounded_mean_parts", "histogram", "crosstab"]


def _bounds(contribution: Contribution | None) -> ContributionBounds:
    """The bounds the sensitivities follow (one row = one person when None)."""
    if contribution is None:
        return ContributionBounds(1)
    return ContributionBounds(contribution.max_rows, contribution.max_groups)


def _per_person(contribution: Contribution | None) -> Sensitivity:
    """L1/L2 of a count, or of counts by category, under ``contribution``'s bounds."""
    return count_sensitivity(_bounds(contribution))


def count(engine: Engine, source: Source, *,
          contribution: Contribution | None = None) -> QueryAnswer:
    """The number of rows (L1 = L2 = 1; r under a contribution bound of r rows)."""
    rows = engine.answer(source, CountRows(contribution)).rows
    sens = _per_person(contribution)
    return QueryAnswer(true_value=np.array(float(rows)), l1_sensitivity=sens.l1,
                       l2_sensitivity=sens.l2, integer_valued=True,
                       description="number of rows")


def _integer_column(engine: Engine, source: Source, column: str) -> bool:
    return any(c.name == column and c.kind == "integer"
               for c in engine.columns(source))


def bounded_sum(engine: Engine, source: Source, column: str, *, lower: float,
                upper: float, contribution: Contribution | None = None) -> QueryAnswer:
    """The sum of ``column`` clamped to ``[lower, upper]``, as ``dpcore.queries.bounded_sum``.

    Raises ValueError when the sum overflows float64 (narrow the bounds), EngineError when
    the column is missing or not numeric.
    """
    query = BoundedSum(column, lower, upper, contribution)
    agg = engine.answer(source, query)
    lower, upper = query.lower, query.upper
    if not math.isfinite(agg.total):
        raise ValueError(f"the sum of {column} clamped to [lower, upper] = [{lower:g}, "
                         f"{upper:g}] overflows float64: narrow the bounds")
    sens = sum_sensitivity(_bounds(contribution), lower=lower, upper=upper)
    integer_valued = (_integer_column(engine, source, column) and lower.is_integer()
                      and upper.is_integer())
    return QueryAnswer(
        true_value=np.array(agg.total), l1_sensitivity=sens.l1,
        l2_sensitivity=sens.l2, integer_valued=bool(integer_valued),
        description=f"sum of {column} clamped to [{lower:g}, {upper:g}]",
        clamped_rows=agg.clamped, missing_rows=agg.missing, lower=lower, upper=upper)


def bounded_mean_parts(engine: Engine, source: Source, column: str, *, lower: float,
                       upper: float, contribution: Contribution | None = None
                       ) -> tuple[QueryAnswer, QueryAnswer]:
    """(clamped sum, number of non-missing values): one scan, as ``bounded_mean_parts``."""
    sum_answer = bounded_sum(engine, source, column, lower=lower, upper=upper,
                             contribution=contribution)
    present = engine.answer(source, BoundedSum(column, lower, upper, contribution)).rows
    sens = _per_person(contribution)
    count_answer = QueryAnswer(
        true_value=np.array(float(present)), l1_sensitivity=sens.l1, l2_sensitivity=sens.l2,
        integer_valued=True, description=f"number of non-missing values of {column}",
        missing_rows=sum_answer.missing_rows)
    return sum_answer, count_answer


def _outside_error(engine: Engine, source: Source, column: str, categories: tuple,
                   rows: int, name: str) -> ValueError:
    examples = engine.answer(source, DistinctValues(column, limit=5, exclude=categories))
    return ValueError(
        f"column {column!r} has {rows} row(s) whose value is not in {name} (for example "
        f"{', '.join(map(repr, examples.values))}); add these values to {name} or filter "
        "those rows out first")


def histogram(engine: Engine, source: Source, column: str, *,
              categories: Sequence[object],
              contribution: Contribution | None = None,
              drop_outside: bool = False) -> QueryAnswer:
    """Counts over every declared category, zeros kept (L1 = L2 = 1).

    Values outside ``categories`` raise ValueError naming a few of them, as in
    ``dpcore.queries.histogram``; with ``drop_outside`` their rows are left out, as a release
    leaves them (the pages say how many: ``dashboard.data.left_out``). Categories must be
    given: read them with ``DistinctValues`` (and flag them as read from the data) when none
    are declared.
    """
    query = CategoryCounts(column, tuple(categories), contribution)
    agg = engine.answer(source, query)
    if agg.outside and not drop_outside:
        raise _outside_error(engine, source, column, query.categories, agg.outside,
                             "categories")
    sens = _per_person(contribution)
    return QueryAnswer(
        true_value=agg.counts.astype(np.float64), l1_sensitivity=sens.l1,
        l2_sensitivity=sens.l2,
        integer_valued=True, labels=tuple(str(c) for c in query.categories),
        description=f"counts of {column} over {len(query.categories)} categories",
        missing_rows=agg.missing)


def crosstab(engine: Engine, source: Source, row: str, column: str, *,
             row_categories: Sequence[object],
             column_categories: Sequence[object],
             contribution: Contribution | None = None,
             drop_outside: bool = False) -> QueryAnswer:
    """A table of counts over every declared category pair (L1 = L2 = 1), as
    ``dpcore.queries.crosstab`` (``drop_outside``: as ``histogram``)."""
    query = CategoryTable(row, column, tuple(row_categories), tuple(column_categories),
                     contribution)
    agg = engine.answer(source, query)
    if agg.row_outside and not drop_outside:
        raise _outside_error(engine, source, row, query.row_categories, agg.row_outside,
                             "row_categories")
    if agg.column_outside and not drop_outside:
        raise _outside_error(engine, source, column, query.column_categories,
                             agg.column_outside, "column_categories")
    sens = _per_person(contribution)
    return QueryAnswer(
        true_value=agg.counts.astype(np.float64), l1_sensitivity=sens.l1,
        l2_sensitivity=sens.l2,
        integer_valued=True, labels=tuple(str(c) for c in query.row_categories),
        column_labels=tuple(str(c) for c in query.column_categories),
        description=f"counts of {row} by {column}", missing_rows=agg.missing)
