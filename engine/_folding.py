"""What every backend shares: resolving a query's columns, matching categories, and turning
the few rows a compiled query returns into an aggregate.

A compiled query returns rows of (cell index, count[, total]) where cell index -1 means a
missing value and 0 a value outside the declared categories; the functions here fold those
rows into the aggregates of :mod:`engine.queries`.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Literal

import numpy as np

from engine.cells import boolean_key, cell_key, fixed_point_total, sum_shift, summand_bound
from engine.errors import EngineError
from engine.queries import (
    Binned,
    BinsAggregate,
    CategoryCounts,
    CategoryTable,
    CellsAggregate,
    ColumnInfo,
    ColumnProfile,
    Contribution,
    DistinctValues,
    FirstRows,
    GroupedSum,
    GroupedSumAggregate,
    HistogramAggregate,
    JointAggregate,
    NumericBins,
    PersonCells,
    Profile,
    ProfileAggregate,
    RowsPerPersonAggregate,
    TableAggregate,
    category_kind,
)
from engine.sources import FileSource, FrameSource

#: How categories are compared with a column: as text, as exact integers, as reals, as
#: booleans, a text column's keys in lower case with declared booleans ("text_boolean"), or
#: never (the kinds differ: every present value is outside, as in pandas).
MatchKind = Literal["text", "integer", "real", "boolean", "text_number", "text_boolean",
                    "never"]

_INT64 = 2**63


def column_index(columns: Sequence[ColumnInfo], name: str, role: str, where: str) -> int:
    """Position of the first column called ``name``; EngineError naming the columns if none."""
    for i, info in enumerate(columns):
        if info.name == name:
            return i
    shown = ", ".join(repr(c.name) for c in columns[:20])
    more = f" and {len(columns) - 20} more" if len(columns) > 20 else ""
    raise EngineError(f"The {role} {name!r} is not a column of {where} (its columns: "
                      f"{shown}{more}). Choose one of its columns; if the file changed, "
                      "reload the dataset.")


def reads_text(source: object, query: object) -> bool:
    """Whether ``query`` reads a CSV file's cells as text, each row's value on its own (an
    upload's too: a ``FrameSource`` with ``cells``, the file's cells a release reads).

    A CSV column's guessed type depends on every value in it (one person's "x" turns a column
    of codes from numbers to text; a value past the type sniffer's sample fails the read), so
    every query whose answer a release uses — or a page's simulation of it — reads each cell
    as its text: a number column's values as the numbers they read as, row by row, and
    categories matched against each row's own text. Only what the pages show about the
    columns (their profile, bins, first rows, and examples of values) reads the guessed
    types. Parquet files and tables carry their own types, which no row changes."""
    if not ((isinstance(source, FileSource) and source.format == "csv")
            or (isinstance(source, FrameSource) and source.cells is not None)):
        return False
    if isinstance(query, DistinctValues):
        return query.limit is None       # every key, as partition selection reads them
    return not isinstance(query, Profile | NumericBins | FirstRows)


def as_text(columns: Sequence[ColumnInfo]) -> tuple[ColumnInfo, ...]:
    """The columns as text (``reads_text``): names kept, every kind ``"text"``."""
    return tuple(ColumnInfo(c.name, "text", "VARCHAR") for c in columns)


def numeric_column(columns: Sequence[ColumnInfo], name: str, where: str) -> int:
    """The column read as numbers. Any type will do: a number column as it is, any other row
    by row (text that reads as a number is that number, anything else is missing), so that no
    value of one row — which can turn a CSV column's inferred type from numbers to text —
    changes how the other rows are read, and nothing the data holds is refused."""
    return column_index(columns, name, "column", where)


def match_kind(column: ColumnInfo, categories: tuple[object, ...], where: str) -> MatchKind:
    """How to compare ``column``'s values with declared ``categories`` (pandas' equality,
    a boolean and a text by ``engine.cells`` rule 6: the text's key in lower case)."""
    if column.kind == "other":
        raise EngineError(f"The column {column.name!r} of {where} holds {column.type_name} "
                          "values, which cannot be used as categories.")
    kind = category_kind("categories", categories)
    if column.kind == "text":
        # numbers declared for a text column: each row's text as the number it reads as (a
        # CSV column of codes turns to text when one row holds a word: the others still match)
        # booleans declared for a text column (a CSV's "true", "True", "TRUE"; rule 6): each
        # row's key in lower case, so the Parquet file and its CSV count the same rows
        return {"text": "text", "number": "text_number", "boolean": "text_boolean"}[kind]
    if column.kind == "boolean":
        # texts declared for a boolean column (rule 6): those that are a boolean's key in
        # lower case ("true", "True"; "yes" is none) match that boolean
        if kind == "text" and any(boolean_key(c) is not None for c in categories):
            return "boolean"
        return "boolean" if kind == "boolean" else "never"
    if kind == "text":
        # texts declared for a number column: by canonical key (engine.cells, rule 6: the
        # declared "0012" is the integer 12), as the same file's cells read as text
        return "text"
    if kind != "number":
        return "never"
    if column.kind == "integer" and all(
            isinstance(c, int) and -_INT64 <= c < _INT64 for c in categories):
        return "integer"
    return "real"


