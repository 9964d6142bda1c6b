"""One reading of a CSV cell (issue 31; ``notes/reading-rule.md``): the rule every path that
reads data implements — the page, an upload's release, the data folder, ``python -m release``,
Spark, the identity digest and the exported programs — written once in pure Python.

Self-contained on purpose (standard library, numpy and pandas only, no import of the project):
the exported programs embed this module's source verbatim, so a program reads its CSV as the
release did. The DuckDB SQL and the Spark expressions of ``engine`` are tested against it.

The rule, in short:

1. A CSV is split into records and fields by its delimiter and RFC 4180 quoting only; every
   field is text. The delimiter is read from the header record alone (:func:`sniff_delimiter`),
   never from the data rows.
2. Malformed records never refuse: a leading byte-order mark is dropped; a record with fewer
   fields than the header has the rest missing; extra fields are dropped; blank lines are no
   record; a record holding a byte that is not UTF-8 (or the replacement character U+FFFD,
   which is what a reader that replaces such bytes leaves) in a field it keeps is dropped
   (one in an extra field is dropped with that field) — the one rule DuckDB, Spark and
   Python can all follow identically. So is a record whose kept fields hold more than
   :data:`MAX_RECORD_CHARS` characters together (a field that is exactly a missing marker,
   :data:`MISSING_SPELLINGS`, counting 0, as DuckDB's reader makes it NULL first; a rule
   of the record's own text; DuckDB's line limit, Spark's and the ``csv`` module's field
   limits are set past it, so that none of them drops or refuses a record first; one gap:
   a record over DuckDB's 32 MiB as written, possible only with text past the header's
   width, is dropped by DuckDB alone). So is a record with text after a closing quote in any
   of its fields, past the header's width too (:func:`badly_quoted`: ``"ab"cd``, ``"1"2``,
   ``"ab" cd``; past the width, with a doubled quote before the text, DuckDB's reader made
   one field of it running on over later records), of which each reader makes another text
   (the ``csv`` module ``abcd``, DuckDB ``abc``, Spark ``"ab"cd``); spaces or tabs alone
   after a closing quote are no text (the record is kept; DuckDB and Spark drop them, this
   reading keeps them: the same key and number), and a quote inside a field that does not
   open with one is text (``ab"cd``, as every reader reads it). DuckDB and Spark, which
   cannot drop them themselves, read a copy of such a file without those records
   (:func:`without_badly_quoted`; ``engine.sources.csv_read_path``, the Spark program's
   ``read_path``). One gap: the Spark program given a cluster path, which it cannot copy,
   and the engine's Spark backend on a master that is not local (``spark://``, ``yarn``,
   ``k8s://``, ``sc://``: its workers cannot read the copy) match Spark's reading of such
   a field (quotes and all), and so also drop a well-formed field whose text starts with a
   quote and has a later one followed by text, and keep a record whose only such field is
   past the header's width (Spark reads no field there).
3. A cell whose text, white space (:data:`WHITE_SPACE`) removed, is a missing marker
   (:data:`MISSING_MARKERS`, any letter case) is missing.
4. A cell is the number DuckDB's ``TRY_CAST(trim(text) AS DOUBLE)`` reads it as
   (:func:`cell_number`), digits grouped by single underscores read without them (DuckDB
   1.5's cast misreads some of those: ``engine.duckdb_backend._cast_double`` corrects it);
   NaN is missing, ±inf is a number (a bound clamps it);
   nothing else is a number. A column declared numeric is read so whatever its other cells
   hold (its guessed type is never asked): a cell that is not a number (``unknown``, and
   ``12,500``, whose thousands separator no path reads) is missing for every query
   (:func:`cell_numbers`; the owner sees those cells, :func:`not_numbers`).
   Which columns the pages offer as numbers (and as whole numbers) is one rule over these
   readings, the upload's and the data folder's (:func:`column_type`); no cell's value
   depends on it.
5. A person id or group key is one canonical text (:func:`cell_key`): a whole number within
   ±2^53 as its integer's decimal text (``12``, ``012``, ``12.0``, ``1.2e1``, `` 12`` → ``12``),
   anything else as written without its surrounding white space; missing is no key.
6. A declared category matches a cell by key (rule 5: the declared ``0012`` is the cell
   ``12``; a declared number the number a cell reads as, rule 4). A boolean and a text match
   when the text's key, in lower case, is the boolean's key (:func:`boolean_key`): a declared
   ``True`` counts the CSV cells ``true``, ``True`` and ``TRUE`` (as Arrow, DuckDB and Spark,
   pandas and R write a boolean), and a declared ``"true"`` or ``"TRUE"`` counts a typed
   ``True`` (a Parquet file's); any other text (``t``, ``1``, ``yes``) is no boolean. Two
   texts still match only as written (their keys): a declared ``"true"`` does not count a
   CSV's ``True``. So one plan counts the same rows in a Parquet file and in its CSV,
   whichever writer wrote it (lower case keeps the order a boolean sorts in, ``false`` before
   ``true``). The groups partition selection finds are the cells' keys whatever the
   column's type (``engine.queries.DistinctValues``): a typed boolean's ``"false"`` and
   ``"true"``, as in a CSV written in lower case (a pandas or R CSV's are its texts as
   written, ``"True"``, ``"TRUE"``); a typed 12 or 12.0 and a CSV's ``12``, ``0012`` and
   `` 12 `` the one group ``"12"``, ranked by that text and released with the label ``12``.
"""

