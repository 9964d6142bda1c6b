"""The embedded backend: DuckDB's Python API running SQL that this module generates.

Safety by construction: a user's column name never enters SQL. Every relation is renamed
positionally (``AS t("c0", "c1", …)``; a frame's columns are renamed before it is
registered), so the SQL names only ``"c0"``, ``"c1"``, … (quoted all the same); file paths,
bounds, categories, seeds and limits are bound as named parameters. Frames are scanned in
place (never copied to disk); files are scanned out of core under a memory limit, spilling to
a temporary folder of the engine's own.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from engine import _folding, cells
from engine.cells import (
    KEY_INTEGER_LIMIT,
    MISSING_MARKERS,
    WHITE_SPACE,
    column_type,
    deviation_bound,
    sum_scale,
)
from engine.errors import EngineError
from engine.queries import (
    Aggregate,
    Binned,
    BoundedSum,
    CategoryCounts,
    CategoryTable,
    ColumnInfo,
    CountAggregate,
    CountRows,
    DistinctAggregate,
    DistinctValues,
    FirstRows,
    GroupedSum,
    HistogramAggregate,
    JointCells,
    NumericBins,
    PersonCells,
    Profile,
    Query,
    RowsAggregate,
    RowsPerPerson,
    SumAggregate,
    query_key,
)
from engine.sources import (
    FileSource,
    FrameSource,
    Source,
    TableSource,
    csv_column_names,
    csv_layout,
    csv_read_path,
    missing_spellings,
    parquet_parts,
)

__all__ = ["DuckDBBackend", "quote", "compile_query", "CompiledQuery", "csv_text_reader",
           "csv_names", "parquet_path"]

#: Environment variables: DuckDB's memory limit (e.g. "2GB") and its spill folder.
MEMORY_ENV = "EPSILON_LAB_DUCKDB_MEMORY"
TEMP_ENV = "EPSILON_LAB_DUCKDB_TEMP"
#: Leaves room under 2 GB for the rest of the server process (issue 9 asks for a peak under
#: 2 GB while exploring a 10^8-row file); larger aggregations spill to disk.
DEFAULT_MEMORY_LIMIT = "1GB"
_PARAM = re.compile(r"\$([A-Za-z_]\w*)")
_SRC = "__SOURCE__"  # replaced by the source's FROM clause (never by user text)
_SCHEMAS_KEPT = 256  # column lists remembered (one per source and version)
#: The types a CSV column is offered as (``engine.cells.column_type``, the upload's rule):
#: numbers or text, never BOOLEAN or DATE.
CSV_TYPES = ("BIGINT", "DOUBLE", "VARCHAR")

_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                  "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")


def quote(identifier: str) -> str:
    """A SQL identifier in double quotes, inner quotes doubled."""
    return '"' + identifier.replace('"', '""') + '"'


def _col(i: int) -> str:
    return quote(f"c{i}")


def column_kind(type_name: str) -> str:
    upper = type_name.upper()
    if upper in _INTEGER_TYPES:
        return "integer"
    if upper in ("FLOAT", "DOUBLE", "REAL") or upper.startswith("DECIMAL"):
        return "float"
    if upper == "VARCHAR" or upper.startswith("ENUM"):
        return "text"
    if upper == "BOOLEAN":
        return "boolean"
    return "other"


def _nan_possible(info: ColumnInfo) -> bool:
    return info.type_name.upper() in ("FLOAT", "DOUBLE", "REAL")


def _missing(expr: str, info: ColumnInfo) -> str:
    if _nan_possible(info):
        return f"({expr} IS NULL OR isnan({expr}))"
    return f"({expr} IS NULL)"


#: ``engine.cells.WHITE_SPACE`` as a SQL literal (no quote in it), and the missing markers.
_WHITE = "'" + WHITE_SPACE + "'"
_MARKERS = ", ".join(f"'{m}'" for m in sorted(MISSING_MARKERS))


def _is_marker(lowered: str) -> str:
    """Whether the lowered text ``lowered`` is a missing marker. Not ``lowered IN (...)``:
    DuckDB plans an ``IN`` of five or more constants as a mark join, whose key (the text
    lowered) is computed for every row before the ``CASE`` around it runs, so a number
    column's text was lowered on every row although the number branch needs none (issue 37).
    ``list_contains`` is the same test on a text (true or false: the list holds no NULL);
    on NULL it is NULL where ``IN`` is, and every caller tests ``IS NULL`` first."""
    return f"list_contains([{_MARKERS}], {lowered})"


#: A number whose digits are grouped by single underscores (``engine.cells``' pattern, in RE2,
#: without inf and nan, which hold none), ASCII white space around it as the cast allows.
_UNDERSCORED = (r"[\t\n\v\f\r ]*(?:\+-|[+-])?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?"
                r"|\.[0-9](?:_?[0-9])*)(?:[eE][+-]?[0-9](?:_?[0-9])*)?[\t\n\v\f\r ]*")


def _cast_double(t: str) -> str:
    """The double the text ``t`` reads as (``engine.cells.cell_number`` of a text whose
    space separators are removed), NaN included, NULL when it is no number: DuckDB's own
    ``TRY_CAST(t AS DOUBLE)``, except for digits grouped by underscores. DuckDB 1.5 misreads
    some of those (``100000000000000000000_0`` as 1e22, ``+00_0_48`` as 0, and refuses one
    in a fraction, ``.5_5``): such a text, when it has the rule's shape, is cast without its
    underscores, which DuckDB reads exactly as ``engine.cells`` does. A text without an
    underscore (nearly every cell) pays one ``contains``."""
    return (f"(CASE WHEN NOT contains({t}, '_') THEN TRY_CAST({t} AS DOUBLE) "
            f"WHEN regexp_full_match({t}, '{_UNDERSCORED}') "
            f"THEN TRY_CAST(replace({t}, '_', '') AS DOUBLE) END)")


def _key(expr: str, info: ColumnInfo) -> str:
    """The canonical key of a person id or group key (``engine.cells.cell_key``), NULL when
    missing: a text's white space removed, a whole number within ±2^53 as its integer's
    text, any other text as written; an integer as its text; a whole double as its
    integer's text, another as DuckDB writes it."""
    limit = KEY_INTEGER_LIMIT
    if info.kind == "text":
        t = _trimmed(expr)
        return _text_key(t, _cast_double(t))
    if _nan_possible(info) or info.kind == "float":
        d = f"CAST({expr} AS DOUBLE)"
        return (f"(CASE WHEN {expr} IS NULL OR isnan({d}) THEN NULL "
                f"WHEN isfinite({d}) AND {d} = trunc({d}) AND abs({d}) <= {limit} "
                f"THEN CAST(CAST({d} AS BIGINT) AS VARCHAR) ELSE CAST({d} AS VARCHAR) END)")
    return f"CAST({expr} AS VARCHAR)"


def _person(i: int, columns: Sequence[ColumnInfo]) -> tuple[str, str]:
    """(the person id's canonical key, whether it is missing) of column ``i``: one person
    however the id is written (``engine.cells``: 12, 012, 12.0, 1.2e1 and " 12" are one)."""
    info, x = columns[i], _col(i)
    if info.kind != "text":
        return _key(x, info), _missing(x, info)
    return _key(x, info), _text_missing(x)


def _person_group(i: int, columns: Sequence[ColumnInfo]) -> tuple[str, str]:
    """``_person``, but an integer id as the integer itself: the same groups (its key is
    its text, one text per integer) and the same text where one is hashed (``_row_key``
    casts it), at a fraction of the cost of grouping, partitioning and sorting by a text
    (issue 37)."""
    if columns[i].kind == "integer":
        return _col(i), _missing(_col(i), columns[i])
    return _person(i, columns)


def _trimmed(expr: str) -> str:
    """A text without the white space around it: ``trim(text, WHITE_SPACE)``, whose list of
    characters costs ten times the one-argument trim (0.6 s CPU for 10^6 cells), asked only
    of a text whose first or last character is white space (or is empty): the trim of any
    other text is that text. Characters are code points in both (``substring``, ``trim``)."""
    x = f"CAST({expr} AS VARCHAR)"
    return (f"(CASE WHEN contains({_WHITE}, substring({x}, 1, 1)) OR "
            f"contains({_WHITE}, substring({x}, -1, 1)) THEN trim({x}, {_WHITE}) ELSE {x} END)")


def _text_key(t: str, d: str) -> str:
    """The canonical key (``_key``) of a text from ``t``, the text trimmed (``_trimmed``),
    and ``d``, ``t`` cast to a double: written once for the per-use SQL and for the readings
    a plan computes once (``_readings_table``)."""
    return (f"(CASE WHEN {t} IS NULL OR {_is_marker(f'lower({t})')} THEN NULL "
            f"WHEN isfinite({d}) AND {d} = trunc({d}) AND abs({d}) <= {KEY_INTEGER_LIMIT} "
            f"THEN CAST(CAST({d} AS BIGINT) AS VARCHAR) ELSE {t} END)")


def _text_missing(expr: str) -> str:
    """Whether a text cell is missing (rule 3): it reads the text only (no number: a scan's
    cost is its casts). True exactly where the cell's ``_key`` is NULL."""
    t = _trimmed(expr)
    return f"({t} IS NULL OR {_is_marker(f'lower({t})')})"


def _text_number(expr: str) -> str:
    """The double a text cell reads as (rule 4), NaN included: NULL when it is no number."""
    return _cast_double(f"trim(CAST({expr} AS VARCHAR))")


def _number(expr: str, info: ColumnInfo) -> tuple[str, str]:
    """(the value as a double, whether it is missing), read row by row: a number column as
    it is; any other column's text as the number it reads as (else missing)."""
    if info.numeric:
        return f"CAST({expr} AS DOUBLE)", _missing(expr, info)
    value = _text_number(expr)
    # NULL or NaN, the text read once (isnan(NULL) is NULL): a third of a CSV sum's work
    # was this test reading each cell twice.
    return value, f"coalesce(isnan({value}), true)"