def category_values(kind: MatchKind, categories: tuple[object, ...]) -> list[object]:
    """The categories as the backend compares them: declared texts as their canonical keys
    (``engine.cells.cell_key``: the declared "0012" and a cell "12" are one key), declared
    numbers on a text column as the numbers the cells read as (rule 4); on a boolean column,
    each category as the boolean it is (``engine.cells.boolean_key``: a declared "True" is
    True, "yes" None, which no cell is), and booleans on a text column as their keys
    ("true", "false"), which a cell's key in lower case matches (rule 6)."""
    if kind in ("text", "text_boolean"):
        return [cell_key(c) for c in categories]
    if kind == "boolean":
        return [boolean_key(c) for c in categories]
    if kind in ("real", "text_number"):
        return [float(c) for c in categories]
    if kind == "integer":
        return [int(c) for c in categories]
    return list(categories)


def key_text(value: object) -> str:
    """The canonical text of one category value: a pure function of the value alone.

    ``text:`` and the string as a JSON literal (ASCII), ``bool:true`` / ``bool:false``,
    ``number:`` and the number (a whole number within ±2^63 as an integer, so 2 and 2.0 read
    alike; any other as ``repr`` of its float). The same value gives the same text whatever
    list of categories or keys it is in, so ranking a person's groups by a hash of it depends
    on that person's rows only (never on which other keys the data holds).
    """
    if isinstance(value, bool):
        return "bool:true" if value else "bool:false"
    if isinstance(value, str):
        return "text:" + json.dumps(value, ensure_ascii=True)
    if isinstance(value, numbers.Integral):
        return f"number:{int(value)}"
    if isinstance(value, numbers.Real):
        x = float(value)
        if x.is_integer() and -_INT64 <= x < _INT64:
            return f"number:{int(x)}"
        return f"number:{x!r}"
    raise TypeError(f"a category must be text, a number or a boolean, got "
                    f"{type(value).__name__}")


def _number_text(x: float) -> str:
    return key_text(x) if math.isfinite(x) else ("number:inf" if x > 0 else "number:-inf")


def binned_cell_texts(query: Binned) -> list[str]:
    """The canonical text of each cell of a binned query (1-based cell i is entry i - 1):
    the interval of values it holds, a pure function of the cell's own edges."""
    points = [_number_text(p) for p in query.points]
    if query.cells == "ranks":
        lows = ["number:-inf", *points]
        highs = [*points, "number:inf"]
        out = []
        for j, (low, high) in enumerate(zip(lows, highs, strict=True)):
            out.append(f"between:{low},{high}")
            if j < len(points):
                out.append(f"equal:{points[j]}")
        return out
    lows, highs = points[:-1], points[1:]
    if query.outside == "clamp":  # the end bins also hold the values beyond them
        lows, highs = ["number:-inf", *lows[1:]], [*highs[:-1], "number:inf"]
    bins = [f"bin:[{a},{b})" for a, b in zip(lows, highs, strict=True)]
    bins[-1] = bins[-1][:-1] + "]"
    if query.outside == "separate":
        return [f"below:{points[0]}", *bins, f"above:{points[-1]}"]
    return bins