from __future__ import annotations

import csv
import decimal
import gzip
import io
import itertools
import math
import re

import numpy as np
import pandas as pd

#: A cell holding one of these texts (white space removed, any letter case) is missing.
MISSING_MARKERS = frozenset({"", "na", "n/a", "nan", "null", "#n/a", "<na>"})
#: Every letter case of every missing marker ("NA", "Na", "nA", "na", …): the texts DuckDB's
#: CSV reader, which compares a field exactly (``nullstr``), reads as NULL.
MISSING_SPELLINGS = frozenset(
    "".join(letters) for marker in MISSING_MARKERS
    for letters in itertools.product(*[(ch.lower(), ch.upper()) for ch in marker]))
#: The delimiters a CSV may use, in the order that breaks a tie.
DELIMITERS = (",", "\t", ";", "|")
#: Unicode space separators (category Zs): what DuckDB's one-argument ``trim`` strips.
SPACE_SEPARATORS = (" \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                    "\u2009\u200a\u202f\u205f\u3000")
#: The white space removed around a key or a missing marker: ASCII white space and the
#: Unicode space separators (DuckDB's ``trim(text, chars)`` and Spark's ``trim`` are given it).
WHITE_SPACE = "\t\n\x0b\x0c\r" + SPACE_SEPARATORS
#: The largest whole number a key writes as an integer (every integer up to it is a double).
KEY_INTEGER_LIMIT = 2**53
#: A column is offered as numbers when at least this share of its cells that are not missing
#: read as numbers (:func:`column_type`).
NUMERIC_SHARE = 0.95
#: A record whose kept fields (the header's width) hold more than this many characters
#: together (Unicode code points of each field's text as read: quotes removed, a doubled
#: quote one) is dropped on every path (rule 2). 2^21, about DuckDB's former line limit
#: (2,000,000 bytes) on a plain ASCII record: a field of 200,000 characters is read, a record
#: costs at most 8 MiB in Python's widest strings, and as written (at most 4 bytes a
#: character in UTF-8, a doubled quote 2, and 3 bytes of quotes and delimiter a field: 8 MiB
#: and 3 bytes a field) it fits DuckDB's line limit (``duckdb_backend.MAX_LINE_BYTES``,
#: 32 MiB) with room for millions of fields. Read at each use (``cells.MAX_RECORD_CHARS``),
#: never copied, so that a test's smaller value holds on every path.
MAX_RECORD_CHARS = 2**21
#: The ``csv`` module's field limit (process-wide; its default, 131,072 characters, raised
#: ``_csv.Error`` on a longer field): the largest its C long holds on every platform, so
#: the module never refuses a field and :data:`MAX_RECORD_CHARS` alone drops a record.
CSV_FIELD_LIMIT = 2**31 - 1
#: Records counted at a time by :func:`records_too_long` (a bound on what it holds).
_COUNT_CHUNK = 4096
csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
#: A record holding one of these is dropped: an undecodable byte (read by Python as a lone
#: surrogate, ``surrogateescape``) or the replacement character other readers put there.
_UNDECODABLE = re.compile("[\udc80-\udcff\ufffd]")

_ASCII_WS = "[\t\n\x0b\x0c\r ]"
_DIGITS = "[0-9](?:_?[0-9])*"
#: The texts DuckDB's cast to DOUBLE reads (measured against DuckDB 1.5; the same pattern as
#: ``engine.spark_backend.DUCKDB_NUMBER``): ASCII white space around, digits grouped by single
#: underscores, ``+-`` a minus sign, inf, infinity and nan in any letter case.
_NUMBER = re.compile(
    f"{_ASCII_WS}*((?:\\+-|[+-])?(?:(?:{_DIGITS}(?:\\.(?:{_DIGITS})?)?|\\.{_DIGITS})"
    f"(?:[eE][+-]?{_DIGITS})?|(?i:inf|infinity|nan))){_ASCII_WS}*")


def strip_text(text: str) -> str:
    """The text without the white space around it (:data:`WHITE_SPACE`)."""
    return text.strip(WHITE_SPACE)


def is_missing(text: object) -> bool:
    """Whether a cell is missing: None, NaN, or a missing marker (rule 3)."""
    if text is None or text is pd.NA:
        return True
    if isinstance(text, float) and math.isnan(text):
        return True
    return isinstance(text, str) and strip_text(text).lower() in MISSING_MARKERS


def _cast_double(text: str) -> float | None:
    """DuckDB's ``TRY_CAST(text AS DOUBLE)``: the double, or None when it is no number."""
    match = _NUMBER.fullmatch(text)
    if match is None:
        return None
    core = match.group(1).replace("_", "")
    if core.startswith("+-"):
        core = "-" + core[2:]
    return float(core)


def cell_number(text: object) -> float | None:
    """The number a cell reads as (rule 4): DuckDB's ``TRY_CAST(trim(text) AS DOUBLE)``,
    None when it is not a number or NaN; ±inf is a number (a query's bounds clamp it, as in
    DuckDB, Spark and a typed column). A typed number is itself (None if NaN); a decimal
    (a Parquet DECIMAL cell) its double."""
    if text is None or text is pd.NA or isinstance(text, bool | np.bool_):
        return None
    if isinstance(text, decimal.Decimal):
        # a Parquet (or Spark) DECIMAL cell: its double, as DuckDB casts a DECIMAL column
        text = math.nan if text.is_nan() else float(text)
    if isinstance(text, int | np.integer | float | np.floating):
        x = float(text)
        return None if math.isnan(x) else x
    if not isinstance(text, str):
        return None
    x = _cast_double(text.strip(SPACE_SEPARATORS))
    return None if x is None or math.isnan(x) else x


def cell_numbers(values: pd.Series | np.ndarray | list) -> np.ndarray:
    """:func:`cell_number` of every cell as a float array, NaN where a cell is missing or not
    a number (rule 4), computed once per distinct value and mapped back."""
    series = values if isinstance(values, pd.Series) else pd.Series(
        np.asarray(values, dtype=object), dtype=object)
    codes, uniques = pd.factorize(series.astype(object), use_na_sentinel=True)
    numbers = np.full(len(uniques) + 1, math.nan, dtype=np.float64)
    # Plain decimals (ASCII digits, at most one point, a leading minus: most cells of a
    # number column) are read by float() in C, as DuckDB's cast reads them (both correctly
    # rounded); every other value by cell_number. An upload of 10^6 distinct numbers spent
    # seconds in cell_number alone.
    plain = [isinstance(v, str) and _is_plain_decimal(v) for v in uniques]
    at = np.flatnonzero(plain)
    if at.size:
        numbers[at] = np.fromiter(map(float, uniques[at]), dtype=np.float64, count=at.size)
    for i in np.flatnonzero(~np.asarray(plain, dtype=bool)):
        x = cell_number(uniques[i])
        numbers[i] = math.nan if x is None else x
    return numbers[codes]


def _is_plain_decimal(text: str) -> bool:
    """Digits with at most one point and a leading minus, nothing else ("-12.5", "007",
    "5.", ".5"): a text float() and DuckDB's cast read alike."""
    core = text.removeprefix("-").replace(".", "", 1)
    return core.isascii() and core.isdigit()


def not_numbers(values: pd.Series | np.ndarray | list) -> pd.Series:
    """The cells that are neither missing (rule 3) nor a number (rule 4): how many of each
    text there are (white space around it removed), most frequent first, then by text.
    For the data owner's eyes only (the Data page): never a message, never published."""
    series = values if isinstance(values, pd.Series) else pd.Series(
        np.asarray(values, dtype=object), dtype=object)
    codes, uniques = pd.factorize(series.astype(object), use_na_sentinel=True)
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    bad = np.array([not is_missing(v) and cell_number(v) is None for v in uniques],
                   dtype=bool)
    texts = [strip_text(str(v)) for v in uniques[bad]] if bad.any() else []
    out = pd.Series(counts[bad], index=pd.Index(texts, dtype=object), dtype=np.int64)
    out = out.groupby(level=0, sort=False).sum()
    order = np.lexsort((out.index.astype(str), -out.to_numpy()))
    return out.iloc[order]


def column_type(present: int, numbers: int, whole: bool) -> str:
    """The type a CSV column is offered as on every path (an upload, a data-folder file),
    from its cells' readings: ``present`` cells not missing (rule 3), ``numbers`` of them
    numbers (rule 4), ``whole`` when every cell, missing ones too, is a whole number of
    absolute value below 2^53, strictly (both paths test ``abs(x) < 2**53``; a column of
    whole numbers with a missing cell is no integer column).

    "BIGINT" when at least :data:`NUMERIC_SHARE` of the present cells are numbers and
    ``whole``; "DOUBLE" when that share are numbers; "VARCHAR" otherwise (no present cell
    too). Only what the pages offer follows it: every query reads each cell on its own."""
    if present > 0 and numbers >= NUMERIC_SHARE * present:
        return "BIGINT" if whole else "DOUBLE"
    return "VARCHAR"


def _whole_key(x: float) -> str | None:
    if math.isfinite(x) and x.is_integer() and abs(x) <= KEY_INTEGER_LIMIT:
        return str(int(x))
    return None


def _double_text(x: float) -> str:
    """A double as DuckDB casts it to VARCHAR (shortest round-trip text)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(x)
    return text


def cell_key(value: object) -> str | None:
    """The canonical key of one cell (rule 5): None when missing; a whole number within
    ±2^53 (by rule 4, after removing the white space around it) as its integer's decimal
    text; any other text as written without its surrounding white space. A typed value: an
    integer or whole double as its decimal text, a boolean as ``true``/``false``, any other
    double as DuckDB writes it; a decimal as its double."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, decimal.Decimal):
        # a DECIMAL cell is keyed as its double, as DuckDB keys a DECIMAL column (1.50: "1.5")
        value = math.nan if value.is_nan() else float(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isnan(x):
            return None
        whole = _whole_key(x)
        return whole if whole is not None else _double_text(x)
    text = strip_text(str(value))
    if text.lower() in MISSING_MARKERS:
        return None
    x = _cast_double(text)
    if x is not None:
        whole = _whole_key(x)
        if whole is not None:
            return whole
    return text


def boolean_key(value: object) -> bool | None:
    """The boolean a cell or a declared category is when it is compared with a boolean
    (rule 6): a boolean itself; a text whose key (:func:`cell_key`), in lower case, is
    ``true`` or ``false`` that boolean; anything else (missing, a number, another text) None.
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if not isinstance(value, str):
        return None
    key = cell_key(value)
    return {"true": True, "false": False}.get(key.lower()) if key is not None else None


def cell_keys(values: pd.Series | np.ndarray | list) -> pd.Series:
    """:func:`cell_key` of every cell (None when missing), computed once per distinct value
    and mapped back (the work grows with the distinct values, not the rows)."""
    series = values if isinstance(values, pd.Series) else pd.Series(
        np.asarray(values, dtype=object), dtype=object)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    keys = np.array([cell_key(v) for v in uniques] + [None], dtype=object)
    return pd.Series(keys[codes], index=series.index, dtype=object)


def sniff_delimiter(text: str) -> str:
    """The file's delimiter, from its header record alone (its first non-blank line): the
    one of :data:`DELIMITERS` found most often outside quotes there, the first listed on a
    tie, a comma when none is. Never from the data rows, which one person's record could
    tip."""
    for line in io.StringIO(text, newline=""):
        header = line.rstrip("\r\n")
        if header.strip(WHITE_SPACE):
            break
    else:
        return ","
    unquoted = re.sub('"[^"]*"', "", header)
    counts = [unquoted.count(d) for d in DELIMITERS]
    best = max(range(len(DELIMITERS)), key=lambda i: (counts[i], -i))
    return DELIMITERS[best] if counts[best] else ","


def decode_bytes(data: bytes) -> str:
    """A CSV's bytes as text: gzip decompressed, a UTF-8 byte-order mark dropped, bytes that
    are not UTF-8 kept as lone surrogates (``surrogateescape``) so their record is found and
    dropped (:func:`read_cells`)."""
    data = bytes(data)
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="surrogateescape")


def read_cells(data: bytes | str, delimiter: str | None = None
               ) -> tuple[list[str], pd.DataFrame]:
    """A CSV read by the malformed-record rule (rules 1–2): (the header's names, a frame of
    text cells with columns ``c0 … c{n-1}``, None where a short record had no field).

    ``data``: the file's bytes (or its text). Never raises for what a record holds: a short
    record is padded with None, a long one cut to the header's width, a blank line is no
    record, a record holding a byte that is not UTF-8 (or U+FFFD) in a kept field is
    dropped, and so is one whose kept fields hold more than :data:`MAX_RECORD_CHARS`
    characters, and one with text after a closing quote in any field
    (:func:`badly_quoted`). Cells are the
    fields as written (no white space removed, no missing marker read: :func:`is_missing`
    and :func:`cell_key` do that). An empty file has no names and no rows.
    """
    text = decode_bytes(data) if isinstance(data, bytes | bytearray | memoryview) else (
        str(data).removeprefix("\ufeff"))
    delimiter = delimiter or sniff_delimiter(text)
    # The file's last line break ends its last record, never a field: a quote left open runs
    # to the end of the file without it (as DuckDB and Spark read it).
    text = text.removesuffix("\n").removesuffix("\r")     # the last line break
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar='"',
                        doublequote=True, strict=False)
    records = list(filter(None, reader))      # blank lines are no record
    if not records:
        return [], pd.DataFrame({})
    header = [_UNDECODABLE.sub("\ufffd", name) for name in records[0]]
    width = len(header)
    names = [f"c{i}" for i in range(width)]
    # Columns by transposing the records (C-level, no loop over rows in Python): a short
    # record is padded with None, fields past the widest record's are never made.
    columns = list(itertools.zip_longest(*records[1:], fillvalue=None))
    if columns:
        # only the fields kept (the header's width) are looked at, as DuckDB's reader, Spark's
        # and the upload do: a bad byte in a field that is cut off drops nothing
        holds = [pd.Series(column, dtype=object).str.contains(_UNDECODABLE, na=False)
                 .to_numpy(dtype=bool) for column in columns[:width]]
        # a record whose kept fields hold more than MAX_RECORD_CHARS characters is dropped
        # (rule 2), as DuckDB's and Spark's readers drop it
        holds.append(too_long(columns[:width]))
        keep = ~np.logical_or.reduce(holds)
        # a record with text after a closing quote in a kept field is dropped (rule 2)
        keep[badly_quoted(text, delimiter)] = False
    else:
        keep = np.zeros(0, dtype=bool)
    data = {}
    for i, name in enumerate(names):
        column = (np.array(columns[i], dtype=object) if i < len(columns)
                  else np.full(len(records) - 1, None, dtype=object))
        data[name] = pd.Series(column[keep], dtype=object)
    rows = pd.DataFrame(data, columns=names, dtype=object)
    return header, rows


def _quote_field(delimiter: str) -> re.Pattern:
    """One field and what ends it, as the ``csv`` module (``strict=False``) splits a record:
    a field opened by a quote runs to its closing quote (a doubled quote is one; left open,
    to the end of the text), anything after that quote up to the delimiter or line break is
    its ``tail``; any other field runs to the delimiter or line break, quotes in it text."""
    d = re.escape(delimiter)
    return re.compile(rf'(?:"(?:[^"]+|"")*+(?:"(?P<tail>[^{d}\r\n]*))?|[^"{d}\r\n][^{d}\r\n]*|)'
                      rf'(?P<sep>{d}|\r\n|\r|\n|\Z)')


def strictly_quoted(lines, delimiter: str) -> bool:
    """Whether a CSV's text (a string, or lines read with ``newline=""``: a file streamed, its
    memory a record) reads without an error by the ``csv`` module with ``strict=True``, in C:
    then no record has text after a closing quote (nor a quote left open), and
    :func:`badly_quoted` has nothing to find."""
    if isinstance(lines, str):
        lines = io.StringIO(lines, newline="")
    strict = csv.reader(lines, delimiter=delimiter, quotechar='"', doublequote=True,
                        strict=True)
    try:
        max(map(len, strict), default=0)    # every record read, in C, none kept
    except csv.Error:
        return False
    return True


#: Bytes of a file searched at a time for a quote (:func:`quoted_line`): a bound on what the
#: search holds, large enough that the search runs at C speed.
QUOTE_CHUNK = 16 << 20


def quoted_line(stream, chunk: int = QUOTE_CHUNK) -> int | None:
    """Where the line holding a binary stream's first quote byte (``"``) starts (the byte
    after the last line break, ``\\n`` or ``\\r``, before it; 0 on the first line), or None
    when the stream holds none: a byte search in chunks, no parse. In UTF-8 (and with
    ``surrogateescape``) the byte 0x22 is the character ``"`` alone, as 0x0A and 0x0D are the
    line breaks: no other character's bytes hold them."""
    at, line = 0, 0
    while block := stream.read(chunk):
        quote = block.find(b'"')
        end = quote if quote >= 0 else len(block)
        # a line break before the quote (or in a chunk without one) starts a later line
        brk = max(block.rfind(b"\n", 0, end), block.rfind(b"\r", 0, end))
        if brk >= 0:
            line = at + brk + 1
        if quote >= 0:
            return line
        at += len(block)
    return None


