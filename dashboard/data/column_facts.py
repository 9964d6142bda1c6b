"""What the pages need to know about a dataset's columns, computed by the engine.

The column profile (rows; per column missing cells, distinct values, minimum and maximum),
which columns numeric and categorical queries can use, a column's categories when none are
declared, the Data page's first rows and distribution counts. Every figure here is read off
the data: for the data owner's eyes and for suggestions that the pages flag as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dashboard.data.model import MAX_CATEGORIES
from dashboard.data.relation import Relation
from dashboard.data.upload import missing_cells_warning
from engine import CategoryCounts, DistinctValues, FirstRows, NumericBins, Profile
from engine.queries import ColumnProfile, ProfileAggregate

#: Bars of a numeric column's histogram on the Data page.
HISTOGRAM_BINS = 40


def profile_of(relation: Relation) -> ProfileAggregate:
    """The engine's one-scan profile of every column (cached by data version)."""
    return relation.answer(Profile())


def _column(relation: Relation, column: str) -> ColumnProfile:
    for info in profile_of(relation).columns:
        if info.name == column:
            return info
    raise ValueError(f"column {column!r} is not in {relation.describe()}")


def missing_warning(relation: Relation) -> str | None:
    """The upload's warning about missing cells, counted by the engine (NULL or NaN cells
    per column, in the one-scan profile): the same sentence for a data-folder file."""
    return missing_cells_warning(sum(c.missing for c in profile_of(relation).columns))


def profile_table(relation: Relation) -> pd.DataFrame:
    """One row per column: type, missing and distinct counts, min and max if numeric.

    Columns ``column``, ``type`` ("numeric" or "categorical"), ``missing``, ``distinct``
    (int64), ``min``, ``max`` (float64, NaN for non-numeric or all-missing columns), as
    ``dashboard.datasets.profile`` computed with pandas.
    """
    rows = [{"column": c.name, "type": "numeric" if c.kind in ("integer", "float")
             else "categorical", "missing": c.missing, "distinct": c.distinct,
             "min": np.nan if c.minimum is None else c.minimum,
             "max": np.nan if c.maximum is None else c.maximum}
            for c in profile_of(relation).columns]
    out = pd.DataFrame(rows, columns=["column", "type", "missing", "distinct", "min", "max"])
    return out.astype({"missing": np.int64, "distinct": np.int64, "min": np.float64,
                       "max": np.float64})


def numeric_columns(relation: Relation) -> list[str]:
    """Columns that numeric queries (sum, mean, …) can use: integer or floating point."""
    return [c.name for c in relation.column_info() if c.kind in ("integer", "float")]


def frame_categories(relation: Relation, column: str) -> tuple[str, ...] | None:
    """A pandas Categorical's own categories (a built-in's or an upload's), or None."""
    frame = getattr(relation.source, "frame", None)
    if frame is not None and column in frame.columns:
        series = frame[column]
        if isinstance(series, pd.Series) and isinstance(series.dtype, pd.CategoricalDtype):
            return tuple(str(c) for c in series.cat.categories)
    return None


def categorical_columns(relation: Relation, declared: tuple[str, ...] = ()) -> list[str]:
    """Columns that categorical queries (histogram, crosstab) can use.

    Text columns with at most ``MAX_CATEGORIES`` categories (a Categorical's declared ones,
    else the distinct values the engine counts), and any column in ``declared`` (a public
    category list exists: integer-coded categories such as 0/1 flags or survey codes too).
    """
    out = []
    distinct = None
    for info in relation.column_info():
        if info.kind != "text":
            if info.name in declared and info.kind in ("integer", "float", "boolean"):
                out.append(info.name)
            continue
        cats = frame_categories(relation, info.name)
        if cats is not None:
            if len(cats) <= MAX_CATEGORIES:
                out.append(info.name)
            continue
        if info.name in declared:
            out.append(info.name)
            continue
        if distinct is None:
            distinct = {c.name: c.distinct for c in profile_of(relation).columns}
        if distinct.get(info.name, MAX_CATEGORIES + 1) <= MAX_CATEGORIES:
            out.append(info.name)
    return out