def cell_texts(query: CategoryCounts | Binned | GroupedSum) -> list[str]:
    """The canonical text of each cell (1-based cell i is entry i - 1) of a one-column query:
    its category's :func:`key_text`, or a bin's interval."""
    if isinstance(query, Binned):
        return binned_cell_texts(query)
    return [key_text(c) for c in query.categories]


def crosstab_texts(query: CategoryTable) -> tuple[list[str], list[str]]:
    """The row and column categories' texts; cell (i, j)'s text is ``row | column`` (each
    text is self-delimiting, so the pair reads back one way)."""
    return ([key_text(c) for c in query.row_categories],
            [key_text(c) for c in query.column_categories])


def exact_sum(column: ColumnInfo, lower: float, upper: float) -> bool:
    """Sum in integers: an integer column with whole bounds that fit in 64 bits."""
    return (column.kind == "integer" and lower.is_integer() and upper.is_integer()
            and -_INT64 <= lower and upper < _INT64)


def sum_mode(column: ColumnInfo, query: object) -> str:
    """How a sum is computed: "integer" (an integer column with whole bounds, exact),
    "rounded" (each clamped value rounded to a whole number, then summed exactly: a query
    with ``whole``), "fixed" (each summand a multiple of 2^-shift, summed exactly, the total
    rounded once: ``engine.cells.fixed_point_sums``, :func:`sum_shift_of`) or "float"
    (a plain float sum: only a squared deviation whose bound overflows float64 or underflows
    to 0, a half-width above 10^154 or below 10^-162)."""
    if getattr(query, "squared", False) or getattr(query, "centre", 0.0) != 0.0:
        return "fixed" if 0.0 < _summand_bound(query) < math.inf else "float"
    if exact_sum(column, query.lower, query.upper):
        return "integer"
    return "rounded" if getattr(query, "whole", False) else "fixed"


def _summand_bound(query: object) -> float:
    return summand_bound(query.lower, query.upper,  # type: ignore[attr-defined]
                         getattr(query, "centre", 0.0), getattr(query, "squared", False))


def sum_shift_of(query: object, mode: str) -> int:
    """The power of two a sum in ``mode`` scales its summands by (0 but in "fixed" mode),
    from the query's public bounds (and centre) alone."""
    return sum_shift(_summand_bound(query)) if mode == "fixed" else 0


def to_float(value: object, shift: int = 0) -> float:
    """A backend's sum (int, Decimal, float or None) as float64 (inf when it overflows): a
    whole total of multiples of 2^-``shift`` rounded once."""
    if value is None:
        return 0.0
    if isinstance(value, int | Decimal):
        return fixed_point_total(value, shift)
    return float(value)  # type: ignore[arg-type]


def check_contribution(columns: Sequence[ColumnInfo], contribution: Contribution | None,
                       where: str) -> int | None:
    if contribution is None:
        return None
    i = column_index(columns, contribution.person, "person-id column", where)
    if columns[i].kind == "other":
        raise EngineError(f"The person-id column {contribution.person!r} of {where} holds "
                          f"{columns[i].type_name} values: choose a column of numbers or text.")
    return i


def fold_cells(rows: Iterable[Sequence[object]], cells: int) -> tuple[np.ndarray, int, int]:
    """(counts per cell, outside, missing) from rows of (index, count); index 1-based."""
    counts = np.zeros(cells, dtype=np.int64)
    outside = missing = 0
    for index, n in rows:
        index, n = int(index), int(n)
        if index < 0:
            missing += n
        elif index == 0:
            outside += n
        else:
            counts[index - 1] += n
    return counts, outside, missing