def may_be_badly_quoted(path, delimiter: str, opener=open, chunk: int = QUOTE_CHUNK) -> bool:
    """Whether a CSV file may hold a record :func:`badly_quoted` finds: False means it holds
    none (read the file itself), True that its text is to be read whole and split
    (:func:`without_badly_quoted`). ``opener``: ``open`` or ``gzip.open``.

    The same decision as :func:`strictly_quoted` over the whole file, at less cost. A file
    without a quote byte (:func:`quoted_line`) holds no such record: one needs a field opened
    by a quote, and no C pass is made. Otherwise the strict reading starts at the line of the
    first quote: no line break before it is inside quotes (no quote precedes it), so each ends
    a record (or a blank line) on every reading, the records before it are read alike
    (quote-free ones cannot be refused: the field limit is :data:`CSV_FIELD_LIMIT`), and the
    reading from there is the whole file's reading of the records that follow. A gzip file is
    decompressed once more up to that line (a seek back), still cheaper than parsing it."""
    with opener(path, "rb") as stream:
        start = quoted_line(stream, chunk)
        if start is None:
            return False
        stream.seek(start)
        # a UTF-8 byte-order mark can only be at the file's start
        with io.TextIOWrapper(stream, encoding="utf-8-sig" if start == 0 else "utf-8",
                              errors="surrogateescape", newline="") as lines:
            return not strictly_quoted(lines, delimiter)