def _moment(clamped: str, query: BoundedSum) -> str:
    """What a sum adds for one clamped value: the value, or its deviation from the centre
    (squared for a sum of squares), clamped to the declared half-width ``$half``
    (``engine.cells.deviation_bound``: the subtraction can exceed it by a few ulps)."""
    if query.centre == 0.0 and not query.squared:
        return clamped
    deviation = f"greatest(least({clamped} - $centre, $half), -$half)"
    return f"({deviation} * {deviation})" if query.squared else deviation


def _summand(expr: str, info: ColumnInfo, mode: str) -> tuple[str, str, str]:
    """(value, missing, how to sum a clamped value) of a sum computed in ``mode``
    (``_folding.sum_mode``): integers exactly, whole numbers rounded per row, multiples of
    2^-shift summed exactly (``engine.cells.fixed_point_sums``: the two powers of two
    ``$f0``, ``$f1`` of ``_sum_params``; BIGINTs summed in a HUGEINT, which cannot overflow,
    ``engine.cells.SUM_BITS``), or doubles (plain, as on Spark: ``fsum`` is NaN past
    float64). DuckDB's cast of a DOUBLE to a BIGINT rounds half to even, as numpy's ``rint``
    and Spark's ``rint`` do (0.26 CPU s per 10^7 values against ``round_even``'s 0.61 and
    ``fsum``'s 0.20: bench/bench_float_sums.py)."""
    if mode == "integer":
        return f"CAST({expr} AS HUGEINT)", _missing(expr, info), "sum({})"
    value, missing = _number(expr, info)
    if mode == "rounded":
        return value, missing, "sum(CAST(round_even({}, 0) AS HUGEINT))"
    if mode == "fixed":
        return value, missing, "sum(CAST({} * $f0 * $f1 AS BIGINT))"
    return value, missing, "sum({})"


def _sum_params(query: BoundedSum | GroupedSum, mode: str) -> tuple[dict[str, object], int]:
    """(the bounds and scale a sum in ``mode`` binds, its shift: ``_folding.to_float``)."""
    if mode == "integer":
        return {"lo": int(query.lower), "hi": int(query.upper)}, 0
    params: dict[str, object] = {"lo": query.lower, "hi": query.upper}
    shift = _folding.sum_shift_of(query, mode)
    if mode == "fixed":
        params["f0"], params["f1"] = sum_scale(shift)
    return params, shift


def _cell(expr: str, info: ColumnInfo, kind: _folding.MatchKind, param: str) -> str:
    """-1 for a missing value, 0 for one outside the categories, else its 1-based position."""
    if kind in ("text", "text_boolean"):
        # a cell matches a declared text by canonical key (engine.cells, rule 6: "0012" is
        # the declared "12"); a declared number matches the number a cell reads as (rule 4:
        # "text_number" below), so "2.50" is the declared 2.5; a declared boolean its key
        # ("true") by the cell's key in lower case ("True", "TRUE")
        key = _key(expr, info)
        if kind == "text_boolean":
            key = f"lower({key})"
        return (f"(CASE WHEN {key} IS NULL THEN -1 ELSE "
                f"coalesce(list_position(CAST(${param} AS VARCHAR[]), {key}), 0) END)")
    match = {
        "integer": f"list_position(CAST(${param} AS HUGEINT[]), CAST({expr} AS HUGEINT))",
        "real": f"list_position(CAST(${param} AS DOUBLE[]), CAST({expr} AS DOUBLE))",
        "boolean": f"list_position(CAST(${param} AS BOOLEAN[]), CAST({expr} AS BOOLEAN))",
        "text_number": f"list_position(CAST(${param} AS DOUBLE[]), {_text_number(expr)})",
        "never": "NULL",
    }[kind]
    return f"(CASE WHEN {_missing(expr, info)} THEN -1 ELSE coalesce({match}, 0) END)"


def _row_key(seed: str, person: str, position: str, tag: str) -> str:
    """The md5 that orders a person's rows (or cells): the same text in DuckDB and Spark."""
    return (f"md5(concat_ws('|', CAST(${seed} AS VARCHAR), '{tag}', CAST({person} AS VARCHAR), "
            f"CAST({position} AS VARCHAR)))")


def _row_order(columns: Sequence[ColumnInfo], person: int | None = None, *,
               read: bool = False) -> tuple[list[str], list[str]]:
    """The sort keys of a person's rows by their own content (``engine.queries.Contribution``),
    as (expressions computed once per row, the ORDER BY terms reading them as ``o0``, ``o1``,
    …): first every column's value as a number, in order (a number as itself, a text as the
    number it reads as, ``_number``; missing or not a number first), then every integer
    column's exact value, every boolean as its text ("false", "true": it is no number) and
    every text that reads as no number as written, then every text that reads as a number
    as written, in order. Columns of other types (dates,
    lists) are read by no query and left out. Rows tied on every term are alike in whatever
    a query reads, and a CSV's text cells sort as the same file's typed values do (a page's
    frame and the release's cells keep the same rows; a Parquet file and the CSV of the same
    table too, a boolean column's "true" and "false" included): how a number is written
    ("1.50", "-0.0") only breaks ties the typed values leave.

    Each column's number is computed once per row, before the window (its ORDER BY
    repeated a text's cast three times: issue 37). ``person``: the person column, left out
    when it is an integer column, whose value is then the same on every row of a person
    (``pid`` is its text): a term constant within a partition orders nothing.

    ``read``: the rows are a CSV's readings table (``_kept(read=True)``), whose text columns
    are VARCHAR: a text column's number is written ``_cast_double(trim(x))``, the same value
    as ``_text_number(x)`` (its cast to VARCHAR is the text itself) in words ``_read_cells``
    does not turn into the table's number column. So the number is computed here, for the
    rows of a person above max rows only, instead of for every cell into the table (issue
    37: the numbers of the columns only the order reads were a quarter of the table's build,
    and four more columns through the count's window)."""
    computed, numbers, then, last = [], [], [], []
    for i, info in enumerate(columns):
        x = _col(i)
        if info.kind == "other" or (i == person and info.kind == "integer"):
            continue
        o = quote(f"o{len(computed)}")
        if info.kind == "boolean":
            # as its text, "false" before "true" (``engine.cells.cell_key``): a boolean is no
            # number (rule 4), and the same column in a CSV is text that reads as none
            computed.append(f"CAST({x} AS VARCHAR)")
            then.append(o)
            continue
        if read and info.kind == "text":
            value = _cast_double(f"trim({x})")
            missing = f"coalesce(isnan({value}), true)"      # as ``_number``'s
        else:
            value, missing = _number(x, info)
        computed.append(f"(CASE WHEN {missing} THEN NULL ELSE {value} END)")
        numbers.append(o)
        if info.kind == "integer":
            then.append(f"CAST({x} AS HUGEINT)")
        elif info.kind == "text":
            then.append(f"(CASE WHEN {o} IS NULL THEN CAST({x} AS VARCHAR) END)")
            last.append(f"(CASE WHEN {o} IS NOT NULL THEN CAST({x} AS VARCHAR) END)")
    return computed, [f"{t} ASC NULLS FIRST" for t in numbers + then + last] or ["pid"]


def _kept(person: int, columns: Sequence[ColumnInfo],
          derived: Sequence[tuple[str, str]] = (), *, read: bool = False) -> str:
    """The unit's one truncation, as CTEs ending in ``kr``: every row with a person id (its
    ``pid``, the columns ``derived`` names) and its rank ``r`` among its person's rows; every
    query under the unit keeps the rows with ``r <= $k``, so all of a plan's queries read the
    same kept rows. A person's rows are sorted by their content (``_row_order``: position
    r0) and ranked by ``md5(seed | row | person | r0)``; a person with at most ``$k`` rows
    keeps them all (all rank 1: no sorting needed). Depends on that person's rows only.
    ``derived``: ``(expression, name)`` of the columns a query computes from each row,
    computed once before the ranking (a cell's canonical key after it cost eight times as
    much).

    Only the columns the ranking and the queries need go through the windows (issue 37):
    the person's key, the columns the content order reads, the derived columns, and after
    the ranking only the person's key and the derived columns; never every column of the
    source (a CSV's readings table holds each column's key and number too, and a Parquet
    file columns the order leaves out). ``read``: the source is a CSV's readings table
    (``_read_once``): the order computes a text column's number from its text, for the rows
    of a person above max rows only (``_row_order(read=True)``), so the table holds the
    numbers the queries read and no others; and the count's window carries each row's id,
    not its texts, which are joined back for the rows of a person above max rows alone.

    A person's row count is a window over the person (``n``), not a GROUP BY joined back:
    DuckDB partitions the rows by person once for it, and the join's hash table of every
    person went (issue 37). The content order's keys are computed once per row of a person
    above max rows, and only they and the derived columns go through the sorts."""
    p, p_missing = _person_group(person, columns)
    carried = [_col(i) for i, info in enumerate(columns)
               if info.kind != "other"]  # left out of the order (``_row_order``)
    names = "".join(f", {name}" for _, name in derived)
    computed = "".join(f", {expr} AS {name}" for expr, name in derived)
    keys, order = _row_order(columns, person, read=read)
    listed = "".join(f", {expr} AS {quote(f'o{j}')}" for j, expr in enumerate(keys))
    above = "bn WHERE n > $k"
    if read:
        # a readings table's row carries its row id through the count's window instead of
        # its texts, which only the rows of a person above max rows need: they are joined
        # back by row id, one row each (a table's rowid is unique), for those rows alone
        # (issue 37: a third of the ranking's time where nobody is above max rows)
        above = (f"(SELECT bn.*{''.join(f', t.{c}' for c in carried)} FROM bn "
                 f"JOIN {_SRC} t ON t.rowid = bn.rid WHERE bn.n > $k)")
        carried = ["rowid AS rid"]
    return (
        f"b AS (SELECT {p} AS pid{''.join(f', {c}' for c in carried)}{computed} FROM {_SRC} "
        f"WHERE NOT {p_missing}), "
        "bn AS (SELECT *, count(*) OVER (PARTITION BY pid) AS n FROM b), "
        f"ro AS (SELECT pid{names}, row_number() OVER (PARTITION BY pid ORDER BY "
        f"{', '.join(order)}) AS r0 FROM (SELECT *{listed} FROM {above})), "
        f"kr AS (SELECT pid{names}, 1 AS r FROM bn WHERE n <= $k UNION ALL "
        f"SELECT pid{names}, row_number() OVER (PARTITION BY pid ORDER BY "
        f"{_row_key('seed', 'pid', 'r0', 'row')}, r0) AS r FROM ro)")