def histogram_aggregate(rows: Iterable[Sequence[object]], cells: int, *,
                        kept: Iterable[Sequence[object]] | None = None,
                        missing_person_rows: int = 0) -> HistogramAggregate:
    """The aggregate from the unbounded rows and, with contribution bounds, the kept ones.

    ``kept`` rows are (cell, kept count, eligible count): eligible rows have a person id and a
    declared value; the difference is what the bounds dropped.
    """
    counts, outside, missing = fold_cells(rows, cells)
    dropped = 0
    if kept is not None:
        counts = np.zeros(cells, dtype=np.int64)
        for index, k, n in kept:
            counts[int(index) - 1] += int(k or 0)
            dropped += int(n or 0) - int(k or 0)
    return HistogramAggregate(counts, outside, missing, missing_person_rows, dropped)


def table_aggregate(rows: Iterable[Sequence[object]], shape: tuple[int, int], *,
                    kept: Iterable[Sequence[object]] | None = None,
                    missing_person_rows: int = 0) -> TableAggregate:
    """From rows of (row index, column index, count) and optional kept (cell, kept, eligible)."""
    counts = np.zeros(shape, dtype=np.int64)
    row_outside = column_outside = missing = 0
    for a, b, n in rows:
        a, b, n = int(a), int(b), int(n)
        if a < 0 or b < 0:
            missing += n
        if a == 0:
            row_outside += n
        if b == 0:
            column_outside += n
        if a > 0 and b > 0:
            counts[a - 1, b - 1] += n
    dropped = 0
    if kept is not None:
        flat = np.zeros(shape[0] * shape[1], dtype=np.int64)
        for index, k, n in kept:
            flat[int(index) - 1] += int(k or 0)
            dropped += int(n or 0) - int(k or 0)
        counts = flat.reshape(shape)
    return TableAggregate(counts, row_outside, column_outside, missing, missing_person_rows,
                          dropped)


def joint_aggregate(rows: Sequence[Sequence[object]], k: int, *, kept: bool = False,
                    missing_person_rows: int = 0) -> JointAggregate:
    """A :class:`JointCells` answer from rows (k codes, count[, rows before truncation]):
    empty cells left out."""
    table = np.array(rows, dtype=np.int64).reshape(-1, k + (2 if kept else 1))
    counts = table[:, k]
    dropped = int(table[:, k + 1].sum() - counts.sum()) if kept else 0
    keep = counts > 0
    return JointAggregate(table[keep, :k], counts[keep], missing_person_rows=missing_person_rows,
                          dropped_rows=dropped)


def grouped_sum_aggregate(rows: Iterable[Sequence[object]], cells: int, exact: bool, *,
                          kept: Iterable[Sequence[object]] | None = None,
                          missing_person_rows: int = 0, shift: int = 0) -> GroupedSumAggregate:
    """From rows of (cell, values, total, clamped, missing values) and, with contribution
    bounds, kept rows of (cell, total, values kept, clamped, eligible values); ``shift`` as
    :func:`to_float`'s."""
    totals = np.zeros(cells, dtype=np.float64)
    counts = np.zeros(cells, dtype=np.int64)
    outside = missing_key = missing = clamped = 0
    for index, n, total, n_clamped, n_missing in rows:
        index, n = int(index), int(n or 0)
        missing += int(n_missing or 0)
        if index < 0:
            missing_key += n
        elif index == 0:
            outside += n
        else:
            totals[index - 1] = to_float(total, shift)
            counts[index - 1] = n
            clamped += int(n_clamped or 0)
    dropped = 0
    if kept is not None:
        totals = np.zeros(cells, dtype=np.float64)
        counts = np.zeros(cells, dtype=np.int64)
        clamped = 0
        for index, total, n, n_clamped, eligible in kept:
            totals[int(index) - 1] = to_float(total, shift)
            counts[int(index) - 1] = int(n or 0)
            clamped += int(n_clamped or 0)
            dropped += int(eligible or 0) - int(n or 0)
    return GroupedSumAggregate(totals, counts, outside, missing_key, missing, clamped, exact,
                               missing_person_rows, dropped)