def badly_quoted(text: str, delimiter: str) -> np.ndarray:
    """The data records (0 the first after the header; blank lines are no record, as
    :func:`read_cells` counts them) with text after a closing quote in any field, past the
    header's width too (there DuckDB's reader may run one field on over later records):
    ``"ab"cd``, ``"1"2``, ``"ab" cd``. They are dropped on every path (rule 2):
    each reader makes another text of them (the ``csv`` module ``abcd``, DuckDB ``abc`` or the
    rest of the file, Spark ``"ab"cd``). Spaces and tabs alone after a closing quote are no
    text (``"ab" ,``: DuckDB and Spark read ``ab``, the ``csv`` module ``ab `` — the same key
    and number), and a quote inside a field that does not open with one is text (``ab"cd``,
    as every reader reads it). ``text``: the file's text, its last line break removed."""
    return np.asarray([i for i, _, _ in badly_quoted_spans(text, delimiter)], dtype=np.int64)


def badly_quoted_spans(text: str, delimiter: str) -> list[tuple[int, int, int]]:
    """(record, start, end) of each record :func:`badly_quoted` finds: its data record
    number and where it is in ``text``, its line break included (what a copy of the file
    without it leaves out: ``engine.sources.csv_read_path``).

    Nothing to find in a text without a quote; otherwise a quick reading first
    (:func:`strictly_quoted`, from the first quote's line as :func:`may_be_badly_quoted`
    starts it), and nothing more on a text it reads; otherwise the text is split field by
    field, as the ``csv`` module splits it (a loop over the fields of such files only)."""
    quote = text.find('"')
    if quote < 0:
        return []
    line = max(text.rfind("\n", 0, quote), text.rfind("\r", 0, quote)) + 1
    if strictly_quoted(text[line:], delimiter):
        return []
    field = _quote_field(delimiter)
    bad: list[tuple[int, int, int]] = []
    record, column, width, filled, wrong, pos, begun = -1, 0, None, False, False, 0, 0
    while True:
        match = field.match(text, pos)
        tail, sep = match.group("tail"), match.group("sep")
        filled = filled or match.end() > match.start() + len(sep) or sep == delimiter
        # any field, past the header's width too: DuckDB's reading of such a field there
        # may take in the records after it
        if tail and tail.strip(" \t"):
            wrong = True
        pos, column = match.end(), column + 1
        if sep == delimiter:
            continue
        if filled:                      # a blank line is no record
            if width is None:
                width = column          # the header's
            elif wrong:
                bad.append((record, begun, pos))
            record += 1
        column, filled, wrong, begun = 0, False, False, pos
        if not sep or pos >= len(text):
            break
    return bad


