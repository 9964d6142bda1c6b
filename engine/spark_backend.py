"""The cluster backend: the same queries with PySpark's DataFrame API (no SQL strings).

``EPSILON_LAB_SPARK`` is a master URL (``local[2]``, ``spark://host:7077``) or a Spark
Connect URL (``sc://host:15002``). Every relation's columns are renamed positionally with
``toDF("c0", "c1", …)``, so a user's column name is never parsed (dots, backticks); values
enter as literals. Each query builds the same cells, keys and bounds as the DuckDB backend,
so the answers are the same.
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from engine import _folding
from engine import cells as one_reading
from engine.cells import KEY_INTEGER_LIMIT, column_type, deviation_bound, sum_scale
from engine.errors import EngineError
from engine.queries import (
    Aggregate,
    Binned,
    BoundedSum,
    CategoryCounts,
    CategoryTable,
    ColumnInfo,
    Contribution,
    CountAggregate,
    CountRows,
    DistinctAggregate,
    DistinctValues,
    FirstRows,
    GroupedSum,
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
    MISSING_MARKERS,
    FileSource,
    FrameSource,
    Source,
    TableSource,
    csv_column_names,
    csv_layout,
    csv_read_path,
)

__all__ = ["SparkBackend", "SPARK_ENV", "spark_session"]

#: The environment variable naming the Spark master or Spark Connect URL.
SPARK_ENV = "EPSILON_LAB_SPARK"
DEFAULT_MASTER = "local[2]"
#: Retries of a Spark Connect call before it fails (about 5 seconds in all).
CONNECT_RETRIES = 3

Plan = Callable[[Any], Aggregate]  # a compiled query: DataFrame (columns c0, c1, …) → answer


def spark_session(url: str, *, shuffle_partitions: int = 8,
                  config: dict[str, str] | None = None) -> Any:
    """A SparkSession for ``url``: Spark Connect for ``sc://``, else a classic master.

    A local master binds to the loopback address only, with the web UI off; ``config`` adds
    settings (tests use it to make a small local session start fast).
    """
    from pyspark.sql import SparkSession

    if url.startswith("sc://"):
        session = SparkSession.builder.remote(url).getOrCreate()
        # The client's default retries wait up to 10 minutes for a server that is down: a
        # page would hang that long. A few quick retries, then a clear error.
        from pyspark.sql.connect.client.retries import DefaultPolicy

        session.client.set_retry_policies([DefaultPolicy(
            max_retries=CONNECT_RETRIES, initial_backoff=200, max_backoff=5000)])
        return session
    builder = (SparkSession.builder.master(url).appName("Epsilon Lab")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    if url.startswith("local"):
        builder = (builder.config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1"))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _col(i: int) -> str:
    return f"c{i}"


def column_kind(data_type: Any) -> str:
    from pyspark.sql import types as T

    if isinstance(data_type, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return "integer"
    if isinstance(data_type, T.FloatType | T.DoubleType | T.DecimalType):
        return "float"
    if isinstance(data_type, T.StringType | T.CharType | T.VarcharType):
        return "text"
    if isinstance(data_type, T.BooleanType):
        return "boolean"
    return "other"


def reads_local_copy(master: str) -> bool:
    """Whether a Spark session of this master reads the private local copy
    ``sources.csv_read_path`` writes (a CSV without its badly quoted records): a local
    master alone (``local``, ``local[4]``, ``local[*]``), whose executors are this process.
    A cluster's workers (``spark://``, ``yarn``, ``k8s://``, Spark Connect ``sc://``) cannot
    read it: they read the file itself, as the Spark program reads a cluster path."""
    return master == "local" or master.startswith("local[")


def _master(session: Any) -> str:
    """The session's master URL; a Spark Connect session (no SparkContext here) is remote."""
    if type(session).__module__.startswith("pyspark.sql.connect"):
        return "sc://"
    try:
        return str(session.sparkContext.master)
    except Exception:       # no SparkContext to ask: treated as remote, the file itself
        return ""