#: A CSV column read as text (``_folding.as_text``): what ``_read_cells`` finds the readings of.
_TEXT = ColumnInfo("", "text", "VARCHAR")


def _reading(i: int) -> tuple[str, str]:
    """The columns of a CSV's readings table (``_readings_table``) holding column ``i``'s
    canonical key and number."""
    return quote(f"c{i}_key"), quote(f"c{i}_num")


def _read_cells(sql: str, width: int) -> str:
    """``sql`` (written for a CSV's text cells, ``_folding.as_text``) reading each cell's key,
    whether it is missing, and its number from the readings table (``_readings_table``)
    instead of computing them where each is used: the same expressions (the helpers that
    wrote them write them here), replaced by the columns that hold their values. A plan's
    statements wrote one cell's reading up to 26 times (issue 37, item 6)."""
    for i in range(width):
        x = _col(i)
        if x not in sql:
            continue
        key, number = _reading(i)
        sql = (sql.replace(_key(x, _TEXT), key)
               .replace(_text_missing(x), f"({key} IS NULL)")   # NULL key: missing
               .replace(_text_number(x), number))
    return sql


def _readings_table(table: str, reader: str, width: int, named: str) -> str:
    """The statement creating ``table`` from ``reader`` (a CSV's text cells, columns ``c0 …``):
    every column ``named`` (the plan's statements after ``_read_cells``) mentions, as its
    text, its canonical key or its number, each cell read once: the trimmed text and its
    double computed in inner projections, so the key reads them instead of repeating them
    (six trims and four casts a cell)."""
    raw, keys, numbers = [], [], []
    for i in range(width):
        key, number = _reading(i)
        raw += [_col(i)] if _col(i) in named else []
        keys += [i] if key in named else []
        numbers += [i] if number in named else []
    t = {i: quote(f"c{i}_t") for i in keys}
    d = {i: quote(f"c{i}_d") for i in keys}
    inner = "".join([f", {_trimmed(_col(i))} AS {t[i]}" for i in keys]
                    + [f", {_text_number(_col(i))} AS {_reading(i)[1]}" for i in numbers])
    middle = "".join(f", {_cast_double(t[i])} AS {d[i]}" for i in keys)
    listed = ", ".join(raw + [f"{_text_key(t[i], d[i])} AS {_reading(i)[0]}" for i in keys]
                       + [_reading(i)[1] for i in numbers]) or "NULL AS \"none\""
    return (f"CREATE TEMP TABLE {table} AS SELECT {listed} FROM (SELECT *{middle} FROM "
            f"(SELECT *{inner} FROM {reader}))")


@dataclass(frozen=True)
class CompiledQuery:
    """SQL statements (with the ``__SOURCE__`` placeholder), their parameters, and how to
    fold their rows into the aggregate."""

    statements: tuple[str, ...]
    params: dict[str, object]
    finish: Callable[[list[list[tuple]]], Aggregate]
    kept: OnKept | None = None


@dataclass(frozen=True)
class OnKept:
    """How statement ``index`` of a compiled query reads the unit's kept rows: the columns
    it derives from each row before the ranking (``(expression, name)``) and the rest of the
    statement after the ``kr`` CTE (``tail``). ``DuckDBBackend.run_many`` ranks once for
    every query of a plan under the same unit and runs each tail over the shared kept rows."""

    index: int
    person: int
    derived: tuple[tuple[str, str], ...]
    tail: str


def _on_kept(person: int, columns: Sequence[ColumnInfo], derived: Sequence[tuple[str, str]],
             tail: str) -> tuple[str, tuple[int, tuple[tuple[str, str], ...], str]]:
    """The statement reading the unit's kept rows with ``derived`` columns, followed by
    ``tail`` (CTEs after ``kr`` and the final SELECT), and its parts for ``OnKept``."""
    return f"WITH {_kept(person, columns, derived)}{tail}", (person, tuple(derived), tail)


def _compile_count(query: CountRows, columns: Sequence[ColumnInfo], where: str) -> CompiledQuery:
    person = _folding.check_contribution(columns, query.contribution, where)
    if person is None:
        return CompiledQuery((f"SELECT count(*) FROM {_SRC}",), {},
                             lambda r: CountAggregate(int(r[0][0][0])))
    p, _ = _person_group(person, columns)
    sql = (f"WITH g AS (SELECT pid IS NULL AS m, count(*) AS n "
           f"FROM (SELECT {p} AS pid FROM {_SRC}) GROUP BY pid) "
           "SELECT coalesce(sum(CASE WHEN m THEN 0 ELSE least(n, $k) END), 0), "
           "coalesce(sum(CASE WHEN m THEN n ELSE 0 END), 0), coalesce(sum(n), 0) FROM g")

    def finish(results: list[list[tuple]]) -> CountAggregate:
        kept, missing_person, total = (int(v) for v in results[0][0])
        return CountAggregate(kept, missing_person, total - missing_person - kept)

    return CompiledQuery((sql,), {"k": query.contribution.max_rows}, finish)


def _compile_sum(query: BoundedSum, columns: Sequence[ColumnInfo],
                 where: str) -> CompiledQuery:
    i = _folding.numeric_column(columns, query.column, where)
    info, x = columns[i], _col(i)
    mode = _folding.sum_mode(info, query)
    exact = mode in ("integer", "rounded")
    value, missing, total_fn = _summand(x, info, mode)
    params, shift = _sum_params(query, mode)
    clamp = _moment(f"greatest(least({value}, $hi), $lo)", query)
    if query.centre != 0.0 or query.squared:
        params["centre"] = query.centre
        params["half"] = deviation_bound(query.lower, query.upper)
    outside = f"({value} < $lo OR {value} > $hi)"
    # Rows, then the present values in one pass filtered by WHERE: FILTER clauses on every
    # aggregate ran about twice as slow (bench/bench_engine.py). A Parquet row count is read
    # from the file's metadata.
    rows = f"SELECT count(*) FROM {_SRC}"
    stats = (f"SELECT count(*), coalesce(sum(CASE WHEN {outside} THEN 1 ELSE 0 END), 0), "
             f"{total_fn.format(clamp)} FROM {_SRC} WHERE NOT {missing}")
    person = _folding.check_contribution(columns, query.contribution, where)
    if person is None:
        def finish(results: list[list[tuple]]) -> SumAggregate:
            present, clamped, total = results[1][0]
            return SumAggregate(_folding.to_float(total, shift), int(present),
                                int(results[0][0][0]) - int(present), int(clamped), exact)

        return CompiledQuery((rows, stats), params, finish)

    _, p_missing = _person(person, columns)
    bounded, parts = _on_kept(
        person, columns, ((value, "v"), (missing, "vm")),
        ", e AS (SELECT r, v FROM kr WHERE NOT vm) "
        f"SELECT {total_fn.format(_moment('greatest(least(v, $hi), $lo)', query))} "
        "FILTER (WHERE r <= $k), "
        "count(*) FILTER (WHERE r <= $k), "
        "count(*) FILTER (WHERE r <= $k AND (v < $lo OR v > $hi)), count(*) FROM e")
    # The rows, those with a value and those with no person in one scan (the unbounded
    # total is not needed): two scans of the data instead of four.
    counts = (f"SELECT count(*), count(*) FILTER (WHERE NOT {missing}), "
              f"count(*) FILTER (WHERE {p_missing}) FROM {_SRC}")
    params |= {"k": query.contribution.max_rows, "seed": str(query.contribution.seed)}

    def finish_bounded(results: list[list[tuple]]) -> SumAggregate:
        n_rows, present, missing_person = (int(v) for v in results[0][0])
        total, kept, clamped, eligible = results[1][0]
        return SumAggregate(_folding.to_float(total, shift), int(kept), n_rows - present,
                            int(clamped),
                            exact, missing_person, int(eligible) - int(kept))

    return CompiledQuery((counts, bounded), params, finish_bounded, OnKept(1, *parts))


def _cell_text(query: CategoryCounts | CategoryTable | Binned | GroupedSum
               ) -> tuple[Callable[[str], str], dict[str, object]]:
    """SQL for the canonical text of a (1-based, declared) cell index, and its parameters.

    The texts are computed in Python (``_folding.cell_texts``: a pure function of each cell's
    value) and bound as a list indexed by the cell, so DuckDB and Spark hash the same strings.
    A crosstab's cell is ``row text | column text``.
    """
    if isinstance(query, CategoryTable):
        rows, columns = _folding.crosstab_texts(query)
        n = len(columns)
        return (lambda idx: f"concat(list_extract(CAST($rkeys AS VARCHAR[]), ({idx} - 1) // {n} "
                f"+ 1), '|', list_extract(CAST($ckeys AS VARCHAR[]), ({idx} - 1) % {n} + 1))",
                {"rkeys": rows, "ckeys": columns})
    return (lambda idx: f"list_extract(CAST($keys AS VARCHAR[]), {idx})",
            {"keys": _folding.cell_texts(query)})