def without_badly_quoted(text: str, delimiter: str) -> str | None:
    """A CSV's text without its records :func:`badly_quoted` finds (each from its start to
    its line break), every other byte as it was: what a reader that cannot drop them itself
    (DuckDB, Spark) is given to read. None when there is none (read the file itself)."""
    body = text.removesuffix("\n").removesuffix("\r")     # as read_cells splits it
    spans = badly_quoted_spans(body, delimiter)
    if not spans:
        return None
    kept, at = [], 0
    for _, start, end in spans:
        kept.append(body[at:start])
        at = end
    kept.append(text[at:])               # the rest, the file's last line break with it
    return "".join(kept)


#: Characters of a file's text split at a time by :func:`copy_without_badly_quoted`: a bound
#: on what the copy holds (one record longer than it, or a quote left open, is held whole).
COPY_BLOCK = 1 << 20


def _scan_records(text: str, field: re.Pattern, delimiter: str, header: bool,
                  final: bool) -> tuple[list[tuple[int, int]], int, bool]:
    """(start, end) of each record of ``text`` (which starts a record) with text after a
    closing quote, how far the records read end (a record that may go on past ``text``, when
    it is not ``final``, left unread), and whether the header has been read: the splitting
    of :func:`badly_quoted_spans`, block by block."""
    bad: list[tuple[int, int]] = []
    filled, wrong, pos, begun = False, False, 0, 0
    while True:
        match = field.match(text, pos)
        tail, sep = match.group("tail"), match.group("sep")
        if not final and match.end() >= len(text) and sep in ("", "\r"):
            break           # a field (or a \r\n) that may go on in the next block
        filled = filled or match.end() > match.start() + len(sep) or sep == delimiter
        if tail and tail.strip(" \t"):
            wrong = True
        pos = match.end()
        if sep == delimiter:
            continue
        if filled:                      # a blank line is no record
            if not header:
                header = True           # the header is never dropped
            elif wrong:
                bad.append((begun, pos))
        filled, wrong, begun = False, False, pos
        if not sep or pos >= len(text):
            break
    return bad, begun, header