def rows_per_person_aggregate(rows: Iterable[Sequence[object]]) -> RowsPerPersonAggregate:
    """From rows of (person id missing, rows of a person, people with that many rows)."""
    sizes: dict[int, int] = {}
    missing = 0
    for is_missing, n, people in rows:
        if is_missing:
            missing += int(n) * int(people)
        else:
            sizes[int(n)] = sizes.get(int(n), 0) + int(people)
    keys = sorted(sizes)
    return RowsPerPersonAggregate(np.array(keys, dtype=np.int64),
                                  np.array([sizes[k] for k in keys], dtype=np.int64), missing)


def person_cells_parts(query: PersonCells, columns: Sequence[ColumnInfo], where: str
                       ) -> tuple[int, int | None, MatchKind | None]:
    """(person column, value or category column, how categories match) of a PersonCells."""
    p = check_contribution(columns, Contribution(query.person, 1), where)
    assert p is not None
    if query.column is None:
        return p, None, None
    i = numeric_column(columns, query.column, where) if query.categories is None else \
        column_index(columns, query.column, "column", where)
    kind = None if query.categories is None else match_kind(columns[i], query.categories, where)
    return p, i, kind


def cells_aggregate(rows: Iterable[Sequence[object]], left_out: object) -> CellsAggregate:
    """From rows of (1-based group, rows, person rows, person groups, pairs, Σ C, Σ C², Σ Q,
    Σ raw), in any order: the cells sorted by (group, rows, person rows, person groups)."""
    table = sorted((int(g) - 1, int(n), int(nn), int(gg), int(k), float(c), float(c2),
                    float(q), float(raw)) for g, n, nn, gg, k, c, c2, q, raw in rows)
    columns = list(zip(*table, strict=True)) if table else [()] * 9
    return CellsAggregate(*(np.array(c) for c in columns), left_out=int(left_out or 0))


#: Columns profiled per statement (each distinct count holds a hash table of its own).
PROFILE_GROUP = 16


def profile_groups(n_columns: int) -> list[range]:
    """Column positions in groups of ``PROFILE_GROUP``."""
    return [range(start, min(start + PROFILE_GROUP, n_columns))
            for start in range(0, n_columns, PROFILE_GROUP)]


def profile_aggregate(row: Sequence[object], columns: Sequence[ColumnInfo]) -> ProfileAggregate:
    """Fold one row (rows, then per column: missing, distinct[, min, max]) into a profile."""
    values = iter(row)
    rows = int(next(values) or 0)
    profiles = []
    for info in columns:
        missing, distinct = int(next(values) or 0), int(next(values) or 0)
        low = high = None
        if info.numeric:
            low, high = next(values), next(values)
            low = None if low is None else float(low)
            high = None if high is None else float(high)
        profiles.append(ColumnProfile(info.name, info.kind, missing, distinct, low, high))
    return ProfileAggregate(rows, tuple(profiles))


def bins_norm(query: NumericBins) -> float:
    """Bins per unit of the column: one float computed here, so every backend bins alike."""
    return query.bins / (query.upper - query.lower)


def bins_aggregate(rows: Iterable[Sequence[object]], bins: int) -> BinsAggregate:
    """Fold (bin index, count) rows; -1 missing, -2 below, -3 above the range."""
    counts = np.zeros(bins, dtype=np.int64)
    special = {-1: 0, -2: 0, -3: 0}
    for index, n in rows:
        index, n = int(index), int(n)
        if index < 0:
            special[index] += n
        else:
            counts[index] += n
    return BinsAggregate(counts, below=special[-2], above=special[-3], missing=special[-1])


def picked_columns(columns: Sequence[ColumnInfo], names: Sequence[str], where: str) -> list[int]:
    """Positions of ``names`` (every column when empty); EngineError for an unknown name."""
    if not names:
        return list(range(len(columns)))
    return [column_index(columns, name, "column", where) for name in names]


def rows_frame(frame: object, names: Sequence[str]) -> object:
    """A backend's frame of columns c0, c1, … renamed to the user's column names."""
    return frame.set_axis(list(names), axis=1)  # type: ignore[attr-defined]