def _bounded_cells(cell: str, person: int, columns: Sequence[ColumnInfo],
                   query: CategoryCounts | CategoryTable | Binned
                   ) -> tuple[str, str, dict[str, object], tuple | None]:
    """SQL for the kept counts per cell, (cell, kept, eligible), the missing-id count, and
    the first statement's ``OnKept`` parts (None with ``max_groups``).

    Without ``max_groups`` the rows are the unit's kept rows (``_kept``); with it, a
    person's cells are ranked by ``md5(seed | group | person | cell text)`` (the text, never
    the cell's position in the list of cells, which other people's data can change) and
    each kept cell counts at most ``$k`` rows.
    """
    contribution = query.contribution
    p, p_missing = _person(person, columns)
    text, params = _cell_text(query)
    base = f"m AS (SELECT {p} AS pid, {cell} AS idx FROM {_SRC} WHERE NOT {p_missing})"
    params |= {"k": contribution.max_rows, "seed": str(contribution.seed)}
    parts = None
    if contribution.max_groups is None:
        # the unit's kept rows (one truncation for every query), then those in a cell
        sql, parts = _on_kept(
            person, columns, ((cell, "idx"),),
            " SELECT idx, count(*) FILTER (WHERE r <= $k), count(*) FROM kr WHERE idx > 0 "
            "GROUP BY idx")
    else:
        sql = (f"WITH {base}, d AS (SELECT pid, idx, count(*) AS n FROM m WHERE idx > 0 "
               f"GROUP BY pid, idx), t AS (SELECT pid, idx, n, {text('idx')} AS key FROM d), "
               "s AS (SELECT idx, n, row_number() OVER (PARTITION BY pid ORDER BY "
               f"{_row_key('seed', 'pid', 'key', 'group')}, key) AS g FROM t) "
               "SELECT idx, coalesce(sum(least(n, $k)) FILTER (WHERE g <= $g), 0), sum(n) "
               "FROM s GROUP BY idx")
        params["g"] = contribution.max_groups
    person_stats = f"SELECT count(*) FILTER (WHERE {p_missing}) FROM {_SRC}"
    return sql, person_stats, params, parts


def _compile_histogram(query: CategoryCounts, columns: Sequence[ColumnInfo],
                       where: str) -> CompiledQuery:
    i = _folding.column_index(columns, query.column, "column", where)
    info = columns[i]
    kind = _folding.match_kind(info, query.categories, where)
    params: dict[str, object] = {"cats": _folding.category_values(kind, query.categories)}
    if kind == "never":
        params = {}
    cells = len(query.categories)
    sql = (f"WITH g AS (SELECT {_col(i)} AS v, count(*) AS n FROM {_SRC} GROUP BY {_col(i)}) "
           f"SELECT {_cell('v', info, kind, 'cats')} AS idx, sum(n) FROM g GROUP BY idx")
    person = _folding.check_contribution(columns, query.contribution, where)
    if person is None:
        return CompiledQuery((sql,), params,
                             lambda r: _folding.histogram_aggregate(r[0], cells))
    bounded, _, extra, parts = _bounded_cells(_cell(_col(i), info, kind, "cats"), person,
                                              columns, query)
    # The rows with no person counted in the same scan as the cells (one scan fewer).
    by_cell = (f"WITH g AS (SELECT {_col(i)} AS v, {_person(person, columns)[1]} "
               f"AS m, count(*) AS n FROM {_SRC} GROUP BY {_col(i)}, m) "
               f"SELECT {_cell('v', info, kind, 'cats')} AS idx, sum(n), "
               "sum(CASE WHEN m THEN n ELSE 0 END) FROM g GROUP BY idx")

    def finish(r: list[list[tuple]]) -> HistogramAggregate:
        return _folding.histogram_aggregate([(idx, n) for idx, n, _ in r[0]], cells, kept=r[1],
                                            missing_person_rows=sum(int(m) for *_, m in r[0]))

    return CompiledQuery((by_cell, bounded), params | extra, finish,
                         OnKept(1, *parts) if parts else None)


def _compile_crosstab(query: CategoryTable, columns: Sequence[ColumnInfo],
                      where: str) -> CompiledQuery:
    a = _folding.column_index(columns, query.row, "row", where)
    b = _folding.column_index(columns, query.column, "column", where)
    kind_a = _folding.match_kind(columns[a], query.row_categories, where)
    kind_b = _folding.match_kind(columns[b], query.column_categories, where)
    params: dict[str, object] = {}
    if kind_a != "never":
        params["rcats"] = _folding.category_values(kind_a, query.row_categories)
    if kind_b != "never":
        params["ccats"] = _folding.category_values(kind_b, query.column_categories)
    shape = (len(query.row_categories), len(query.column_categories))
    cell_a = _cell("a", columns[a], kind_a, "rcats")
    cell_b = _cell("b", columns[b], kind_b, "ccats")
    sql = (f"WITH g AS (SELECT {_col(a)} AS a, {_col(b)} AS b, count(*) AS n FROM {_SRC} "
           f"GROUP BY {_col(a)}, {_col(b)}) "
           f"SELECT {cell_a} AS ia, {cell_b} AS ib, sum(n) FROM g GROUP BY ia, ib")
    person = _folding.check_contribution(columns, query.contribution, where)
    if person is None:
        return CompiledQuery((sql,), params, lambda r: _folding.table_aggregate(r[0], shape))
    row_cell = _cell(_col(a), columns[a], kind_a, "rcats")
    col_cell = _cell(_col(b), columns[b], kind_b, "ccats")
    cell = (f"(CASE WHEN {row_cell} > 0 AND {col_cell} > 0 THEN "
            f"({row_cell} - 1) * {shape[1]} + {col_cell} ELSE 0 END)")
    bounded, person_stats, extra, parts = _bounded_cells(cell, person, columns, query)
    return CompiledQuery(
        (sql, bounded, person_stats), params | extra,
        lambda r: _folding.table_aggregate(r[0], shape, kept=r[1],
                                           missing_person_rows=int(r[2][0][0])),
        OnKept(1, *parts) if parts else None)


def _binned_cell(expr: str, info: ColumnInfo, query: Binned) -> str:
    """The 1-based cell of a value (``engine.queries.Binned``), -1 when it is missing.

    With n_le = #{points <= x} and n_lt = #{points < x} (x compared as a double): bins are
    numpy's, n_le + 1 (the last edge itself in the last bin), clamped into the bins when
    asked; ranks are n_lt + n_le + 1, odd cells holding the values between two points and
    even ones the values equal to a point.
    """
    x, missing = _number(expr, info)
    n_le = f"len(list_filter(CAST($pts AS DOUBLE[]), p -> p <= {x}))"
    n_lt = f"len(list_filter(CAST($pts AS DOUBLE[]), p -> p < {x}))"
    m = len(query.points)
    if query.cells == "ranks":
        cell = f"({n_lt} + {n_le} + 1)"
    else:
        cell = f"(CASE WHEN {x} = $last THEN {m} ELSE {n_le} + 1 END)"
        if query.outside == "clamp":
            cell = f"(greatest(least({cell}, {m}), 2) - 1)"
    return f"(CASE WHEN {missing} THEN -1 ELSE {cell} END)"


def _compile_binned(query: Binned, columns: Sequence[ColumnInfo],
                    where: str) -> CompiledQuery:
    i = _folding.numeric_column(columns, query.column, where)
    info = columns[i]
    params: dict[str, object] = {"pts": list(query.points), "last": query.points[-1]}
    cells = query.size
    sql = (f"WITH g AS (SELECT {_col(i)} AS v, count(*) AS n FROM {_SRC} GROUP BY {_col(i)}) "
           f"SELECT {_binned_cell('v', info, query)} AS idx, sum(n) FROM g GROUP BY idx")
    person = _folding.check_contribution(columns, query.contribution, where)
    if person is None:
        return CompiledQuery((sql,), params,
                             lambda r: _folding.histogram_aggregate(r[0], cells))
    bounded, person_stats, extra, parts = _bounded_cells(
        _binned_cell(_col(i), info, query), person, columns, query)
    return CompiledQuery(
        (sql, bounded, person_stats), params | extra,
        lambda r: _folding.histogram_aggregate(r[0], cells, kept=r[1],
                                               missing_person_rows=int(r[2][0][0])),
        OnKept(1, *parts) if parts else None)


def _joint_code(expr: str, info: ColumnInfo, query: JointCells, j: int, where: str
                ) -> tuple[str, dict[str, object]]:
    """SQL for column j's 0-based code in a :class:`JointCells` (its size for a missing or
    other value), and its parameters."""
    size = query.shape[j] - 1
    domain = query.domains[j]
    if query.binned[j]:
        x, missing = _number(expr, info)
        n_le = f"len(list_filter(CAST($pts{j} AS DOUBLE[]), p -> p <= {x}))"
        cell = f"(CASE WHEN {x} = $last{j} THEN {len(domain)} ELSE {n_le} + 1 END)"
        cell = f"(greatest(least({cell}, {len(domain)}), 2) - 2)"
        return (f"(CASE WHEN {missing} THEN {size} ELSE {cell} END)",
                {f"pts{j}": list(domain), f"last{j}": domain[-1]})
    kind = _folding.match_kind(info, domain, where)
    params: dict[str, object] = {}
    if kind != "never":
        params[f"cats{j}"] = _folding.category_values(kind, domain)
    cell = _cell(expr, info, kind, f"cats{j}")
    return f"(CASE WHEN {cell} > 0 THEN {cell} - 1 ELSE {size} END)", params