def copy_without_badly_quoted(lines, out, delimiter: str, block: int = COPY_BLOCK) -> bool:
    """Write a CSV's text (``lines``: read with ``newline=""``) to ``out`` without its records
    :func:`badly_quoted` finds (each with its line break), every other character as it was;
    whether any was left out. Block by block, each cut after a line break and carried on to
    a record's start: a block the strict reading in C reads (:func:`strictly_quoted`: it
    ends outside quotes, no such record) is written as it is, any other split field by
    field; what it holds is a block and one record (a quote left open: the rest of the file,
    read in blocks growing with it, so that it is split once more per doubling)."""
    field = _quote_field(delimiter)
    carry, header, dropped = "", False, False
    while True:
        chunk = lines.read(max(block, len(carry)))
        final = not chunk
        text = carry + chunk
        cut = len(text) if final else text.rfind("\n") + 1
        piece, carry = text[:cut], text[cut:]
        if not piece:
            if final:
                return dropped
            continue
        if strictly_quoted(piece, delimiter):
            out.write(piece)
            header = header or bool(piece.strip("\r\n"))
        else:
            bad, done, header = _scan_records(piece, field, delimiter, header, final)
            at = 0
            for start, end in bad:
                out.write(piece[at:start])
                at = end
            out.write(piece[at:done])
            dropped = dropped or bool(bad)
            carry = piece[done:] + carry
        if final:
            out.write(carry)
            return dropped


def records_badly_quoted(text: str, delimiter: str, records: int | None = None) -> np.ndarray:
    """Whether each data record of a CSV's text (as :func:`records_too_long` counts them) has
    text after a closing quote in any field (:func:`badly_quoted`): for a reader with a
    reading of its own (the upload), so that it drops the records the rule drops."""
    text = text.removesuffix("\n").removesuffix("\r")     # the last line break
    bad = badly_quoted(text, delimiter)
    count = records if records is not None else (int(bad.max()) + 1 if bad.size else 0)
    out = np.zeros(count, dtype=bool)
    out[bad[bad < count]] = True
    return out