def _read_csv(session: Any, source: FileSource, *, text: bool = False) -> Any:
    """A CSV split by the one reading (``engine.cells``), as DuckDB's reader does: the
    header's width and the delimiter read from the header alone (``sources.csv_layout``),
    every field text (a schema of strings: nothing inferred), a short record padded with
    null and a long one cut (``PERMISSIVE``), quoted line breaks inside a field
    (``multiLine``), a record holding U+FFFD (Spark's reading of a byte that is not UTF-8)
    or more than ``cells.MAX_RECORD_CHARS`` characters or text after a closing quote
    (a local master reads a copy without it, ``sources.csv_read_path``; a cluster, which
    cannot read that copy, matches Spark's reading of such a field, :func:`reads_local_copy`)
    dropped; a cell holding a missing
    marker (``sources.MISSING_MARKERS``, any letter case) is missing. Without ``text``: each
    column typed as DuckDB types it (``_typed_csv``), for what the pages show about the
    columns."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    header, delimiter, _ = csv_layout(source)
    names = csv_column_names(header)
    schema = T.StructType([T.StructField(f"c{i}", T.StringType()) for i in range(len(names))])
    # a local master: the file, or a copy without its records with text after a closing
    # quote (dropped by the one reading; Spark cannot tell them from some well-formed fields
    # itself). A cluster's workers cannot read that private copy: the file itself there
    local = reads_local_copy(_master(session))
    path = csv_read_path(source) if local else str(source.path)
    raw = session.read.csv(path, schema=schema, header=True, sep=delimiter,
                           quote='"', escape='"', multiLine=True, mode="PERMISSIVE",
                           encoding="UTF-8", enforceSchema=True, maxCharsPerColumn=-1)
    # a record holding U+FFFD or whose fields hold more than cells.MAX_RECORD_CHARS
    # characters is dropped, as DuckDB's reader and engine.cells.read_cells drop it (no field
    # limit of Spark's own, maxCharsPerColumn -1, drops or refuses one first). One flat
    # concatenation of the fields (concat_ws skips null: a missing field holds nothing), not
    # an expression nested a level per column, which failed to plan on 3,000 columns
    markers = sorted(MISSING_MARKERS)
    record = F.concat_ws("", *[F.col(f"c{i}") for i in range(len(names))])
    # a field that is exactly a missing marker (any letter case; Spark's lower changes no
    # other text into one) counts 0 characters, as DuckDB's nullstr and engine.cells count it
    counted = F.concat_ws("", *[F.when(F.lower(F.col(f"c{i}")).isin(markers), F.lit(""))
                                .otherwise(F.col(f"c{i}")) for i in range(len(names))])
    replaced = (record.contains("\ufffd")
                | (F.length(counted) > int(one_reading.MAX_RECORD_CHARS)))
    if not local:
        # as the Spark program reads a cluster path (its read_spark): a record with text
        # after a closing quote is dropped by Spark's reading of such a field, as written
        # (a quote first, a later one followed by text). The gaps (engine.cells, rule 2):
        # a well-formed field read so is dropped too, and such a field past the header's
        # width, which Spark does not read, drops nothing
        fields = F.array(*[F.col(f"c{i}") for i in range(len(names))])
        replaced = replaced | F.exists(fields, lambda c: F.coalesce(
            c.rlike('(?s)^".*"[ \t]*[^ \t"]'), F.lit(False)))
    raw = raw.where(~replaced)
    cells = [F.when(F.lower(F.col(f"c{i}")).isin(markers), F.lit(None))
             .otherwise(F.col(f"c{i}")) for i in range(len(names))]
    df = raw.select(*[cell.alias(f"c{i}") for i, cell in enumerate(cells)])
    if text:
        return df.toDF(*names)
    return _typed_csv(df, len(names)).toDF(*names)


def _typed_csv(df: Any, width: int) -> Any:
    """A CSV's text cells (columns c0, c1, …) typed by the one rule, as DuckDB's typed
    reading types them (``DuckDBBackend._csv_types``): each column's type is
    ``engine.cells.column_type`` over every cell's reading (the cells not missing, those that
    are numbers by DuckDB's cast, ``_text_number``; whether every cell is a whole number below
    2^53 in absolute value), one scan; a number column holds each cell's number (null when
    it is none), a text column each cell without the white space around it (``_AROUND``),
    null when that is a missing marker in any letter case. Spark's own ``trim`` and cast read
    other texts (``1d``, ``0x1p3``; no ``1_000``, no no-break space), so never used here."""
    from pyspark.sql import functions as F

    markers = sorted(MISSING_MARKERS)
    texts = [F.regexp_replace(F.col(_col(i)), _AROUND, "") for i in range(width)]
    # each cell's number read once, in an inner projection, for the three counts
    read = df.select(*[F.col(_col(i)) for i in range(width)],
                     *[_text_number(F.col(_col(i))).alias(f"n{i}") for i in range(width)])
    counts = []
    for i in range(width):
        n, t = F.col(f"n{i}"), texts[i]
        number = n.isNotNull() & ~F.isnan(n)
        missing = t.isNull() | F.lower(t).isin(markers)
        # floor only of a finite number below 2^53 (NaN compares above every number)
        whole = F.coalesce(F.when(F.abs(n) < F.lit(float(KEY_INTEGER_LIMIT)),
                                  n == F.floor(n)), F.lit(False))
        counts += [_count_if(number | ~missing), _count_if(number),
                   F.coalesce(F.bool_and(whole), F.lit(False))]
    row = read.agg(*counts).collect()[0] if width else ()
    typed = []
    for i in range(width):
        kind = column_type(int(row[3 * i]), int(row[3 * i + 1]), bool(row[3 * i + 2]))
        if kind == "VARCHAR":
            t = texts[i]
            cell = F.when(t.isNull() | F.lower(t).isin(markers), F.lit(None)).otherwise(t)
        else:
            cell = _text_number(F.col(_col(i))).cast("long" if kind == "BIGINT" else "double")
        typed.append(cell.alias(_col(i)))
    return df.select(*typed)


def _missing(column: Any, info: ColumnInfo) -> Any:
    from pyspark.sql import functions as F

    if info.type_name in ("float", "double"):
        return column.isNull() | F.isnan(column)
    return column.isNull()


#: The texts DuckDB's ``TRY_CAST(trim(text) AS DOUBLE)`` reads as a number (measured against
#: DuckDB 1.5 on every string of up to five characters over digits, ``_ . e E + - d x`` and
#: spaces, and on special values): ``trim`` strips Unicode space separators (Zs: a no-break
#: space too), the cast then ASCII white space; digits may be grouped by single underscores
#: (in the exponent too); ``+-`` is a minus sign; inf, infinity and nan in any letter case.
#: Spark's own cast differs (it reads ``1d``, ``1f`` and ``0x1p3``, not ``1_000``, and trims
#: no no-break space), so only the number this pattern captures is cast.
_WS = r"[\t\n\x0B\f\r ]"
_DIGITS = r"[0-9](?:_?[0-9])*"
DUCKDB_NUMBER = (rf"^\p{{Zs}}*{_WS}*((?:\+-|[+-])?(?:(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?"
                 rf"|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?|(?i:inf|infinity|nan)))"
                 rf"{_WS}*\p{{Zs}}*\z")      # \z: Java's $ also matches before a line end


def _text_number(text: Any) -> Any:
    """The double a text reads as in DuckDB (``DUCKDB_NUMBER``), else null; NaN for "nan"
    or null for "-nan" (Spark's cast): missing either way."""
    from pyspark.sql import functions as F

    core = F.regexp_extract(text, DUCKDB_NUMBER, 1)   # "" when the text is not a number
    return F.regexp_replace(core, r"_|^\+(?=-)", "").try_cast("double")


def _number(column: Any, info: ColumnInfo) -> tuple[Any, Any]:
    """(the value as a double, whether it is missing), row by row as in DuckDB's
    ``_number``: a number column as it is, any other column's text as the number it reads as
    in DuckDB (``_text_number``; ``try_cast``: never an error, whatever Spark's ANSI mode),
    else missing."""
    from pyspark.sql import functions as F

    if info.numeric:
        return column.cast("double"), _missing(column, info)
    value = _text_number(column.cast("string"))
    return value, value.isNull() | F.isnan(value)


def _summand(column: Any, info: ColumnInfo, mode: str, lower: float, upper: float,
             shift: int = 0) -> tuple[Any, Any, Any, Any, Callable[[Any], Any]]:
    """(value, missing, lower, upper, how to sum a clamped value) of a sum in ``mode``
    (``_folding.sum_mode``): integers exactly, whole numbers rounded per row (half to even:
    ``bround``), multiples of 2^-``shift`` summed exactly (``engine.cells.fixed_point_sums``:
    ``rint`` is half to even, a long within 2^62 summed as DECIMAL(38, 0), which cannot
    overflow: ``engine.cells.SUM_BITS``), or doubles (plain: only for a squared deviation
    whose bound overflows float64)."""
    from pyspark.sql import functions as F

    if mode == "integer":
        value, missing = column.cast("long"), _missing(column, info)
        lo, hi = F.lit(int(lower)).cast("long"), F.lit(int(upper)).cast("long")
        return value, missing, lo, hi, lambda c: c.cast("decimal(38,0)")
    value, missing = _number(column, info)
    lo, hi = F.lit(float(lower)).cast("double"), F.lit(float(upper)).cast("double")
    if mode == "rounded":
        return value, missing, lo, hi, lambda c: F.bround(c, 0).cast("decimal(38,0)")
    if mode == "fixed":
        f0, f1 = (F.lit(f).cast("double") for f in sum_scale(shift))
        return value, missing, lo, hi, lambda c: F.rint(c * f0 * f1).cast("long").cast(
            "decimal(38,0)")
    return value, missing, lo, hi, lambda c: c


def _cell(column: Any, info: ColumnInfo, kind: _folding.MatchKind,
          categories: tuple[object, ...]) -> Any:
    """-1 for a missing value, 0 for one outside the categories, else its 1-based position."""
    from pyspark.sql import functions as F

    cast = {"text": "string", "integer": "long", "real": "double", "boolean": "boolean"}
    if kind in ("text", "text_boolean"):
        # a cell matches a declared text by canonical key (engine.cells, rule 6), a
        # declared number the number the cell reads as (rule 4: "text_number" below), a
        # declared boolean its key ("true") by the cell's key in lower case ("True", "TRUE")
        key = _person_text(column, info)
        if kind == "text_boolean":
            key = F.lower(key)
        keys = F.array(*[F.lit(v).cast("string") for v in _folding.category_values(kind,
                                                                               categories)])
        return F.when(key.isNull(), F.lit(-1)).otherwise(
            F.coalesce(F.array_position(keys, key), F.lit(0)))
    if kind == "never":
        match = F.lit(0)
    elif kind == "text_number":
        values = _folding.category_values(kind, categories)
        array = F.array(*[F.lit(float(v)) for v in values])
        match = F.array_position(array, _text_number(column.cast("string")))
    else:
        values = _folding.category_values(kind, categories)
        array = F.array(*[F.lit(v).cast(cast[kind]) for v in values])
        match = F.array_position(array, column.cast(cast[kind]))
    return F.when(_missing(column, info), F.lit(-1)).otherwise(F.coalesce(match, F.lit(0)))


#: Java's ``%.Ne`` of a double (``1.500e+00``): sign, first digit, other digits, exponent.
_SCIENTIFIC = r"^(-?)([0-9])(?:\.([0-9]+))?e([+-][0-9]+)$"


#: ``engine.cells.WHITE_SPACE`` as a Java pattern: removed around a key.
_AROUND = r"^[\t\n\x0B\f\r\p{Zs}]+|[\t\n\x0B\f\r\p{Zs}]+$"


def _person_text(column: Any, info: ColumnInfo) -> Any:
    """A person id's or group key's canonical key (``engine.cells.cell_key``), null when
    missing, as DuckDB's ``_key``: a text's white space removed, a whole number within
    ±2^53 (DuckDB's cast: ``_text_number``) as its integer's text, any other text as
    written; a whole double as its integer's text, another as DuckDB writes it
    (``_double_text``); any other type as its text."""
    from pyspark.sql import functions as F

    limit = float(KEY_INTEGER_LIMIT)
    if info.kind == "text":
        t = F.regexp_replace(column.cast("string"), _AROUND, "")
        d = _text_number(t)
        whole = (~F.isnan(d) & (F.abs(d) <= F.lit(limit)) & (d == F.floor(d)))
        return (F.when(t.isNull() | F.lower(t).isin(sorted(MISSING_MARKERS)), F.lit(None))
                .when(F.coalesce(whole, F.lit(False)), d.cast("long").cast("string"))
                .otherwise(t))
    if info.type_name.replace(" ", "") == "decimal(20,0)":
        # Spark reads a Parquet UINT64 as DECIMAL(20,0), which DuckDB reads as UBIGINT and
        # keys exactly (its integer's text): as a double, 2^60 ... 2^60+39 would be one person
        return column.cast("string")
    if info.type_name.startswith("decimal"):
        # a DECIMAL is keyed as its double (engine.cells.cell_key, DuckDB's _key): 1.50 is
        # "1.5" and 12.00 "12", not Spark's text "1.50", "12.00"
        column, info = column.cast("double"), ColumnInfo(info.name, "float", "double")
    if info.type_name in ("float", "double"):
        d = column.cast("double")
        whole = ~F.isnan(d) & (F.abs(d) <= F.lit(limit)) & (d == F.floor(d))
        return (F.when(column.isNull() | F.isnan(d), F.lit(None))
                .when(whole, d.cast("long").cast("string"))
                .otherwise(_double_text(column, info).cast("string")))
    return column.cast("string")


def _person_missing(column: Any, info: ColumnInfo) -> Any:
    """Whether a person id (or key) is missing: its canonical key is null."""
    return _person_text(column, info).isNull()


def _double_text(column: Any, info: ColumnInfo) -> Any:
    """A floating column's text as DuckDB's ``CAST(CAST(x AS DOUBLE) AS VARCHAR)``: a float
    as its double (0.1f is ``0.10000000149011612``), a double as Python's ``repr`` (the
    shortest digits that read back as the same double; positional for 1e-4 <= |x| < 1e16,
    else ``1e+16``, ``1.5e-05``). Java's ``Double.toString`` is not the shortest before
    Java 19 (2^60: ``1.15292150460684698E18``), so the digits are the first of 15, 16 and
    17 significant ones (``%.14e`` ...) whose text casts back to the same double (the
    correctly rounded 17 always does), then written as Python writes them (a text, by which
    the rows are then partitioned too). Other types are left as they are: their texts are
    alike. A floating -0.0 is first made 0.0 (equal numbers: one person, as in DuckDB),
    never a second person beside 0.0 with max rows of its own."""
    from pyspark.sql import functions as F

    if info.type_name not in ("float", "double"):
        return column
    d = column.cast("double")
    d = F.when(d == 0, F.lit(0.0)).otherwise(d)          # -0.0 == 0.0: one person
    text = _shortest(d, range(15, 18))
    # a subnormal double has fewer digits of its own (5e-324): its shortest may be fewer
    # than 15 whose 15-digit rounding is not the shortest padded with zeros
    text = F.when(F.abs(d) < F.lit(2.2250738585072014e-308), _shortest(d, range(1, 18))
                  ).otherwise(text)
    part = [F.regexp_extract(text, _SCIENTIFIC, g) for g in (1, 2, 3, 4)]
    sign, lead = part[0], part[1]
    rest = F.regexp_replace(part[2], "0+$", "")          # 1.500e+00: digits 15
    e = F.regexp_replace(part[3], "^[+]", "").try_cast("int")
    digits = F.concat(lead, rest)
    after = digits.substr(e + 2, F.lit(400))
    positional = F.when(e >= 0, F.concat(
        sign, F.rpad(digits, e + 1, "0"), F.lit("."),
        F.when(F.length(after) > 0, after).otherwise(F.lit("0")))).otherwise(
        F.concat(sign, F.lit("0."), F.lpad(digits, F.length(digits) - e - 1, "0")))
    scientific = F.concat(sign, lead, F.when(F.length(rest) > 0, F.concat(F.lit("."), rest))
                          .otherwise(F.lit("")), F.lit("e"),
                          F.when(e < 0, F.lit("-")).otherwise(F.lit("+")),
                          F.when(F.abs(e) < 10, F.lit("0")).otherwise(F.lit("")),
                          F.abs(e).cast("string"))
    return (F.when(d == F.lit(float("inf")), F.lit("inf"))
            .when(d == F.lit(float("-inf")), F.lit("-inf"))
            .when(F.isnan(d), F.lit("nan"))
            .when((e >= -4) & (e < 16), positional).otherwise(scientific))


def _shortest(d: Any, lengths: range) -> Any:
    """``d`` in Java's ``%.Ne`` with the first of ``lengths`` significant digits whose text
    casts back to ``d`` (the last one always: 17 digits name every double)."""
    from pyspark.sql import functions as F

    texts = [F.format_string(f"%.{n - 1}e", d) for n in lengths]
    text = texts[-1]
    for candidate in reversed(texts[:-1]):
        text = F.when(candidate.cast("double") == d, candidate).otherwise(text)
    return text


def _row_key(contribution: Contribution, person: str, position: str, tag: str) -> Any:
    """md5('seed|tag|person|position'): the same text, so the same order, as in DuckDB."""
    from pyspark.sql import functions as F

    return F.md5(F.concat_ws("|", F.lit(str(contribution.seed)), F.lit(tag),
                             F.col(person).cast("string"), F.col(position).cast("string")))


def _row_order(columns: Sequence[ColumnInfo]) -> list[Any]:
    """The sort keys of a person's rows by their own content: DuckDB's ``_row_order`` (every
    column's value as a number, then every integer's exact value, every boolean as its text
    and every text that reads as no number, then every text that reads as a number; missing
    first; other types left out)."""
    from pyspark.sql import functions as F

    numbers, then, last = [], [], []
    for i, info in enumerate(columns):
        x = F.col(_col(i))
        if info.kind == "other":
            continue
        if info.kind == "boolean":
            then.append(x.cast("string"))       # "false", "true": as DuckDB's
            continue
        value, missing = _number(x, info)
        number = F.when(~missing, value)
        numbers.append(number)
        if info.kind == "integer":
            then.append(x.cast("decimal(38,0)"))
        elif info.kind == "text":
            then.append(F.when(number.isNull(), x.cast("string")))
            last.append(F.when(number.isNotNull(), x.cast("string")))
    return [key.asc_nulls_first() for key in numbers + then + last]


def _persist_level() -> Any:
    """How ``SparkBackend.run_many`` persists what a plan's queries share (the ranked rows, a
    frame read by several queries): on local disk only. ``MEMORY_AND_DISK`` reads a block
    that spilled back into the heap whole (``BlockManager.maybeCacheDiskBytesInMemory``): at
    5*10^7 rows on local[2] with Spark's default 1 GB driver, a block of millions of rows ran
    the JVM out of heap space and the release failed. From disk a block is streamed."""
    from pyspark import StorageLevel

    return StorageLevel.DISK_ONLY


#: Inside ``SparkBackend.run_many``: the ranked rows ``_kept`` built for each (frame, person
#: column, seed), persisted, which every later query of the plan under that unit reads
#: (None outside: each query ranks for itself). A context variable: a plan answered on one
#: thread never hands its frames to another's.
_SHARED_KEPT: contextvars.ContextVar[dict[tuple[int, int, int], tuple[Any, Any, bool]] | None] = (
    contextvars.ContextVar("spark_shared_kept", default=None))


def _kept(df: Any, person: int, columns: Sequence[ColumnInfo],
          contribution: Contribution) -> Any:
    """The unit's one truncation (DuckDB's ``_kept``): every row with a person id, with
    ``pid`` and its rank ``r`` among its person's rows (sorted by ``_row_order``, the
    positions ranked by ``md5(seed | row | person | position)``); every query under the
    unit keeps the rows with ``r <= max_rows``.

    The ranks depend on the person column and the seed, not on max rows: inside
    ``SparkBackend.run_many`` the ranked rows are built once per (frame, person, seed) and
    persisted (``_SHARED_KEPT``), so a plan's queries under one unit rank once (issue 37,
    item 3), max rows applied by each query as it reads them."""
    shared = _SHARED_KEPT.get()
    key = (id(df), person, contribution.seed)
    if shared is not None and key in shared:
        return shared[key][1]
    ranked = _ranked(df, person, columns, contribution)
    if shared is not None:
        from pyspark import StorageLevel

        # on local disk (``_persist_level``); unpersisted by run_many, but only if this call
        # cached it: ``storageLevel`` asks Spark's cache (``is_cached`` is a flag of this
        # Python object), and unpersisting a plan someone else cached would drop their cache
        owned = ranked.storageLevel == StorageLevel.NONE
        if owned:
            ranked = ranked.persist(_persist_level())
        shared[key] = (df, ranked, owned)   # the frame held: its id is not reused meanwhile
    return ranked


def _ranked(df: Any, person: int, columns: Sequence[ColumnInfo],
            contribution: Contribution) -> Any:
    """``_kept``'s rows ranked: what every query would build for itself."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    p = F.col(_col(person))
    b = df.where(~_person_missing(p, columns[person])).withColumn(
        "pid", _person_text(p, columns[person]))
    order = _row_order(columns) or [F.col("pid")]
    r = b.withColumn("r0", F.row_number().over(Window.partitionBy("pid").orderBy(*order)))
    return r.withColumn("r", F.row_number().over(Window.partitionBy("pid").orderBy(
        _row_key(contribution, "pid", "r0", "row"), F.col("r0")))).drop("r0")


def _count_if(condition: Any) -> Any:
    from pyspark.sql import functions as F

    return F.count(F.when(condition, F.lit(1)))


def _rows(df: Any) -> list[tuple]:
    return [tuple(row) for row in df.collect()]


def _compile_count(query: CountRows, columns: Sequence[ColumnInfo], where: str) -> Plan:
    from pyspark.sql import functions as F

    person = _folding.check_contribution(columns, query.contribution, where)
    if person is None:
        return lambda df: CountAggregate(int(df.count()))
    k = query.contribution.max_rows
    p = _col(person)

    def plan(df: Any) -> CountAggregate:
        pid = _person_text(F.col(p), columns[person]).alias("pid")
        g = df.select(pid).groupBy("pid").agg(F.count(F.lit(1)).alias("n"))
        g = g.select(F.col("pid").isNull().alias("m"), F.col("n"))
        kept, missing, total = _rows(g.agg(
            F.sum(F.when(F.col("m"), F.lit(0)).otherwise(F.least(F.col("n"), F.lit(k)))),
            F.sum(F.when(F.col("m"), F.col("n")).otherwise(F.lit(0))),
            F.sum(F.col("n"))))[0]
        kept, missing, total = int(kept or 0), int(missing or 0), int(total or 0)
        return CountAggregate(kept, missing, total - missing - kept)

    return plan


def _compile_sum(query: BoundedSum, columns: Sequence[ColumnInfo], where: str) -> Plan:
    from pyspark.sql import functions as F

    i = _folding.numeric_column(columns, query.column, where)
    info = columns[i]
    mode = _folding.sum_mode(info, query)
    exact = mode in ("integer", "rounded")
    shift = _folding.sum_shift_of(query, mode)
    person = _folding.check_contribution(columns, query.contribution, where)

    def plan(df: Any) -> SumAggregate:
        x = F.col(_col(i))
        value, missing, lo, hi, summed = _summand(x, info, mode, query.lower, query.upper,
                                                  shift)

        def total(condition: Any, values: Any) -> Any:
            # Spark's least and greatest skip nulls (least(null, 3) = 3): clamp in the when.
            clamped = F.greatest(F.least(values, hi), lo)
            if query.centre != 0.0 or query.squared:   # a variance's moments
                # within the declared half-width (engine.cells.deviation_bound)
                half = F.lit(deviation_bound(query.lower, query.upper)).cast("double")
                clamped = F.greatest(F.least(clamped - F.lit(query.centre), half), -half)
                clamped = clamped * clamped if query.squared else clamped
            return F.sum(F.when(condition, summed(clamped)))

        n_missing, present, clamped, answer = _rows(df.agg(
            _count_if(missing), _count_if(~missing),
            _count_if(~missing & ((value < lo) | (value > hi))),
            total(~missing, value)))[0]
        if person is None:
            return SumAggregate(_folding.to_float(answer, shift), int(present),
                                int(n_missing), int(clamped), exact)
        contribution = query.contribution
        p_missing = _person_missing(F.col(_col(person)), columns[person])
        # the unit's kept rows (one truncation for every query), then those with a value
        s = _kept(df, person, columns, contribution).where(~missing).select(
            value.alias("v"), "r")
        kept = F.col("r") <= contribution.max_rows
        v = F.col("v")
        answer, n_kept, clamped, eligible = _rows(s.agg(
            total(kept, v), _count_if(kept), _count_if(kept & ((v < lo) | (v > hi))),
            F.count(F.lit(1))))[0]
        missing_person = int(_rows(df.agg(_count_if(p_missing)))[0][0])
        return SumAggregate(_folding.to_float(answer, shift), int(n_kept), int(n_missing),
                            int(clamped), exact, missing_person, int(eligible) - int(n_kept))

    return plan


def _cell_text(query: CategoryCounts | CategoryTable | Binned | GroupedSum) -> Callable[[Any], Any]:
    """The canonical text of a (1-based, declared) cell index: the DuckDB backend's
    ``_cell_text``, the same strings (``_folding.cell_texts``) looked up in a literal array."""
    from pyspark.sql import functions as F

    def lookup(texts: list[str], index: Any) -> Any:
        return F.element_at(F.array(*[F.lit(t) for t in texts]), index.cast("int"))

    if isinstance(query, CategoryTable):
        rows, columns = _folding.crosstab_texts(query)
        n = len(columns)
        return lambda idx: F.concat(lookup(rows, F.floor((idx - 1) / n) + 1), F.lit("|"),
                                    lookup(columns, (idx - 1) % n + 1))
    texts = _folding.cell_texts(query)
    return lambda idx: lookup(texts, idx)


def _bounded_cells(df: Any, cell: Any, person: int, columns: Sequence[ColumnInfo],
                   query: CategoryCounts | CategoryTable | Binned, raw: Sequence[str]
                   ) -> tuple[list[tuple], int]:
    """(cell, kept, eligible) rows under the contribution bounds, and the missing-id rows:
    the unit's kept rows (``_kept``), or with ``max_groups`` the cells ranked by their
    canonical text and at most ``max_rows`` rows in each, as in DuckDB.

    ``raw``: the columns ``cell`` reads (it is a function of their values alone). The kept
    rows are counted per distinct value of them first, and ``cell`` computed once per value:
    on a text column it is the one rule's canonical key, dozens of regular expressions that
    Spark ran on every kept row (issue 37: most of a plan's time at 10^6 rows)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    contribution = query.contribution
    text = _cell_text(query)
    p = F.col(_col(person))
    p_missing = _person_missing(p, columns[person])
    k = contribution.max_rows
    if contribution.max_groups is None:
        # the unit's kept rows (one truncation for every query), counted per value, then
        # those in a cell. The cell test is applied to the collected rows, not as a
        # ``where``: Spark would push that below the grouping, onto every row again
        g = _kept(df, person, columns, contribution).groupBy(*raw).agg(
            _count_if(F.col("r") <= k).alias("kept"), F.count(F.lit(1)).alias("n"))
        s = g.select(cell.alias("idx"), "kept", "n").groupBy("idx").agg(
            F.sum("kept"), F.sum("n"))
        rows = [row for row in _rows(s) if row[0] is not None and row[0] > 0]
        missing_person = int(_rows(df.agg(_count_if(p_missing)))[0][0])
        return rows, missing_person
    else:
        m = (df.where(~p_missing).select(_person_text(p, columns[person]).alias("pid"),
                                         cell.alias("idx")).where(F.col("idx") > 0))
        d = m.groupBy("pid", "idx").agg(F.count(F.lit(1)).alias("n"))
        d = d.withColumn("key", text(F.col("idx")))
        order = Window.partitionBy("pid").orderBy(
            _row_key(contribution, "pid", "key", "group"), F.col("key"))
        s = d.withColumn("g", F.row_number().over(order))
        kept = s.groupBy("idx").agg(
            F.sum(F.when(F.col("g") <= contribution.max_groups,
                         F.least(F.col("n"), F.lit(k))).otherwise(F.lit(0))),
            F.sum(F.col("n")))
    missing_person = int(_rows(df.agg(_count_if(p_missing)))[0][0])
    return _rows(kept), missing_person


def _compile_histogram(query: CategoryCounts, columns: Sequence[ColumnInfo], where: str) -> Plan:
    from pyspark.sql import functions as F

    i = _folding.column_index(columns, query.column, "column", where)
    info = columns[i]
    kind = _folding.match_kind(info, query.categories, where)
    cells = len(query.categories)
    person = _folding.check_contribution(columns, query.contribution, where)

    def plan(df: Any) -> Aggregate:
        g = df.groupBy(_col(i)).agg(F.count(F.lit(1)).alias("n"))
        g = g.select(_cell(F.col(_col(i)), info, kind, query.categories).alias("idx"), "n")
        rows = _rows(g.groupBy("idx").agg(F.sum("n")))
        if person is None:
            return _folding.histogram_aggregate(rows, cells)
        kept, missing_person = _bounded_cells(
            df, _cell(F.col(_col(i)), info, kind, query.categories), person, columns, query,
            [_col(i)])
        return _folding.histogram_aggregate(rows, cells, kept=kept,
                                            missing_person_rows=missing_person)

    return plan


def _compile_crosstab(query: CategoryTable, columns: Sequence[ColumnInfo], where: str) -> Plan:
    from pyspark.sql import functions as F

    a = _folding.column_index(columns, query.row, "row", where)
    b = _folding.column_index(columns, query.column, "column", where)
    kind_a = _folding.match_kind(columns[a], query.row_categories, where)
    kind_b = _folding.match_kind(columns[b], query.column_categories, where)
    shape = (len(query.row_categories), len(query.column_categories))
    person = _folding.check_contribution(columns, query.contribution, where)

    def cell_a(df_col: Any) -> Any:
        return _cell(df_col, columns[a], kind_a, query.row_categories)

    def cell_b(df_col: Any) -> Any:
        return _cell(df_col, columns[b], kind_b, query.column_categories)

    def plan(df: Any) -> Aggregate:
        g = df.groupBy(_col(a), _col(b)).agg(F.count(F.lit(1)).alias("n"))
        g = g.select(cell_a(F.col(_col(a))).alias("ia"), cell_b(F.col(_col(b))).alias("ib"),
                     "n")
        rows = _rows(g.groupBy("ia", "ib").agg(F.sum("n")))
        if person is None:
            return _folding.table_aggregate(rows, shape)
        ra, cb = cell_a(F.col(_col(a))), cell_b(F.col(_col(b)))
        cell = F.when((ra > 0) & (cb > 0), (ra - 1) * shape[1] + cb).otherwise(F.lit(0))
        kept, missing_person = _bounded_cells(df, cell, person, columns, query,
                                              [_col(a), _col(b)])
        return _folding.table_aggregate(rows, shape, kept=kept, missing_person_rows=missing_person)

    return plan


def _binned_cell(column: Any, info: ColumnInfo, query: Binned) -> Any:
    """The 1-based cell of a value, -1 when missing: the DuckDB backend's ``_binned_cell``
    with Spark's higher-order ``filter`` counting the points at or below the value."""
    from pyspark.sql import functions as F

    x, missing = _number(column, info)
    points = F.array(*[F.lit(float(p)) for p in query.points])
    n_le = F.size(F.filter(points, lambda p: p <= x))
    n_lt = F.size(F.filter(points, lambda p: p < x))
    m = len(query.points)
    if query.cells == "ranks":
        cell = n_lt + n_le + F.lit(1)
    else:
        cell = F.when(x == F.lit(float(query.points[-1])), F.lit(m)).otherwise(n_le + 1)
        if query.outside == "clamp":
            cell = F.greatest(F.least(cell, F.lit(m)), F.lit(2)) - 1
    return F.when(missing, F.lit(-1)).otherwise(cell)


def _compile_binned(query: Binned, columns: Sequence[ColumnInfo], where: str) -> Plan:
    from pyspark.sql import functions as F

    i = _folding.numeric_column(columns, query.column, where)
    info = columns[i]
    cells = query.size
    person = _folding.check_contribution(columns, query.contribution, where)

    def plan(df: Any) -> Aggregate:
        g = df.groupBy(_col(i)).agg(F.count(F.lit(1)).alias("n"))
        g = g.select(_binned_cell(F.col(_col(i)), info, query).alias("idx"), "n")
        rows = _rows(g.groupBy("idx").agg(F.sum("n")))
        if person is None:
            return _folding.histogram_aggregate(rows, cells)
        kept, missing_person = _bounded_cells(
            df, _binned_cell(F.col(_col(i)), info, query), person, columns, query, [_col(i)])
        return _folding.histogram_aggregate(rows, cells, kept=kept,
                                            missing_person_rows=missing_person)

    return plan


def _compile_grouped_sum(query: GroupedSum, columns: Sequence[ColumnInfo],
                         where: str) -> Plan:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    key = _folding.column_index(columns, query.key, "key", where)
    i = _folding.numeric_column(columns, query.column, where)
    kind = _folding.match_kind(columns[key], query.categories, where)
    info = columns[i]
    mode = _folding.sum_mode(info, query)
    exact = mode in ("integer", "rounded")
    shift = _folding.sum_shift_of(query, mode)
    cells = len(query.categories)
    person = _folding.check_contribution(columns, query.contribution, where)

    def plan(df: Any) -> Aggregate:
        x = F.col(_col(i))
        value, missing, lo, hi, summed = _summand(x, info, mode, query.lower, query.upper,
                                                  shift)

        def total(condition: Any, values: Any) -> Any:
            # inside the when: Spark's least skips nulls
            return F.sum(F.when(condition, summed(F.greatest(F.least(values, hi), lo))))

        cell = _cell(F.col(_col(key)), columns[key], kind, query.categories)
        t = df.select(cell.alias("idx"), value.alias("v"), missing.alias("mv"))
        v, mv = F.col("v"), F.col("mv")
        rows = _rows(t.groupBy("idx").agg(
            _count_if(~mv), total(~mv, v), _count_if(~mv & ((v < lo) | (v > hi))),
            _count_if(mv)))
        if person is None:
            return _folding.grouped_sum_aggregate(rows, cells, exact, shift=shift)
        contribution = query.contribution
        p = F.col(_col(person))
        p_missing = _person_missing(p, columns[person])
        # the unit's kept rows (one truncation for every query), then those with a declared
        # key and a value; with max_groups, the groups' rule on top (cells by the md5 of
        # their text, in each the rows of lowest rank)
        m = (_kept(df, person, columns, contribution).where(~missing)
             .select("pid", cell.alias("idx"), value.alias("v"), "r")
             .where(F.col("idx") > 0))
        k = contribution.max_rows
        text = _cell_text(query)
        if contribution.max_groups is None:
            s = m
            kept = F.col("r") <= k
        else:
            gs = (m.select("pid", "idx").distinct().withColumn("key", text(F.col("idx")))
                  .withColumn("g", F.row_number().over(Window.partitionBy("pid").orderBy(
                      _row_key(contribution, "pid", "key", "group"), F.col("key"))))
                  .drop("key"))
            s = m.join(gs, ["pid", "idx"]).withColumn("rr", F.row_number().over(
                Window.partitionBy("pid", "idx").orderBy("r")))
            kept = (F.col("rr") <= k) & (F.col("g") <= contribution.max_groups)
        bounded = _rows(s.groupBy("idx").agg(
            total(kept, v), _count_if(kept), _count_if(kept & ((v < lo) | (v > hi))),
            F.count(F.lit(1))))
        missing_person = int(_rows(df.agg(_count_if(p_missing)))[0][0])
        return _folding.grouped_sum_aggregate(rows, cells, exact, kept=bounded,
                                              missing_person_rows=missing_person, shift=shift)

    return plan


def _compile_rows_per_person(query: RowsPerPerson, columns: Sequence[ColumnInfo],
                             where: str) -> Plan:
    from pyspark.sql import functions as F

    p = _folding.check_contribution(columns, Contribution(query.person, 1), where)

    def plan(df: Any) -> Aggregate:
        pid = _person_text(F.col(_col(p)), columns[p]).alias("pid")
        g = df.select(pid).groupBy("pid").agg(F.count(F.lit(1)).alias("n"))
        g = g.select(F.col("pid").isNull().alias("m"), "n")
        return _folding.rows_per_person_aggregate(_rows(g.groupBy("m", "n").count()))

    return plan


def _compile_person_cells(query: PersonCells, columns: Sequence[ColumnInfo],
                          where: str) -> Plan:
    """As DuckDB's ``_compile_person_cells``: pairs (person, group), then their cells."""
    p, i, kind = _folding.person_cells_parts(query, columns, where)

    def plan(df: Any) -> Aggregate:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        has_id = ~_person_missing(F.col(_col(p)), columns[p])
        read = F.lit(True)   # the rows the query reads: all, those in a cell, with a value
        group, value = F.lit(1), F.lit(1.0).cast("double")
        if i is not None and kind is not None:
            group = _cell(F.col(_col(i)), columns[i], kind, query.categories)
            read = group >= 1
        elif i is not None:
            value, missing = _number(F.col(_col(i)), columns[i])
            read = ~missing
        read = F.coalesce(read, F.lit(False))
        # Every row with a person id is in its person's rows (nn): under the unit's one
        # truncation a row the query does not read (g = 0) still takes one of the kept slots.
        rows = df.where(has_id).select(
            _person_text(F.col(_col(p)), columns[p]).alias("p"),
            F.when(read, group).otherwise(F.lit(0)).alias("g"),
            F.when(read, value).alias("v"))
        c = F.col("v") if query.lower is None else F.greatest(
            F.least(F.col("v"), F.lit(float(query.upper))), F.lit(float(query.lower)))
        pairs = rows.groupBy("p", "g").agg(
            F.count(F.lit(1)).alias("n"), F.sum(c).alias("c"), F.sum(c * c).alias("q"),
            F.sum("v").alias("raw"))
        person = Window.partitionBy("p")
        pairs = pairs.select("g", "n", "c", "q", "raw", F.sum("n").over(person).alias("nn"),
                             F.sum((F.col("g") >= 1).cast("long")).over(person).alias("gg"))
        cells = pairs.where(F.col("g") >= 1).groupBy("g", "n", "nn", "gg").agg(
            F.count(F.lit(1)), F.sum("c"), F.sum(F.col("c") * F.col("c")), F.sum("q"),
            F.sum("raw"))
        left_out = _rows(df.agg(_count_if(~(has_id & read))))[0][0]
        return _folding.cells_aggregate(_rows(cells), left_out)

    return plan


def _compile_distinct(query: DistinctValues, columns: Sequence[ColumnInfo],
                      where: str) -> Plan:
    i = _folding.column_index(columns, query.column, "column", where)
    info = columns[i]
    kind = _folding.match_kind(info, query.exclude, where) if query.exclude else None

    def plan(df: Any) -> Aggregate:
        from pyspark.sql import functions as F

        x = F.col(_col(i))
        condition = ~_missing(x, info)
        value = x
        # one canonical key per group (engine.cells); every key (limit None) of a number or
        # boolean column as its key ("12", "true"), as DuckDB's
        if info.kind == "text" or (query.limit is None and info.kind != "other"):
            value = _person_text(x, info)
            condition = value.isNotNull()
        if kind is not None and kind != "never":
            condition = condition & (_cell(x, info, kind, query.exclude) == 0)
        found = df.where(condition).select(value.alias("v")).distinct().orderBy("v")
        if query.limit is None:
            return DistinctAggregate(tuple(r[0] for r in _rows(found)), False)
        values = [r[0] for r in _rows(found.limit(query.limit + 1))]
        return DistinctAggregate(tuple(values[: query.limit]), len(values) > query.limit)

    return plan


def _compile_profile(query: Profile, columns: Sequence[ColumnInfo], where: str) -> Plan:
    def plan(df: Any) -> Aggregate:
        from pyspark.sql import functions as F

        row = [df.count()]
        for group in _folding.profile_groups(len(columns)):  # bounded work per job
            parts = []
            for i in group:
                info = columns[i]
                x = F.col(_col(i))
                missing = _missing(x, info)
                present = F.when(~missing, x)
                # count(DISTINCT) skips nulls and folds -0.0 into 0.0, as DuckDB does.
                parts += [_count_if(missing), F.countDistinct(present)]
                if info.numeric:
                    parts += [F.min(present.cast("double")), F.max(present.cast("double"))]
            row += list(_rows(df.agg(*parts))[0])
        return _folding.profile_aggregate(row, columns)

    return plan


def _compile_bins(query: NumericBins, columns: Sequence[ColumnInfo], where: str) -> Plan:
    i = _folding.numeric_column(columns, query.column, where)
    info = columns[i]
    norm, last = _folding.bins_norm(query), query.bins - 1

    def plan(df: Any) -> Aggregate:
        from pyspark.sql import functions as F

        x, missing = _number(F.col(_col(i)), info)
        lo, hi = F.lit(query.lower), F.lit(query.upper)
        inside = F.least(F.floor((x - lo) * F.lit(norm)).cast("long"), F.lit(last))
        index = (F.when(missing, F.lit(-1)).when(x < lo, F.lit(-2))
                 .when(x > hi, F.lit(-3)).when(x == hi, F.lit(last)).otherwise(inside))
        return _folding.bins_aggregate(_rows(df.groupBy(index.alias("idx")).count()),
                                       query.bins)

    return plan


def _compile_first_rows(query: FirstRows, columns: Sequence[ColumnInfo], where: str) -> Plan:
    picked = _folding.picked_columns(columns, query.columns, where)
    names = [columns[i].name for i in picked]

    def plan(df: Any) -> Aggregate:
        rows = df.select(*[_col(i) for i in picked]).limit(query.limit).toPandas()
        return RowsAggregate(_folding.rows_frame(rows, names))

    return plan


def _joint_code(column: Any, info: ColumnInfo, query: JointCells, j: int,
                kind: _folding.MatchKind | None) -> Any:
    """Column j's 0-based code in a :class:`JointCells` (its size for a missing or other
    value): the DuckDB backend's ``_joint_code`` (``kind`` None for a binned column)."""
    from pyspark.sql import functions as F

    size = query.shape[j] - 1
    domain = query.domains[j]
    if kind is None:
        x, missing = _number(column, info)
        points = F.array(*[F.lit(float(p)) for p in domain])
        n_le = F.size(F.filter(points, lambda p: p <= x))
        m = len(domain)
        cell = F.when(x == F.lit(float(domain[-1])), F.lit(m)).otherwise(n_le + 1)
        cell = F.greatest(F.least(cell, F.lit(m)), F.lit(2)) - 2
        return F.when(missing, F.lit(size)).otherwise(cell)
    cell = _cell(column, info, kind, domain)
    return F.when(cell > 0, cell - 1).otherwise(F.lit(size))


def _compile_joint(query: JointCells, columns: Sequence[ColumnInfo], where: str) -> Plan:
    """As DuckDB's ``_compile_joint``: each row's codes, then the non-empty cells and their
    counts; with a person id, the unit's kept rows (``_kept``)."""
    indices = [_folding.numeric_column(columns, c, where) if b
               else _folding.column_index(columns, c, "column", where)
               for c, b in zip(query.columns, query.binned, strict=True)]
    kinds = [None if b else _folding.match_kind(columns[i], d, where)
             for i, d, b in zip(indices, query.domains, query.binned, strict=True)]
    person = _folding.check_contribution(columns, query.contribution, where)
    k = len(indices)
    keys = [f"k{j}" for j in range(k)]

    def plan(df: Any) -> Aggregate:
        from pyspark.sql import functions as F

        codes = [_joint_code(F.col(_col(i)), columns[i], query, j, kinds[j]).alias(keys[j])
                 for j, i in enumerate(indices)]
        if person is None:
            return _folding.joint_aggregate(_rows(df.select(*codes).groupBy(*keys).count()), k)
        contribution = query.contribution
        p = F.col(_col(person))
        p_missing = _person_missing(p, columns[person])
        # the unit's kept rows (one truncation for every query)
        s = _kept(df, person, columns, contribution).select(*codes, "r")
        rows = _rows(s.groupBy(*keys).agg(_count_if(F.col("r") <= contribution.max_rows),
                                          F.count(F.lit(1))))
        missing_person = int(_rows(df.agg(_count_if(p_missing)))[0][0])
        return _folding.joint_aggregate(rows, k, kept=True, missing_person_rows=missing_person)

    return plan


_COMPILERS: dict[type, Callable[..., Plan]] = {
    CountRows: _compile_count, BoundedSum: _compile_sum, CategoryCounts: _compile_histogram,
    CategoryTable: _compile_crosstab, Binned: _compile_binned, GroupedSum: _compile_grouped_sum,
    JointCells: _compile_joint,
    RowsPerPerson: _compile_rows_per_person, PersonCells: _compile_person_cells,
    DistinctValues: _compile_distinct,
    Profile: _compile_profile, NumericBins: _compile_bins, FirstRows: _compile_first_rows,
}


def compile_query(query: Query, columns: tuple[ColumnInfo, ...], where: str) -> Plan:
    """The Spark plan for ``query`` over a relation with these columns (compiled once)."""
    # Cached by the query's text: True == 1 in Python, so queries on categories (True, False)
    # and (1, 0) are equal as objects, yet they match different rows.
    return _compile(query_key(query), query, columns, where)


@functools.lru_cache(maxsize=1024)
def _compile(key: str, query: Query, columns: tuple[ColumnInfo, ...], where: str) -> Plan:
    compiler = _COMPILERS.get(type(query))
    if compiler is None:
        raise TypeError(f"query must be an engine query, got {type(query).__name__}")
    return compiler(query, columns, where)


def _frame_to_arrow(frame: Any) -> Any:
    """The frame as an Arrow table with columns c0, c1, …; NaN and None become null."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    arrays = []
    for name in frame.columns:
        series = frame[name]
        if isinstance(series.dtype, pd.CategoricalDtype):
            values = np.asarray(series.astype(object))
            arrays.append(pa.array(values, from_pandas=True))
        else:
            arrays.append(pa.array(series, from_pandas=True))
    return pa.Table.from_arrays(arrays, names=[_col(i) for i in range(len(arrays))])


class SparkBackend:
    """Answers engine queries with Spark (local, a cluster, or Spark Connect).

    Parameters
    ----------
    url : str, optional
        Master or Spark Connect URL (default ``EPSILON_LAB_SPARK``, else ``local[2]``).
    session : pyspark.sql.SparkSession, optional
        An existing session to use instead (tests share one per test session).
    """

    name = "spark"

    def __init__(self, url: str | None = None, *, session: Any = None,
                 shuffle_partitions: int = 8) -> None:
        self.url = url or os.environ.get(SPARK_ENV) or DEFAULT_MASTER
        self._session = session
        self._shuffle_partitions = shuffle_partitions
        self._lock = threading.Lock()
        self._frames: OrderedDict[tuple[str, str, bool], tuple[Any, tuple[ColumnInfo, ...]]] = (
            OrderedDict())

    @property
    def session(self) -> Any:
        with self._lock:
            if self._session is None:
                try:
                    self._session = spark_session(self.url,
                                                  shuffle_partitions=self._shuffle_partitions)
                except Exception as exc:  # Java missing, cluster unreachable, bad URL
                    raise EngineError(
                        f"Spark could not start at {self.url!r} ({_first_line(exc)}). Check "
                        f"{SPARK_ENV} (a master URL such as local[2] or spark://host:7077, or "
                        "sc://host:15002 for Spark Connect), that the cluster is running, and "
                        "that Java 17 or later is installed.") from None
            return self._session

    def _dataframe(self, source: Source, *, text: bool = False
                   ) -> tuple[Any, tuple[ColumnInfo, ...]]:
        """The source's frame (columns c0, c1, …) and its columns; ``text``: a CSV's cells as
        text (``_folding.reads_text``)."""
        key = (source.identity, source.version, text)
        with self._lock:
            cached = self._frames.get(key)
            if cached is not None:
                self._frames.move_to_end(key)
                return cached
        session = self.session
        if isinstance(source, FrameSource):
            # an upload's cells as text: what a release reads (``FrameSource.cells``)
            read = source.cells if text and source.cells is not None else source.frame
            df = session.createDataFrame(_frame_to_arrow(read))
            names = [str(c) for c in source.frame.columns]
        else:
            if isinstance(source, FileSource):
                path = str(source.path)
                if source.format == "csv":
                    df = _read_csv(session, source, text=text)
                else:
                    df = session.read.parquet(path)
            elif isinstance(source, TableSource):
                df = session.table(source.table)
            else:
                raise TypeError(f"source must be a FrameSource, FileSource or TableSource, "
                                f"got {type(source).__name__}")
            names = list(df.columns)
            df = df.toDF(*[_col(i) for i in range(len(names))])
        columns = tuple(
            ColumnInfo(name, column_kind(field.dataType),  # type: ignore[arg-type]
                       field.dataType.simpleString())
            for name, field in zip(names, df.schema.fields, strict=True))
        with self._lock:
            self._frames[key] = (df, columns)
            while len(self._frames) > 16:
                self._frames.popitem(last=False)
        return df, columns

    def columns(self, source: Source) -> tuple[ColumnInfo, ...]:
        return self._guard(source, lambda: self._dataframe(source)[1])

    def run(self, source: Source, query: Query) -> Aggregate:
        def answer() -> Aggregate:
            df, columns = self._dataframe(source, text=_folding.reads_text(source, query))
            return compile_query(query, columns, source.describe())(df)

        return self._guard(source, answer)

    def run_many(self, source: Source, queries: Sequence[Query]) -> list[Aggregate]:
        """The aggregates answering ``queries`` over ``source``, each equal to ``run``'s.

        The queries under one unit (person column, seed) read one ranking of each person's
        rows (issue 37, item 3): ``_kept`` builds it for the first of them, persisted
        (on local disk: ``_persist_level``), and the others read it instead of ranking again; with
        ``run``, a plan of three bounded queries ranks three times. A frame that more than
        one query reads (a file's, as its cells or typed) is persisted as well, so the file
        is scanned once for the plan rather than in every query's jobs. Everything persisted
        is unpersisted before this returns.

        No ``cells`` (DuckDB's ``run_many`` hands a CSV's text cells to the identity digest):
        Spark's cells live in the JVM, so a release identifies the file itself, before
        reading the data (``release.run``).
        """
        from pyspark import StorageLevel

        def answer() -> list[Aggregate]:
            frames = [self._dataframe(source, text=_folding.reads_text(source, query))
                      for query in queries]
            persisted, shared = [], {}
            readers: dict[int, int] = {}
            for df, _ in frames:
                readers[id(df)] = readers.get(id(df), 0) + 1
            token = _SHARED_KEPT.set(shared)
            try:
                for df, _ in {id(df): (df, c) for df, c in frames}.values():
                    # a frame Spark caches already (a table a steward cached, say) is
                    # someone else's to unpersist: ``storageLevel`` asks Spark's cache, where
                    # ``is_cached`` is only this Python object's flag
                    if readers[id(df)] > 1 and df.storageLevel == StorageLevel.NONE:
                        persisted.append(df.persist(_persist_level()))
                return [compile_query(query, columns, source.describe())(df)
                        for query, (df, columns) in zip(queries, frames, strict=True)]
            finally:
                _SHARED_KEPT.reset(token)
                for _, ranked, owned in shared.values():
                    if owned:
                        ranked.unpersist()
                for df in persisted:
                    df.unpersist()

        return self._guard(source, answer)

    def _guard(self, source: Source, work: Callable[[], Any]) -> Any:
        try:
            return work()
        except (EngineError, TypeError):
            raise
        except Exception as exc:
            text = _first_line(exc)
            if "RpcError" in text or "UNAVAILABLE" in str(exc):
                text = "the server did not answer"
            if "PATH_NOT_FOUND" in text or "FileNotFound" in text or "does not exist" in text:
                raise EngineError(f"{source.describe()} cannot be read ({text}). It may have "
                                  "been moved or removed: choose the dataset again.") from None
            if "TABLE_OR_VIEW_NOT_FOUND" in text:
                raise EngineError(f"{source.describe()} does not exist on the Spark cluster "
                                  f"({text}). Check the table's name.") from None
            raise EngineError(f"Spark could not answer this query on {source.describe()} "
                              f"({text}). Check that the cluster at {self.url!r} is running "
                              "and reachable, then try again.") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