def _compile_joint(query: JointCells, columns: Sequence[ColumnInfo],
                   where: str) -> CompiledQuery:
    indices = [_folding.numeric_column(columns, c, where) if b
               else _folding.column_index(columns, c, "column", where)
               for c, b in zip(query.columns, query.binned, strict=True)]
    params: dict[str, object] = {}
    codes, derived = [], []
    for j, i in enumerate(indices):
        code, extra = _joint_code(_col(i), columns[i], query, j, where)
        codes.append(f"{code} AS k{j}")
        derived.append((code, f"k{j}"))
        params |= extra
    keys = ", ".join(f"k{j}" for j in range(len(indices)))
    k = len(indices)
    person = _folding.check_contribution(columns, query.contribution, where)
    if person is None:
        # the rows grouped by their raw values first, then each distinct combination coded
        # once (a code reads its column's value alone, so the cells' counts are the same):
        # coding every row (canonical text keys, bins) cost 50 times the grouping (Adult's 8
        # columns from 10^6 rows: 4.3 CPU s against 0.09), most of a 10^8-row count
        # (the grouping's columns renamed g<i>, so the codes read them: a CSV's readings
        # table would rewrite codes written on c<i> into its key and number columns, which
        # the grouping does not carry)
        raw = ", ".join(f"{_col(i)} AS {quote(f'g{i}')}" for i in sorted(set(indices)))
        grouped = [f"{_joint_code(quote(f'g{i}'), columns[i], query, j, where)[0]} AS k{j}"
                   for j, i in enumerate(indices)]
        sql = (f"WITH g AS (SELECT {raw}, count(*) AS n FROM {_SRC} GROUP BY ALL) "
               f"SELECT {', '.join(grouped)}, sum(n) FROM g GROUP BY ALL")
        return CompiledQuery((sql,), params, lambda r: _folding.joint_aggregate(r[0], k))
    _, p_missing = _person(person, columns)
    params |= {"k": query.contribution.max_rows, "seed": str(query.contribution.seed)}
    # the unit's kept rows (one truncation for every query)
    sql, parts = _on_kept(
        person, columns, derived,
        f", s AS (SELECT {keys}, r FROM kr) "
        f"SELECT {keys}, count(*) FILTER (WHERE r <= $k), count(*) FROM s "
        f"GROUP BY {keys}")
    person_stats = f"SELECT count(*) FILTER (WHERE {p_missing}) FROM {_SRC}"
    return CompiledQuery((sql, person_stats), params,
                         lambda r: _folding.joint_aggregate(r[0], k, kept=True,
                                                            missing_person_rows=int(r[1][0][0])),
                         OnKept(0, *parts))


def _compile_grouped_sum(query: GroupedSum, columns: Sequence[ColumnInfo],
                         where: str) -> CompiledQuery:
    key = _folding.column_index(columns, query.key, "key", where)
    i = _folding.numeric_column(columns, query.column, where)
    kind = _folding.match_kind(columns[key], query.categories, where)
    params: dict[str, object] = {}
    if kind != "never":
        params["cats"] = _folding.category_values(kind, query.categories)
    info, x = columns[i], _col(i)
    mode = _folding.sum_mode(info, query)
    exact = mode in ("integer", "rounded")
    value, missing, total_fn = _summand(x, info, mode)
    sums, shift = _sum_params(query, mode)
    params |= sums
    cell = _cell(_col(key), columns[key], kind, "cats")
    cells = len(query.categories)
    # idx, values summed, their clamped total, how many the bounds changed, missing values
    sql = (f"SELECT {cell} AS idx, count(*) FILTER (WHERE NOT {missing}), "
           f"{total_fn.format(f'greatest(least({value}, $hi), $lo)')} "
           f"FILTER (WHERE NOT {missing}), "
           f"count(*) FILTER (WHERE NOT {missing} AND ({value} < $lo OR {value} > $hi)), "
           f"count(*) FILTER (WHERE {missing}) FROM {_SRC} GROUP BY idx")
    person = _folding.check_contribution(columns, query.contribution, where)
    if person is None:
        return CompiledQuery((sql,), params, lambda r: _folding.grouped_sum_aggregate(
            r[0], cells, exact, shift=shift))
    contribution = query.contribution
    _, p_missing = _person(person, columns)
    text, keys = _cell_text(query)
    params |= keys | {"k": contribution.max_rows, "seed": str(contribution.seed)}
    clamp = "greatest(least(v, $hi), $lo)"
    derived = ((cell, "idx"), (value, "v"), (missing, "vm"))
    if contribution.max_groups is None:
        # the unit's kept rows (one truncation for every query), then those with a declared
        # key and a value
        bounded, parts = _on_kept(
            person, columns, derived,
            ", s AS (SELECT idx, v, r FROM kr WHERE NOT vm) "
            f"SELECT idx, {total_fn.format(clamp)} FILTER (WHERE r <= $k), "
            "count(*) FILTER (WHERE r <= $k), "
            "count(*) FILTER (WHERE r <= $k AND (v < $lo OR v > $hi)), count(*) "
            "FROM s WHERE idx > 0 GROUP BY idx")
    else:
        # groups on top of the unit's ranking: at most $g of a person's cells (by the md5
        # of their text), in each the $k rows of lowest rank
        bounded, parts = _on_kept(
            person, columns, derived,
            ", m AS (SELECT pid, idx, v, r FROM kr WHERE NOT vm), "
            f"d AS (SELECT pid, idx, {text('idx')} AS key FROM m WHERE idx > 0 "
            "GROUP BY pid, idx), "
            "gs AS (SELECT pid, idx, row_number() OVER (PARTITION BY pid ORDER BY "
            f"{_row_key('seed', 'pid', 'key', 'group')}, key) AS g FROM d), "
            "s AS (SELECT m.idx, m.v, gs.g, row_number() OVER (PARTITION BY m.pid, m.idx "
            "ORDER BY m.r) AS rr FROM m JOIN gs ON m.pid = gs.pid AND m.idx = gs.idx) "
            f"SELECT idx, {total_fn.format(clamp)} FILTER (WHERE rr <= $k AND g <= $g), "
            "count(*) FILTER (WHERE rr <= $k AND g <= $g), "
            "count(*) FILTER (WHERE rr <= $k AND g <= $g AND (v < $lo OR v > $hi)), "
            "count(*) FROM s GROUP BY idx")
        params["g"] = contribution.max_groups
    person_stats = f"SELECT count(*) FILTER (WHERE {p_missing}) FROM {_SRC}"
    return CompiledQuery(
        (sql, bounded, person_stats), params,
        lambda r: _folding.grouped_sum_aggregate(r[0], cells, exact, kept=r[1],
                                                 missing_person_rows=int(r[2][0][0]),
                                                 shift=shift),
        OnKept(1, *parts))


def _compile_rows_per_person(query: RowsPerPerson, columns: Sequence[ColumnInfo],
                             where: str) -> CompiledQuery:
    p = _folding.check_contribution(
        columns, _folding.Contribution(query.person, 1), where)  # same checks as a bound's id
    x, missing = _person(p, columns)
    sizes = (f"SELECT false, n, count(*) FROM (SELECT count(*) AS n FROM {_SRC} "
             f"WHERE NOT {missing} GROUP BY {x}) GROUP BY n")
    no_id = f"SELECT true, count(*), 1 FROM {_SRC} WHERE {missing}"
    return CompiledQuery((sizes, no_id), {},
                         lambda r: _folding.rows_per_person_aggregate(r[0] + r[1]))


def _compile_person_cells(query: PersonCells, columns: Sequence[ColumnInfo],
                          where: str) -> CompiledQuery:
    p, i, kind = _folding.person_cells_parts(query, columns, where)
    x, x_missing = _person(p, columns)
    read = "true"           # the rows the query reads: all, those in a cell, with a value
    group, value, params = "1", "CAST(1 AS DOUBLE)", {}
    if i is not None and kind is not None:      # a histogram: rows per category
        group = _cell(_col(i), columns[i], kind, "cats")
        read = f"{group} >= 1"
        if kind != "never":
            params["cats"] = _folding.category_values(kind, query.categories)
    elif i is not None:                         # a sum: the values, read row by row
        value, missing = _number(_col(i), columns[i])
        read = f"NOT {missing}"
    clamped = "v" if query.lower is None else "greatest(least(v, $hi), $lo)"
    if query.lower is not None:
        params |= {"lo": query.lower, "hi": query.upper}
    # Every row with a person id is in its person's rows (nn): under the unit's one
    # truncation a row the query does not read (g = 0) still takes one of the kept slots.
    cells = (f"WITH r AS (SELECT {x} AS p, CASE WHEN {read} THEN {group} ELSE 0 END AS g, "
             f"CASE WHEN {read} THEN {value} END AS v FROM {_SRC} WHERE NOT {x_missing}), "
             f"pairs AS (SELECT p, g, count(*) AS n, sum({clamped}) AS c, "
             f"sum({clamped} * {clamped}) AS q, sum(v) AS raw FROM r GROUP BY p, g), "
             "pp AS (SELECT g, n, c, q, raw, sum(n) OVER (PARTITION BY p) AS nn, "
             "count(*) FILTER (WHERE g >= 1) OVER (PARTITION BY p) AS gg FROM pairs) "
             "SELECT g, n, nn, gg, count(*), sum(c), sum(c * c), sum(q), sum(raw) "
             "FROM pp WHERE g >= 1 GROUP BY g, n, nn, gg")
    left_out = (f"SELECT count(*) - count(*) FILTER (WHERE NOT {x_missing} AND {read}) "
                f"FROM {_SRC}")
    return CompiledQuery((cells, left_out), params,
                         lambda r: _folding.cells_aggregate(r[0], r[1][0][0]))


def _compile_distinct(query: DistinctValues, columns: Sequence[ColumnInfo],
                      where: str) -> CompiledQuery:
    i = _folding.column_index(columns, query.column, "column", where)
    info, x = columns[i], _col(i)
    # a text column's keys as one canonical text each (engine.cells): "012" and "12" are one;
    # every key (limit None) of a number or boolean column as its key ("12", "1.5", "true"),
    # as its CSV holds it (partition selection then finds, ranks and labels its groups as on
    # the CSV: DistinctValues); NaN has no key
    as_key = info.kind == "text" or (query.limit is None and info.kind != "other")
    value = _key(x, info) if as_key else x
    condition = f"{value} IS NOT NULL" if as_key else f"NOT {_missing(x, info)}"
    params: dict[str, object] = {}
    if query.exclude:
        kind = _folding.match_kind(info, query.exclude, where)
        if kind != "never":
            condition += f" AND {_cell(x, info, kind, 'cats')} = 0"
            params["cats"] = _folding.category_values(kind, query.exclude)
    sql = f"SELECT DISTINCT {value} AS v FROM {_SRC} WHERE {condition} ORDER BY v"
    if query.limit is not None:
        sql += " LIMIT $lim"
        params["lim"] = query.limit + 1

    def finish(results: list[list[tuple]]) -> DistinctAggregate:
        values = tuple(row[0] for row in results[0])
        if query.limit is None:
            return DistinctAggregate(values, False)
        return DistinctAggregate(values[: query.limit], len(values) > query.limit)

    return CompiledQuery((sql,), params, finish)