def too_long(columns: list) -> np.ndarray:
    """Which records hold more than :data:`MAX_RECORD_CHARS` characters in these (kept)
    columns together (each a sequence of texts, None for a missing field): they are dropped
    (rule 2). A field whose whole text is a missing marker in some letter case
    (:data:`MISSING_SPELLINGS`: exactly, no white space removed) counts 0 characters, as
    DuckDB's reader counts it (its ``nullstr`` makes such a field, quoted or not, NULL before
    the filter). The limit is read here, at each call."""
    total = np.zeros(len(columns[0]) if columns else 0, dtype=np.int64)
    for column in columns:
        texts = pd.Series(column, dtype=object)
        lengths = texts.str.len().mask(texts.isin(MISSING_SPELLINGS))
        total += lengths.fillna(0).to_numpy(dtype=np.int64)
    return total > MAX_RECORD_CHARS


def records_too_long(text: str, delimiter: str, records: int | None = None) -> np.ndarray:
    """:func:`too_long` of the data records of a CSV's text (the file as written, after its
    byte-order mark: line breaks inside quotes as they are, a CRLF 2 characters), each
    counted over the header's width as :func:`read_cells` counts it, blank lines skipped: for
    a reader with a reading of its own (the upload), so that it drops the records the rule
    drops. ``records``: how many data records to look at (all when None)."""
    text = text.removesuffix("\n").removesuffix("\r")     # the last line break
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar='"',
                        doublequote=True, strict=False)
    kept = filter(None, reader)               # blank lines are no record
    width = len(next(kept, []))
    rows = itertools.islice(kept, records)
    # in chunks of records, never the whole parsed file at once (its lists took ~29 times
    # the text): each chunk's fields are counted and let go before the next is read
    parts = [np.zeros(0, dtype=bool)]
    while chunk := list(itertools.islice(rows, _COUNT_CHUNK)):
        columns = list(itertools.zip_longest(*chunk, fillvalue=None))[:width]
        parts.append(too_long(columns) if columns else np.zeros(len(chunk), dtype=bool))
    return np.concatenate(parts)


def header_layout(head: bytes | str) -> tuple[list[str], str, int]:
    """(the header's names, the delimiter, the blank lines before the header) from the first
    bytes of a CSV (its first megabyte will do): what a reader that reads the rest itself
    (DuckDB, Spark) is told, so it splits the file as :func:`read_cells` does."""
    text = decode_bytes(head) if isinstance(head, bytes | bytearray | memoryview) else (
        str(head).removeprefix("\ufeff"))
    delimiter = sniff_delimiter(text)
    lines = io.StringIO(text, newline="")
    skip = 0
    for line in lines:
        if line.rstrip("\r\n"):
            break
        skip += 1
    rest = text.split("\n", skip)[-1] if skip else text
    reader = csv.reader(io.StringIO(rest, newline=""), delimiter=delimiter, quotechar='"',
                        doublequote=True, strict=False)
    header = next(reader, [])
    return [_UNDECODABLE.sub("\ufffd", name) for name in header], delimiter, skip


#: What every path says of a CSV with no header row (:func:`has_header`), after the file's name.
NO_HEADER = ("holds no header row: it is empty, or holds only blank lines or spaces. A CSV "
             "needs a first row naming its columns")


def has_header(header: list[str], head: bytes | str, complete: bool = True) -> bool:
    """Whether a CSV has a header row: a file that is empty, or whose every line is blank or
    white space only, has none, and is refused on every path (a fact of the file's form, not
    of its rows). ``header``: its names (:func:`header_layout`, :func:`read_cells`); ``head``:
    the file's bytes or text those were read from, the whole file when ``complete`` (a head
    cut short that is white space only may go on with rows: it is read as before, never
    refused). A first line of spaces followed by rows is read as before (it names one column
    by position), and so is a first row of delimiters (:func:`column_names`)."""
    if len(header) > 1 or (len(header) == 1 and strip_text(header[0])) or not complete:
        return True
    text = decode_bytes(head) if isinstance(head, bytes | bytearray | memoryview) else (
        str(head).removeprefix("\ufeff"))
    return bool(strip_text(text))


def column_names(header: list[str]) -> list[str]:
    """A CSV header's column names as every path names them (and a plan says them): white
    space removed around each, an empty one named by its position (``column1``, ...), a
    repeated one numbered (``name_1``, ...)."""
    names: list[str] = []
    seen: set[str] = set()
    for i, raw in enumerate(header):
        name = raw.strip() or f"column{i}"
        base, k = name, 1
        while name in seen:
            name = f"{base}_{k}"
            k += 1
        seen.add(name)
        names.append(name)
    return names


# ------------------------------------------------------------------------------------------
# One sum of decimals (not a reading, but a rule every path that sums follows alike: DuckDB,
# Spark and the exported programs): each clamped value (or deviation, or squared deviation)
# becomes a whole multiple of 2^-shift, shift chosen from the public bounds alone; the
# multiples are added exactly (128-bit integers, Spark's DECIMAL(38, 0), Python ints) and
# the exact total is rounded to float64 once. A floating sum instead rounds at every
# addition, and one row more could move it by the bound plus up to n²·2^-52 of it
# (Casacuberta et al. 2022, "Widespread underestimation of sensitivity in DP libraries").