def plan_categories(values: Sequence[object]) -> tuple:
    """Categories as a release plan holds them (``plan.model.Categories``) and so as every
    query compares them: texts as written, finite numbers as integers when whole, anything
    else (and a list mixing kinds) as text. The engine matches a text with a cell by its
    canonical key (``engine.cells``, rule 5: "2.0" is "2", "1.50" is not "1.5") whatever type
    the column was guessed to be, so a page counts a declared category as the release does
    and no other row's cell can change which rows it counts."""
    out: list[object] = []
    for v in values:
        if isinstance(v, bool | str):
            out.append(v)
        elif isinstance(v, int | float) and math.isfinite(float(v)):
            out.append(int(v) if float(v).is_integer() else float(v))
        else:
            out.append(str(v))
    if len({type(v) for v in out}) > 1:   # mixed: the plan takes one kind, as text
        out = [str(v) for v in out]
    return tuple(out)


def data_categories(relation: Relation, column: str) -> tuple[str, ...]:
    """A column's categories read off the data (this leaks which values occur: callers
    flag it): a Categorical's own list, else the sorted distinct values (at most
    ``MAX_CATEGORIES``)."""
    cats = frame_categories(relation, column)
    if cats is not None:
        return cats
    found = relation.answer(DistinctValues(column, limit=MAX_CATEGORIES))
    if found.more:
        raise ValueError(f"column {column!r} has more than {MAX_CATEGORIES:,} different "
                         "values: declare its categories, or pick another column")
    return tuple(str(v) for v in found.values)


def value_range(relation: Relation, column: str) -> tuple[float, float] | None:
    """The column's smallest and largest value, ±inf included (None when all are missing)."""
    info = _column(relation, column)
    if info.minimum is None or info.maximum is None:
        return None
    return info.minimum, info.maximum


def first_rows(relation: Relation, n: int) -> pd.DataFrame:
    """The first ``n`` rows (the Data page's preview)."""
    frame = getattr(relation.source, "frame", None)
    if frame is not None:
        return frame.head(n)
    return relation.answer(FirstRows(n)).frame


def numeric_distribution(relation: Relation, column: str,
                         declared: tuple[float, float] | None = None
                         ) -> tuple[np.ndarray, np.ndarray] | None:
    """(bin edges, counts) of a numeric column, as the Data page draws it: one bar per whole
    number over a short range, else ``HISTOGRAM_BINS`` equal bins from the minimum to the
    maximum. None when the column has no value or an infinite one (no finite range to bin).
    ``declared``: the bounds of a text column declared numeric (the engine's profile has no
    minimum for text), binned between them, each cell read as a number on its own."""
    info = _column(relation, column)
    if info.minimum is None and declared is not None and info.kind == "text":
        edges = np.linspace(declared[0], declared[1], HISTOGRAM_BINS + 1)
        agg = relation.answer(NumericBins(column, float(edges[0]), float(edges[-1]),
                                          HISTOGRAM_BINS))
        return edges, np.asarray(agg.counts)
    if info.minimum is None or not (math.isfinite(info.minimum)
                                    and math.isfinite(info.maximum)):
        return None
    low, high = info.minimum, info.maximum
    if info.kind == "integer" and high - low <= 2 * HISTOGRAM_BINS:
        edges = np.arange(low - 0.5, high + 1.5)
    else:
        edges = np.linspace(low, high if high > low else low + 1, HISTOGRAM_BINS + 1)
    agg = relation.answer(NumericBins(column, float(edges[0]), float(edges[-1]),
                                      len(edges) - 1))
    return edges, np.asarray(agg.counts)


def category_distribution(relation: Relation, column: str,
                          categories: tuple[str, ...] | None) -> pd.Series:
    """Rows per category (declared categories with no rows kept), by label."""
    if categories:
        cats = plan_categories(categories)
    elif frame_categories(relation, column) is not None:
        cats = frame_categories(relation, column)
    else:   # the values as the engine holds them (booleans stay booleans)
        found = relation.answer(DistinctValues(column, limit=MAX_CATEGORIES))
        if found.more:
            raise ValueError(f"column {column!r} has more than {MAX_CATEGORIES:,} different "
                             "values: too many to draw one bar each")
        cats = found.values
    if not cats:
        return pd.Series([], dtype=np.int64)
    try:
        query = CategoryCounts(column, cats)
    except TypeError:   # dates, times: no category kind the engine counts by
        raise ValueError(f"Column {column!r} holds dates or times, neither categories nor "
                         "numbers: no distribution is drawn for it.") from None
    agg = relation.answer(query)
    return pd.Series(np.asarray(agg.counts), index=[str(c) for c in cats])