def _compile_profile(query: Profile, columns: Sequence[ColumnInfo],
                     where: str) -> CompiledQuery:
    # Columns in groups of _folding.PROFILE_GROUP: each count(DISTINCT) holds its own hash
    # table, and hundreds of them in one statement exceed the memory limit on any data.
    statements = [f"SELECT count(*) FROM {_SRC}"]
    for group in _folding.profile_groups(len(columns)):
        parts = []
        for i in group:
            info = columns[i]
            x, missing = _col(i), _missing(_col(i), info)
            parts += [f"count(*) FILTER (WHERE {missing})",
                      f"count(DISTINCT {x}) FILTER (WHERE NOT {missing})"]
            if info.numeric:
                parts += [f"min(CAST({x} AS DOUBLE)) FILTER (WHERE NOT {missing})",
                          f"max(CAST({x} AS DOUBLE)) FILTER (WHERE NOT {missing})"]
        statements.append(f"SELECT {', '.join(parts)} FROM {_SRC}")
    return CompiledQuery(tuple(statements), {}, lambda r: _folding.profile_aggregate(
        [value for result in r for value in result[0]], columns))


def _compile_bins(query: NumericBins, columns: Sequence[ColumnInfo],
                  where: str) -> CompiledQuery:
    i = _folding.numeric_column(columns, query.column, where)
    x, missing = _number(_col(i), columns[i])
    index = (f"CASE WHEN {missing} THEN -1 WHEN {x} < $lo THEN -2 "
             f"WHEN {x} > $hi THEN -3 WHEN {x} = $hi THEN $last "
             f"ELSE least(CAST(floor(({x} - $lo) * $norm) AS BIGINT), $last) END")
    sql = f"SELECT {index} AS idx, count(*) FROM {_SRC} GROUP BY idx"
    params = {"lo": query.lower, "hi": query.upper, "last": query.bins - 1,
              "norm": _folding.bins_norm(query)}
    return CompiledQuery((sql,), params, lambda r: _folding.bins_aggregate(r[0], query.bins))


def _compile_first_rows(query: FirstRows, columns: Sequence[ColumnInfo],
                        where: str) -> CompiledQuery:
    picked = _folding.picked_columns(columns, query.columns, where)
    listed = ", ".join(_col(i) for i in picked) or "*"
    sql = f"SELECT {listed} FROM {_SRC} LIMIT $lim"
    names = [columns[i].name for i in picked]
    return CompiledQuery((sql,), {"lim": query.limit},
                         lambda r: RowsAggregate(_folding.rows_frame(r[0], names)))


_COMPILERS: dict[type, Callable[..., CompiledQuery]] = {
    CountRows: _compile_count, BoundedSum: _compile_sum, CategoryCounts: _compile_histogram,
    CategoryTable: _compile_crosstab, Binned: _compile_binned, GroupedSum: _compile_grouped_sum,
    JointCells: _compile_joint,
    RowsPerPerson: _compile_rows_per_person, PersonCells: _compile_person_cells,
    DistinctValues: _compile_distinct,
    Profile: _compile_profile, NumericBins: _compile_bins, FirstRows: _compile_first_rows,
}


def compile_query(query: Query, columns: tuple[ColumnInfo, ...], where: str) -> CompiledQuery:
    """The SQL for ``query`` over a relation with these columns (compiled once, cached)."""
    # Cached by the query's text: True == 1 in Python, so queries on categories (True, False)
    # and (1, 0) are equal as objects, yet they match different rows.
    return _compile(query_key(query), query, columns, where)


@functools.lru_cache(maxsize=1024)
def _compile(key: str, query: Query, columns: tuple[ColumnInfo, ...], where: str) -> CompiledQuery:
    compiler = _COMPILERS.get(type(query))
    if compiler is None:
        raise TypeError(f"query must be an engine query, got {type(query).__name__}")
    return compiler(query, columns, where)


# --------------------------------------------------------------------------------------------
# The backend