#: Each summand becomes a multiple of 2^-shift of at most 2^SUM_BITS in magnitude: it fits a
#: signed 64-bit integer, and 2^64 rows of them sum within 2^126 (a HUGEINT holds 2^127, a
#: DECIMAL(38, 0) 10^38 > 2^126), so no total can overflow.
SUM_BITS = 62
#: Rows per block of the exact numpy sum (:func:`integer_sums`): each block's halves of 31
#: bits sum within an int64 (2^30 rows · 2^32 < 2^63, an integer column's values to 2^63).
_SUM_BLOCK = 2**30


def deviation_bound(lower: float, upper: float) -> float:
    """The half-width ``(upper - lower) / 2`` as the plan computes a variance's declared
    sensitivities (``plan/kinds/variance.py``): a deviation from the midpoint is clamped to
    it on every path. Computed apart, ``clamped - (lower + upper) / 2`` can exceed it by a
    few ulps (bounds [6.7, 9.5]: 1.4000000000000004 against 1.4), so one person would move
    the sum by more than its declared sensitivity."""
    return (upper - lower) / 2


def summand_bound(lower: float, upper: float, centre: float = 0.0,
                  squared: bool = False) -> float:
    """The largest magnitude a summand of values clamped to ``[lower, upper]`` can have: the
    bound itself, or for a variance's moments (``centre`` the bounds' midpoint) the declared
    half-width :func:`deviation_bound` each deviation is clamped to (squared when
    ``squared``: rounding is monotone, so a deviation within it squares within its square,
    the plan's declared bound). inf when it overflows."""
    if centre != 0.0 or squared:
        half = deviation_bound(lower, upper)
        return half * half if squared else half
    return max(abs(lower), abs(upper))


def sum_shift(bound: float) -> int:
    """The power of two a sum's summands are scaled by (:data:`SUM_BITS`): the largest
    ``shift`` with ``bound · 2^shift < 2^62``. The grid 2^-shift is finer than ``bound``'s
    last bit, so ``±bound`` lie on it and no rounded summand exceeds ``bound``; a summand is
    moved by at most half a step, ``bound · 2^-62`` (a per-row step: it depends on that
    value alone)."""
    if not (math.isfinite(bound) and bound > 0):
        raise ValueError(f"bound must be finite and positive, got {bound!r}")
    return SUM_BITS - math.frexp(bound)[1]


def sum_scale(shift: int) -> tuple[float, float]:
    """2^shift as two powers of two whose product, applied one after the other, scales a
    double exactly (shift reaches 1,135 for a bound of 2^-1074, beyond a double's 2^1023):
    a result too small to be a normal double rounds to 0 whichever way it is computed."""
    return 2.0 ** (shift - shift // 2), 2.0 ** (shift // 2)


def fixed_point_total(total: object, shift: int) -> float:
    """An exact whole total of multiples of 2^-shift (int or Decimal; None: no rows) as
    float64, rounded once (Python's int division is correctly rounded); ±inf beyond float64."""
    if total is None:
        return 0.0
    whole = int(total)   # type: ignore[call-overload]
    try:
        return whole / (1 << shift) if shift >= 0 else float(whole << -shift)
    except OverflowError:
        return math.copysign(math.inf, whole)


def fixed_point_sums(values: np.ndarray, shift: int, cells: np.ndarray | None = None,
                     size: int = 1) -> list[float]:
    """The sum of ``values`` (each at most ``2^(62 - shift)`` in magnitude, NaN none) in each
    of ``size`` cells (``cells``: each value's cell; None: one), by the rule above: each
    value rounded to a multiple of 2^-shift (ties to even), the multiples summed exactly
    (:func:`integer_sums`), each cell's total rounded to float64 once."""
    f0, f1 = sum_scale(shift)
    whole = np.rint(np.asarray(values, dtype=np.float64) * f0 * f1).astype(np.int64)
    return [fixed_point_total(t, shift) for t in integer_sums(whole, cells, size)]


def integer_sums(whole: np.ndarray, cells: np.ndarray | None = None,
                 size: int = 1) -> list[int]:
    """The exact sum of the int64 ``whole`` (any, to ±2^63) in each of ``size`` cells
    (``cells``: each one's; None: one), as Python ints: halves of 31 bits (the high one
    signed, within 2^32) summed in int64 per block of :data:`_SUM_BLOCK` rows."""
    whole = np.asarray(whole, dtype=np.int64)
    totals = [0] * size
    for start in range(0, whole.size, _SUM_BLOCK):
        block = whole[start:start + _SUM_BLOCK]
        high, low = block >> 31, block & (2**31 - 1)
        if cells is None:
            totals[0] += (int(np.sum(high)) << 31) + int(np.sum(low))
            continue
        at = np.asarray(cells)[start:start + _SUM_BLOCK]
        sum_high, sum_low = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
        np.add.at(sum_high, at, high)
        np.add.at(sum_low, at, low)
        totals = [t + (int(h) << 31) + int(lo)
                  for t, h, lo in zip(totals, sum_high, sum_low, strict=True)]
    return totals
