"""True answers for the pages, computed by the engine on the dataset's relation.

Drop-in for ``dpcore.queries``' true answers (same names, same keywords, same
``QueryAnswer``): analysis code calls ``true_answers.histogram(data, column, categories=…)``
where it called ``queries.histogram(frame, …)``. ``data`` is a :class:`Relation`; a pandas frame is
accepted too (tests, one-off calls) and answered by the engine all the same — the pandas code
path stays only as the tests' reference. Categories left out are read off the data
(:func:`dashboard.data.column_facts.data_categories`), as ``dpcore.queries`` does. Rows whose value
is outside the declared categories are left out of a histogram or a table, as a release
leaves them (``dpcore.queries`` refuses them): the pages say how many.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from dashboard.data import column_facts, engine_answers
from dashboard.data.relation import Relation, engine
from dpcore.queries import QueryAnswer
from engine import BoundedSum, CategoryCounts, CategoryTable, CountRows
from engine.queries import Contribution

__all__ = ["count", "bounded_sum", "bounded_mean_parts", "histogram", "crosstab", "Data"]

Data = Relation | pd.DataFrame


def relation_of(data: Data) -> Relation:
    if isinstance(data, Relation):
        return data
    if isinstance(data, pd.DataFrame):
        return Relation.of_frame(data)
    raise TypeError(f"data must be a Relation or a pandas DataFrame, got {type(data).__name__}")


def count(data: Data, *, contribution: Contribution | None = None) -> QueryAnswer:
    relation = relation_of(data)
    relation.answer(CountRows(contribution))  # the first scan, under its spinner
    return engine_answers.count(engine(), relation.source, contribution=contribution)


def bounded_sum(data: Data, column: str, *, lower: float, upper: float,
                contribution: Contribution | None = None) -> QueryAnswer:
    relation = relation_of(data)
    relation.answer(BoundedSum(column, lower, upper, contribution))  # first scan: spinner
    return engine_answers.bounded_sum(engine(), relation.source, column, lower=lower, upper=upper,
                                      contribution=contribution)


def bounded_mean_parts(data: Data, column: str, *, lower: float, upper: float,
                       contribution: Contribution | None = None
                       ) -> tuple[QueryAnswer, QueryAnswer]:
    relation = relation_of(data)
    relation.answer(BoundedSum(column, lower, upper, contribution))  # first scan: spinner
    return engine_answers.bounded_mean_parts(engine(), relation.source, column, lower=lower,
                                             upper=upper, contribution=contribution)


def histogram(data: Data, column: str, *,
              categories: Sequence[object] | None = None,
              contribution: Contribution | None = None) -> QueryAnswer:
    relation = relation_of(data)
    if categories is None:
        categories = column_facts.data_categories(relation, column)
    categories = column_facts.plan_categories(categories)
    relation.answer(CategoryCounts(column, tuple(categories), contribution))  # first scan: spinner
    return engine_answers.histogram(engine(), relation.source, column, categories=categories,
                                    contribution=contribution, drop_outside=True)


def crosstab(data: Data, row: str, column: str, *,
             row_categories: Sequence[object] | None = None,
             column_categories: Sequence[object] | None = None,
             contribution: Contribution | None = None) -> QueryAnswer:
    relation = relation_of(data)
    if row_categories is None:
        row_categories = column_facts.data_categories(relation, row)
    if column_categories is None:
        column_categories = column_facts.data_categories(relation, column)
    row_categories = column_facts.plan_categories(row_categories)
    column_categories = column_facts.plan_categories(column_categories)
    relation.answer(CategoryTable(row, column, tuple(row_categories), tuple(column_categories),
                             contribution))  # first scan: spinner
    return engine_answers.crosstab(engine(), relation.source, row, column,
                                   row_categories=row_categories,
                                   column_categories=column_categories,
                                   contribution=contribution, drop_outside=True)