class DuckDBBackend:
    """Answers engine queries with DuckDB: frames in memory, files out of core.

    Parameters
    ----------
    memory_limit : str, optional
        DuckDB's memory limit (default ``EPSILON_LAB_DUCKDB_MEMORY`` or ``"1GB"``): beyond it,
        large aggregations spill to ``temp_directory``.
    temp_directory : str, optional
        Where DuckDB spills (default ``EPSILON_LAB_DUCKDB_TEMP``, else a fresh folder in the
        system's temporary folder). Never inside the repository.
    threads : int, optional
        Worker threads (default: DuckDB's, one per core).
    spill : bool
        Whether large aggregations may spill to ``temp_directory``. False for in-memory
        frames (uploads): their data never reaches the disk, and a query that outgrows
        ``memory_limit`` fails with a message instead.
    """

    name = "duckdb"

    def __init__(self, *, memory_limit: str | None = None, temp_directory: str | None = None,
                 threads: int | None = None, spill: bool = True) -> None:
        self.memory_limit = memory_limit or os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY_LIMIT
        self.temp_directory = temp_directory or os.environ.get(TEMP_ENV)
        if not spill:
            self.temp_directory = ""   # DuckDB: an empty temporary folder turns spilling off
        elif not self.temp_directory:
            self.temp_directory = tempfile.mkdtemp(prefix="epsilon-lab-duckdb-")
            weakref.finalize(self, shutil.rmtree, self.temp_directory, ignore_errors=True)
        config: dict[str, object] = {
            "memory_limit": self.memory_limit,
            "temp_directory": self.temp_directory,
            # No extension is fetched from the network, whatever a path looks like.
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            # A person's row count stays the window the ranking asks for (``_kept``): DuckDB
            # rewrites a lone ``count(*) OVER (PARTITION BY pid)`` over a plain scan into a
            # GROUP BY joined back to every row (a second scan of the source), which the
            # mark join of the markers' old ``IN`` list happened to prevent (issue 37).
            "disabled_optimizers": "window_self_join",
        }
        if threads is not None:
            config["threads"] = int(threads)
        try:
            self._connection = duckdb.connect(":memory:", config=config)
        except duckdb.Error as exc:
            raise EngineError(f"DuckDB could not start with memory limit {self.memory_limit!r} "
                              f"and temporary folder {self.temp_directory!r}: {exc}. Check "
                              f"{MEMORY_ENV} and {TEMP_ENV}.") from None
        self._lock = threading.Lock()
        self._schemas: OrderedDict[tuple[str, str], tuple[ColumnInfo, ...]] = OrderedDict()

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:  # creating a cursor is not thread-safe; using one is, per thread
            return self._connection.cursor()

    def _from(self, cursor: duckdb.DuckDBPyConnection, source: Source,
              columns: int | None, *, text: bool = False) -> tuple[str, dict[str, object]]:
        """The FROM clause for ``source`` and its parameters; renames columns positionally.
        ``text``: a CSV's cells as text (``_folding.reads_text``)."""
        alias = "" if columns is None else (
            " AS t(" + ", ".join(_col(i) for i in range(columns)) + ")")
        if isinstance(source, FrameSource):
            view = f"frame_{uuid.uuid4().hex}"
            # an upload's cells as text: what a release reads (``FrameSource.cells``)
            read = source.cells if text and source.cells is not None else source.frame
            frame = read.set_axis([f"c{i}" for i in range(read.shape[1])], axis=1)
            cursor.register(view, frame)
            return quote(view), {}
        if isinstance(source, FileSource):
            if source.format == "csv":
                return self._csv_clause(source, alias, text=text)
            return f"read_parquet($path){alias}", {"path": parquet_path(source)}
        if isinstance(source, TableSource):
            raise EngineError(f"{source.describe()} is a Spark table: set EPSILON_LAB_ENGINE="
                              "spark and EPSILON_LAB_SPARK to the cluster to read it.")
        raise TypeError(f"source must be a FrameSource, FileSource or TableSource, got "
                        f"{type(source).__name__}")

    def _csv_clause(self, source: FileSource, alias: str, *, text: bool
                    ) -> tuple[str, dict[str, object]]:
        """A CSV split by the one reading (``engine.cells``): the header's width and the
        delimiter read from the header alone, every field text, a short record padded with
        NULL, a long one cut, a record with a byte that is not UTF-8 skipped
        (``ignore_errors``) and one holding U+FFFD dropped (what Spark's reader and
        ``cells.read_cells`` drop). ``text`` False: each column typed by the upload's rule
        (``_csv_types``), a number column's cells the numbers they read as (``_text_number``;
        a cell that is none is missing), a text column's cells their texts without the
        white space around them, missing by the markers (``_text_missing``), as the upload
        holds them; for what the pages show about the columns only (``_folding.reads_text``)."""
        reader, params, width = csv_text_reader(source)
        if text:
            listed = ", ".join(_col(i) for i in range(width))
        else:
            types = self._csv_types(source, width)
            # a text column as the upload holds it (engine.cells): each cell without the
            # white space around it, missing (NULL) when that is a missing marker in any
            # letter case; the reader's nullstr matches the untrimmed text only
            listed = ", ".join(
                f"(CASE WHEN {_text_missing(_col(i))} THEN NULL ELSE {_trimmed(_col(i))} END)"
                f" AS {_col(i)}" if t == "VARCHAR" else
                f"TRY_CAST({_text_number(_col(i))} AS {t}) AS {_col(i)}"
                for i, t in enumerate(types))
        return (f"(SELECT {listed} FROM {reader}){alias}", params)

    def _csv_types(self, source: FileSource, width: int) -> list[str]:
        """Each CSV column's type (``CSV_TYPES``) by the upload's rule
        (``engine.cells.column_type``) over every cell's reading: the cells not missing,
        those that are numbers, and whether every cell is a whole number below 2^53 in
        absolute value (strictly, as the upload tests it). So the same bytes are offered the
        same columns (and whole-number noise) from the data folder as uploaded; DuckDB's own
        type guess read a sample and needed every cell of it to cast. One scan of the file
        per data version (cached)."""
        key = ("types:" + source.identity, source.version)
        cached = self._schemas.get(key)
        if cached is not None:
            return [c.type_name for c in cached]
        reader, params, _ = csv_text_reader(source)
        # each cell's number computed once, in an inner projection; whether it is missing
        # only for a cell that is no number (no missing marker reads as one): the test of
        # the markers cost more than the cast on a column of numbers
        readings, counts = [], []
        for i in range(width):
            n = quote(f"n{i}")
            readings.append(f"{_text_number(_col(i))} AS {n}")
            counts += [f"count(*) FILTER (WHERE CASE WHEN NOT isnan({n}) THEN true "
                       f"ELSE NOT {_text_missing(_col(i))} END)",
                       f"count({n}) FILTER (WHERE NOT isnan({n}))",
                       f"coalesce(bool_and(coalesce(isfinite({n}) AND {n} = trunc({n}) AND "
                       f"abs({n}) < {KEY_INTEGER_LIMIT}, false)), false)"]
        cursor = self._cursor()
        try:
            read = (cursor.execute(f"SELECT {', '.join(counts)} FROM (SELECT *, "
                                   f"{', '.join(readings)} FROM {reader})",
                                   params).fetchone() or ()) if width else ()
        except duckdb.Error:
            read = ()
        finally:
            cursor.close()
        types = (["VARCHAR"] * width if len(read) != 3 * width else
                 [column_type(int(read[3 * i]), int(read[3 * i + 1]), bool(read[3 * i + 2]))
                  for i in range(width)])
        with self._lock:
            self._schemas[key] = tuple(ColumnInfo(f"c{i}", column_kind(t), t)
                                       for i, t in enumerate(types))
        return types

    def columns(self, source: Source) -> tuple[ColumnInfo, ...]:
        """The source's columns (names as the user sees them), cached per data version."""
        key = (source.identity, source.version)
        cached = self._schemas.get(key)
        if cached is not None:
            return cached
        cursor = self._cursor()
        try:
            clause, params = self._from(cursor, source, None)
            described = self._execute(cursor, source, f"SELECT * FROM {clause} LIMIT 0",
                                      params, describe=True)
        finally:
            cursor.close()
        if isinstance(source, FrameSource):
            names = [str(c) for c in source.frame.columns]
        elif isinstance(source, FileSource) and source.format == "csv":
            names = csv_column_names(csv_layout(source)[0])
        else:
            names = [d[0] for d in described]
        info = tuple(ColumnInfo(name, column_kind(str(d[1])), str(d[1]))  # type: ignore[arg-type]
                     for name, d in zip(names, described, strict=True))
        with self._lock:
            self._schemas[key] = info
            while len(self._schemas) > _SCHEMAS_KEPT:
                self._schemas.popitem(last=False)
        return info

    def _columns_for(self, source: Source, query: Query) -> tuple[tuple[ColumnInfo, ...], bool]:
        """The columns ``query`` compiles against, and whether it reads a CSV as text. A CSV
        file read as text needs its header alone: its columns' types (``_csv_types``) cost a
        parse of every cell and are for what the pages show only, so a release (which reads
        every column as text) parses the file once, for its readings (issue 37)."""
        if not _folding.reads_text(source, query):
            return self.columns(source), False
        if isinstance(source, FileSource):
            return tuple(ColumnInfo(name, "text", "VARCHAR") for name in csv_names(source)), True
        return _folding.as_text(self.columns(source)), True

    def run(self, source: Source, query: Query) -> Aggregate:
        """The aggregate answering ``query`` over ``source``."""
        columns, text = self._columns_for(source, query)
        compiled = compile_query(query, columns, source.describe())
        cursor = self._cursor()
        try:
            clause, source_params = self._from(cursor, source, len(columns), text=text)
            results = []
            for statement in compiled.statements:
                sql = statement.replace(_SRC, clause)
                params = _params_of(sql, compiled.params | source_params)
                results.append(self._execute(cursor, source, sql, params,
                                             frame=isinstance(query, FirstRows)))
        finally:
            cursor.close()
        return compiled.finish(results)

    def run_many(self, source: Source, queries: Sequence[Query], *,
                 cells: Callable[[duckdb.DuckDBPyConnection, str], None] | None = None
                 ) -> list[Aggregate]:
        """The aggregates answering ``queries`` over ``source``, each equal to ``run``'s.

        Queries that read the unit's kept rows under the same unit (person, max rows, seed)
        share one ranking (issue 37, item 3): their kept rows, with every query's derived
        columns, are built once into a temporary table, and each query's aggregate reads
        it instead of ranking every person's rows again. The ranking is the costly part of
        a bounded query (about 0.95 s of a 1.05 s sum at 10^6 rows where max rows bites).

        The queries that read a CSV's cells as text read the file once (issue 37, item 6):
        each cell's readings are computed once into a temporary table (``_read_once``) that
        every statement of theirs reads instead of the file.

        ``cells``: given the connection and a relation of the CSV's text cells (every
        column, ``c0 …``, as ``csv_text_reader`` reads them) when the queries read the file
        as text: what else wants every cell (the dataset's identity digest, issue 37) reads
        them from the same table instead of parsing the file again. Not called otherwise
        (a Parquet file, a frame, no query reading the file).
        """
        out: list[Aggregate | None] = [None] * len(queries)
        entries = []
        for n, query in enumerate(queries):
            columns, text = self._columns_for(source, query)
            entries.append((n, columns, text, compile_query(query, columns, source.describe())))
        as_text = [e for e in entries if e[2]]
        wanted = cells is not None and bool(as_text)
        if isinstance(source, FileSource) and (
                wanted or sum(len(e[3].statements) for e in as_text) > 1):
            for n, aggregate in self._read_once(source, as_text[0][1],
                                                [(n, c) for n, _, _, c in as_text],
                                                cells if wanted else None):
                out[n] = aggregate
            entries = [e for e in entries if not e[2]]
        groups: dict[tuple, list[tuple[int, CompiledQuery]]] = {}
        for n, _, text, compiled in entries:
            if compiled.kept is None:
                out[n] = self.run(source, queries[n])
                continue
            unit = (text, compiled.kept.person, compiled.params["k"], compiled.params["seed"])
            groups.setdefault(unit, []).append((n, compiled))
        for (text, person, k, seed), members in groups.items():
            if len(members) == 1:
                out[members[0][0]] = self.run(source, queries[members[0][0]])
                continue
            columns = self._columns_for(source, queries[members[0][0]])[0]
            cursor = self._cursor()
            try:
                clause, source_params = self._from(cursor, source, len(columns), text=text)
                answers = self._run_on_kept(cursor, source, clause, source_params, columns,
                                            person, k, seed, [c for _, c in members])
            finally:
                cursor.close()
            for (n, _), aggregate in zip(members, answers, strict=True):
                out[n] = aggregate
        return out  # type: ignore[return-value]

    def _read_once(self, source: FileSource, columns: tuple[ColumnInfo, ...],
                   compiled: Sequence[tuple[int, CompiledQuery]],
                   cells: Callable[[duckdb.DuckDBPyConnection, str], None] | None = None
                   ) -> list[tuple[int, Aggregate]]:
        """Compiled queries reading a CSV's cells as text, answered from one read of the file:
        a temporary table of each needed column's text and of its readings (``_readings``:
        its canonical key, its number), each computed once per cell, which every statement
        reads in place of the file and of the per-use SQL of those readings. The queries
        under one unit share one ranking (``_run_on_kept``). Only the columns and readings
        some statement names are kept: the table's memory is theirs, spilling beyond the
        memory limit like any DuckDB table. ``cells``: as ``run_many``'s, given every
        column's text from the table (each column kept for it)."""
        width = len(columns)
        # the statement a query ranks in is never run here (its unit's shared ranking and
        # its tail are): what it names alone (the order's numbers) is not read
        rewritten = [_read_cells(statement, width) for _, c in compiled
                     for i, statement in enumerate(c.statements)
                     if c.kept is None or i != c.kept.index]
        rewritten += [_read_cells(c.kept.tail, width) for _, c in compiled if c.kept]
        rewritten += [_read_cells(expr, width) for _, c in compiled if c.kept
                      for expr, _ in c.kept.derived]
        rewritten += [_read_cells(_kept(c.kept.person, columns, read=True), width)
                      for _, c in compiled if c.kept]
        every = [_col(i) for i in range(width)]
        named = " ".join(rewritten + (every if cells is not None else []))
        table = f"read_{uuid.uuid4().hex}"
        reader, reader_params, _ = csv_text_reader(source)
        build = _readings_table(table, reader, width, named)
        groups: dict[tuple, list[tuple[int, CompiledQuery]]] = {}
        alone: list[tuple[int, CompiledQuery]] = []
        for n, c in compiled:
            if c.kept is None:
                alone.append((n, c))
            else:
                groups.setdefault((c.kept.person, c.params["k"], c.params["seed"]),
                                  []).append((n, c))
        out: list[tuple[int, Aggregate]] = []
        cursor = self._cursor()
        try:
            self._execute(cursor, source, build, _params_of(build, reader_params))
            clause = quote(table)
            if cells is not None:
                cells(cursor, f"(SELECT {', '.join(every)} FROM {clause})")
            for (person, k, seed), members in groups.items():
                # a unit's queries, even one, rank on the table (``_kept(read=True)``: the
                # ranking reads the table's texts, and the content order's numbers from them
                # for rows of a person above max rows only)
                answers = self._run_on_kept(cursor, source, clause, {}, columns, person, k,
                                            seed, [c for _, c in members], width)
                out += [(n, a) for (n, _), a in zip(members, answers, strict=True)]
            for n, c in alone:
                results = []
                for statement in c.statements:
                    sql = _read_cells(statement, width).replace(_SRC, clause)
                    results.append(self._execute(cursor, source, sql, _params_of(sql, c.params)))
                out.append((n, c.finish(results)))
        finally:
            try:
                cursor.execute(f"DROP TABLE IF EXISTS {table}")
            finally:
                cursor.close()
        return out

    def _run_on_kept(self, cursor: duckdb.DuckDBPyConnection, source: Source, clause: str,
                     source_params: dict[str, object], columns: tuple[ColumnInfo, ...],
                     person: int, k: object, seed: object,
                     compiled: Sequence[CompiledQuery], read: int | None = None
                     ) -> list[Aggregate]:
        """Compiled queries under one unit: the kept rows ranked once (``_kept``) into a
        temporary table holding each query's derived columns, renamed ``q<j>_<name>`` (their
        parameters too, so two histograms' categories do not collide); then each query's
        statements, the one on the kept rows reading that table as its ``kr``, all from
        ``clause`` (the source's FROM clause). ``read``: ``clause`` is a table of a CSV's
        readings (``_read_once``) of this many columns, which the statements read."""
        table = f"kept_{uuid.uuid4().hex}"
        derived, params, views = [], {"k": k, "seed": seed}, []
        for j, c in enumerate(compiled):
            assert c.kept is not None
            own = c.params

            def rename(m: re.Match, own: dict = own, j: int = j) -> str:
                return f"$q{j}_{m.group(1)}" if m.group(1) in own else m.group(0)

            for expr, name in c.kept.derived:
                renamed = _PARAM.sub(rename, expr)
                derived.append((renamed, f"q{j}_{name}"))
                params |= {f"q{j}_{p}": own[p] for p in _PARAM.findall(expr) if p in own}
            views.append(", ".join(f"q{j}_{name} AS {name}" for _, name in c.kept.derived))
        listed = ", ".join(f"q{j}_{name}" for j, c in enumerate(compiled)
                           for _, name in c.kept.derived)  # type: ignore[union-attr]
        build = (f"CREATE TEMP TABLE {table} AS WITH "
                 f"{_kept(person, columns, derived, read=read is not None)} "
                 f"SELECT pid, r, {listed} FROM kr")

        def own_sql(statement: str) -> str:
            return (statement if read is None else _read_cells(statement, read)).replace(
                _SRC, clause)

        try:
            sql = own_sql(build)
            self._execute(cursor, source, sql, _params_of(sql, params | source_params))
            answers = []
            for j, c in enumerate(compiled):
                assert c.kept is not None
                results = []
                for i, statement in enumerate(c.statements):
                    if i == c.kept.index:
                        statement = (f"WITH kr AS (SELECT pid, r, {views[j]} FROM {table})"
                                     f"{c.kept.tail}")
                    sql = own_sql(statement)
                    results.append(self._execute(cursor, source, sql,
                                                 _params_of(sql, c.params | source_params)))
                answers.append(c.finish(results))
        finally:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
        return answers

    def sql_for(self, source: Source, query: Query) -> list[tuple[str, dict[str, object]]]:
        """The statements and parameters ``run`` would execute (for benchmarks and review)."""
        columns, text = self._columns_for(source, query)
        compiled = compile_query(query, columns, source.describe())
        cursor = self._cursor()
        try:
            clause, source_params = self._from(cursor, source, len(columns), text=text)
        finally:
            cursor.close()
        out = []
        for statement in compiled.statements:
            sql = statement.replace(_SRC, clause)
            out.append((sql, _params_of(sql, compiled.params | source_params)))
        return out

    def _execute(self, cursor: duckdb.DuckDBPyConnection, source: Source, sql: str,
                 params: dict[str, object], *, describe: bool = False,
                 frame: bool = False) -> Any:
        try:
            result = cursor.execute(sql, params)
            if frame:
                return result.df()
            return list(result.description) if describe else result.fetchall()
        except duckdb.IOException as exc:
            raise EngineError(f"{source.describe()} cannot be read ({_first_line(exc)}). It "
                              "may have been changed, moved or removed: choose the dataset "
                              "again from the list.") from None
        except duckdb.OutOfMemoryException:
            raise EngineError(f"DuckDB ran out of memory answering this query on "
                              f"{source.describe()} (limit {self.memory_limit}). Raise "
                              f"{MEMORY_ENV} or free space in {self.temp_directory}.") from None
        except duckdb.InvalidInputException as exc:
            if "magic bytes" in str(exc) or "not a parquet file" in str(exc).lower():
                raise EngineError(f"{source.describe()} is not a valid Parquet file "
                                  f"({_first_line(exc)}). Replace it with a valid file, or "
                                  "remove it from the data folder.") from None
            raise EngineError(f"{source.describe()} holds a value DuckDB cannot read as its "
                              f"column's type ({_first_line(exc)}). Fix the value in the "
                              "file, or save the file as Parquet with explicit types.") from None
        except duckdb.ConversionException as exc:
            raise EngineError(f"{source.describe()} holds a value DuckDB cannot read as its "
                              f"column's type ({_first_line(exc)}). Fix the value in the "
                              "file, or save the file as Parquet with explicit types.") from None
        except duckdb.Error as exc:
            raise EngineError(f"DuckDB could not answer this query on {source.describe()}: "
                              f"{_first_line(exc)}.") from None


#: DuckDB's line limit (``max_line_size``: a record's bytes as written, its quotes,
#: delimiters and quoted line breaks counted, not the line break that ends it), and its read
#: buffer, which must hold a line (``buffer_size``; DuckDB's default is 16 lines of 2 MB, the
#: same 32 MB). A record within ``cells.MAX_RECORD_CHARS`` is at most 8 MiB and 3 bytes a
#: field as written, so the record rule drops a long record, on every path, before this
#: limit would; only fields past the header's width (cut, never counted) could reach it.
#: A record over it is dropped by DuckDB alone (see README, "one rule").
MAX_LINE_BYTES = 2**25


def csv_text_reader(source: FileSource) -> tuple[str, dict[str, object], int]:
    """(a FROM clause of a CSV's text cells, its parameters, its width): columns ``c0 …``,
    the file split by the one reading (``engine.cells.read_cells``): the header's width and
    the delimiter from the header alone, every field text, a short record padded with NULL,
    a long one cut, a record with a byte that is not UTF-8 skipped (``ignore_errors``) and
    one holding U+FFFD dropped, and one whose fields hold more than
    ``cells.MAX_RECORD_CHARS`` characters dropped, and one with text after a closing quote
    (read from a copy of the file without it, ``sources.csv_read_path``). What a release
    reads and what the identity digests."""
    names, delimiter, skip = csv_layout(source)
    width = len(names)
    # One column more than the header, never listed: DuckDB keeps each empty line of a
    # one-column file as a record of one NULL field, yet skips it when a file has two
    # columns or more (blank lines are no record, rule 2). The extra column is NULL-padded,
    # or holds a long record's first extra field, which is cut as before.
    columns = {f"c{i}": "VARCHAR" for i in range(width)} | {"c_extra": "VARCHAR"}
    params: dict[str, object] = {
        # the file, or a copy without its records with text after a closing quote, which
        # DuckDB's reader cannot drop itself (engine.sources.csv_read_path)
        "path": csv_read_path(source), "csv_missing": missing_spellings(),
        "csv_columns": columns,
        "csv_delim": delimiter, "csv_skip": skip, "csv_line": MAX_LINE_BYTES}
    reader = ("read_csv($path, auto_detect = false, header = true, skip = $csv_skip, "
              "columns = $csv_columns, delim = $csv_delim, quote = '\"', escape = '\"', "
              "null_padding = true, ignore_errors = true, strict_mode = false, "
              # one reader for every file: DuckDB's parallel scanner refuses a quoted line
              # break beside null_padding (one record would refuse the whole file), and even
              # on a file with no quote at all it reads some records twice where a buffer
              # (about 32 MB) ends among blank lines or mixed line ends (DuckDB 1.5.6)
              "parallel = false, nullstr = $csv_missing, "
              "max_line_size = $csv_line, buffer_size = $csv_line)")
    # a record holding U+FFFD, or whose fields hold more characters than the limit (as
    # Python's len and Spark's length count them: code points; their bytes, strlen, first:
    # never fewer, and counted without decoding), is dropped (engine.cells, rule 2). One flat
    # concat (it skips NULL, a missing field counts 0), not a sum nested a level per column:
    # DuckDB refuses an expression deeper than 1000, which a 989-column file reached.
    limit = int(cells.MAX_RECORD_CHARS)
    replaced = " OR ".join(f"coalesce(contains({_col(i)}, '\ufffd'), false)"
                           for i in range(width)) or "false"
    if width:
        record = f"concat({', '.join(_col(i) for i in range(width))})"
        replaced += f" OR (strlen({record}) > {limit} AND length({record}) > {limit})"
    listed = ", ".join(_col(i) for i in range(width))
    return f"(SELECT {listed} FROM {reader} WHERE NOT ({replaced}))", params, width


def parquet_path(source: FileSource) -> str | list[str]:
    """What ``read_parquet`` is given: a file's path, or a folder's parts as Spark reads them
    (``sources.parquet_parts``: no ``_extra.parquet``, nothing hidden)."""
    if not source.is_folder:
        return str(source.path)
    parts = [str(p) for p in parquet_parts(source.path)]
    if not parts:
        raise EngineError(f"{source.describe()} holds no Parquet file a release reads (names "
                          "starting with _ or . are left out, as Spark does).")
    return parts


def csv_names(source: FileSource) -> list[str]:
    """A CSV's column names as every path shows them (``_csv_names`` of its header)."""
    return csv_column_names(csv_layout(source)[0])


def _params_of(sql: str, params: dict[str, object]) -> dict[str, object]:
    """The parameters this statement names (DuckDB refuses unused named parameters)."""
    named = set(_PARAM.findall(sql))
    return {k: v for k, v in params.items() if k in named}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
