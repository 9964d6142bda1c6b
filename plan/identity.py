"""A dataset's identity: the name a plan gives it and a digest of its content.

The ledger knows data by :func:`content_digest`: a SHA-256 over the canonical table — the
column names in sorted order and the multiset of rows, each value written in one canonical
text (a number as its shortest float64 text, a missing value as missing whatever its marker,
text trimmed) — computed by DuckDB the same way for an upload held in memory, a file of the
data folder and the file given to ``python -m release``. Renaming the file, compressing it,
reordering its columns or its rows keep the identity; changing one value changes it.

The older byte-level hashes (:func:`file_hash`, :func:`frame_hash`) are kept for ledgers
written before the content digest: they are looked up as aliases of the same data.

A file's digest is remembered per file version (:func:`file_version`: its path, size,
modification and change times in nanoseconds, inode and device, each Parquet part's too), in
this process and, given a :class:`DigestMemo`, across processes (``release.identities``): an
unchanged file is not read again. What a stat cannot see, and how it is guarded, is said at
:data:`RACY_SECONDS`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import duckdb
import numpy as np
import pandas as pd

from engine.duckdb_backend import csv_names, csv_text_reader, parquet_path
from engine.errors import EngineError
from engine.sources import FileSource, parquet_parts

__all__ = ["DatasetIdentity", "file_hash", "bytes_hash", "frame_hash", "content_hash",
           "content_digest", "CHUNK_BYTES", "FRAME_CHUNK_ROWS", "MISSING_TEXTS", "DigestMemo",
           "file_version", "RACY_SECONDS", "CellsDigest", "cells_digest"]

#: Bytes read at a time: memory stays bounded whatever the file's size.
CHUNK_BYTES = 1 << 20
#: Rows of a frame hashed at a time (8 bytes per row and column in flight).
FRAME_CHUNK_ROWS = 1 << 16
_CACHE_SIZE = 256

_cache: OrderedDict[tuple[str, int, int, int], str] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class DatasetIdentity:
    """How the ledger knows a dataset: the name a plan gives it, and the digest of its
    content (:func:`content_digest`); ``aliases`` are older hashes of the same data (a
    ledger written before the content digest knows it by one of them)."""

    name: str
    content_hash: str
    aliases: tuple[str, ...] = ()

    @property
    def hashes(self) -> tuple[str, ...]:
        return (self.content_hash, *(a for a in self.aliases if a != self.content_hash))

    def describe(self) -> str:
        return f"{self.name} ({self.content_hash[:19]}…)"


def _digest(h: hashlib._Hash) -> str:
    return "sha256:" + h.hexdigest()


def bytes_hash(data: bytes) -> str:
    """The hash of bytes held in memory (an upload): equal to :func:`file_hash` of a file
    holding the same bytes."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    h = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(view), CHUNK_BYTES):
        h.update(view[start:start + CHUNK_BYTES])
    return _digest(h)


def _hash_regular_file(path: Path, info: os.stat_result) -> str:
    key = (str(path), info.st_mtime_ns, info.st_size, info.st_ino)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    h = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(CHUNK_BYTES):
            h.update(chunk)
    after = path.stat()
    if (after.st_mtime_ns, after.st_size) != (info.st_mtime_ns, info.st_size):
        raise OSError(f"{path} changed while it was being hashed; try again")
    digest = _digest(h)
    with _lock:
        _cache[key] = digest
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return digest


def file_hash(path: str | os.PathLike) -> str:
    """The hash of a file, or of a folder of Parquet files.

    A file: SHA-256 of its bytes, read in chunks of :data:`CHUNK_BYTES`. A folder: SHA-256 over
    its ``*.parquet`` files in sorted order, each as its relative path and its own hash (a
    renamed or added part changes it). Cached per file by path, modification time, size and
    inode: a file rewritten in place gets a new time and is hashed again.

    Raises
    ------
    OSError
        The path cannot be read, or a folder holds no Parquet file.
    """
    root = Path(path).absolute()
    info = root.stat()
    if stat.S_ISREG(info.st_mode):
        return _hash_regular_file(root, info)
    if not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{root} is neither a file nor a folder")

    parts = [p for p in parquet_parts(root) if p.is_file()]
    if not parts:
        raise OSError(f"the folder {root} holds no .parquet files")
    h = hashlib.sha256(b"parquet-folder\x00")
    for part in parts:
        relative = part.relative_to(root).as_posix().encode("utf-8")
        h.update(len(relative).to_bytes(4, "big") + relative)
        h.update(_hash_regular_file(part, part.stat()).encode("ascii"))
    return _digest(h)


def frame_hash(frame: pd.DataFrame) -> str:
    """The hash of a frame's content: column names, dtypes and values in row order.

    For data with no file behind it (a generated dataset). Values are hashed with pandas'
    stable per-row hash (``hash_pandas_object``, which distinguishes missing values), a block
    of :data:`FRAME_CHUNK_ROWS` rows at a time. The same rows read from a CSV and from a
    Parquet file may differ in dtype, and then in hash: hash the file when there is one.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    h = hashlib.sha256(b"frame\x00")
    header = "\x1f".join(f"{c}\x1e{frame[c].dtype}" for c in frame.columns)
    h.update(header.encode("utf-8") + b"\x00")
    h.update(int(len(frame)).to_bytes(8, "big"))
    for start in range(0, len(frame), FRAME_CHUNK_ROWS):
        block = frame.iloc[start:start + FRAME_CHUNK_ROWS]
        for column in block.columns:
            values = pd.util.hash_pandas_object(block[column], index=False).to_numpy()
            h.update(np.ascontiguousarray(values, dtype="<u8").tobytes())
    return _digest(h)


def content_hash(data: str | os.PathLike | bytes | pd.DataFrame) -> str:
    """:func:`file_hash` for a path, :func:`bytes_hash` for bytes, :func:`frame_hash` for a
    frame."""
    if isinstance(data, pd.DataFrame):
        return frame_hash(data)
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes_hash(data)
    if isinstance(data, str | os.PathLike):
        return file_hash(data)
    raise TypeError(f"data must be a path, bytes or a DataFrame, got {type(data).__name__}")


# --------------------------------------------------------------------------------------------
# the content digest

#: Cell texts read as missing (after trimming, any case): the upload parser's markers, so an
#: upload and the same file read by DuckDB agree on what is missing.
MISSING_TEXTS = ("", "na", "n/a", "nan", "null", "#n/a", "<na>")
_DIGEST_FORMAT = b"epsilon-lab-content-v1\x00"
_digest_cache: OrderedDict[tuple, str] = OrderedDict()
#: The reading a remembered digest was computed by (part of a file's version, not of the
#: digest): "2" since a one-column CSV's blank lines are no record on the data-folder path
#: too, so a digest remembered from the older reading of such a file is computed again.
_READING = "2"


def _is_marker(lowered: str) -> str:
    """SQL: whether the lowered text ``lowered`` is one of :data:`MISSING_TEXTS` (NULL if it
    is NULL: the digest asks only of a value that is not). Not an ``IN`` list: DuckDB plans
    an ``IN`` of five or more constants as a mark join, whose key is computed for every row
    before the ``CASE`` that holds it (a number column's text, lowered, for every value,
    where the ``CASE`` reaches it only for a value that is not a finite number: a quarter
    of the digest's CPU on a Parquet file); ``list_contains`` is the same test, as cheap as
    the join on a text column (bench/bench_release.py, method digest)."""
    listed = ", ".join(f"'{m}'" for m in MISSING_TEXTS)
    return f"list_contains([{listed}], {lowered})"


def _canonical_value(text: str, number: str, missing: str) -> str:
    """SQL for one value's canonical text from its trimmed text, that text as a double and
    whether it was missing: '' missing, 'n' a finite number (its shortest float64 text), 'b'
    true/false, 's' text (trimmed). The same for a number read as BIGINT, DOUBLE or text,
    and for a missing value read as NULL, NaN or a marker."""
    return (f"(CASE WHEN {missing} OR {_is_marker(f'lower({text})')} THEN '' "
            f"WHEN isfinite({number}) THEN 'n' || CAST({number} + 0.0 AS VARCHAR) "
            f"WHEN lower({text}) IN ('true', 'false') THEN 'b' || lower({text}) "
            f"ELSE 's' || {text} END)")


#: Up to this many columns the digest reads each value in stages (trimmed text, then its
#: number) with the canonical text's branches ordered number first; wider tables keep the
#: one flat list expression (per-column projections once took minutes on a wide table:
#: tests/plan/test_identity_wide.py). The row texts, and so the digests, are the same.
STAGED_COLUMNS = 32


#: Types whose finite values read back from their text as the same double (DuckDB writes a
#: DOUBLE as its shortest round-trip text; an integer's text and the integer itself round to
#: the nearest double alike): their canonical text skips the text. Not FLOAT (its text is
#: float32's shortest), DECIMAL, nor HUGEINT (DuckDB's HUGEINT to DOUBLE rounds twice:
#: 20950946717816088603 lands one double off its text's, and so off its CSV's digest).
_NUMBER_TYPES = ("DOUBLE", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT",
                 "USMALLINT", "UINTEGER", "UBIGINT")


def _number_key(value: str) -> str:
    """The canonical text of ``value``, of a number type: from its number when finite, else
    from its text (NULL, NaN, an infinity)."""
    general = _canonical_value(f"trim(CAST({value} AS VARCHAR))",
                               f"TRY_CAST(trim(CAST({value} AS VARCHAR)) AS DOUBLE)",
                               f"{value} IS NULL")
    return (f"(CASE WHEN isfinite(CAST({value} AS DOUBLE)) THEN 'n' || "
            f"CAST(CAST({value} AS DOUBLE) + 0.0 AS VARCHAR) ELSE {general} END)")


def _text_key(text: str, number: str) -> str:
    """The canonical text of a value from its trimmed text and that text as a double,
    a finite number tested first (no missing marker reads as one)."""
    return (f"(CASE WHEN isfinite({number}) THEN 'n' || CAST({number} + 0.0 AS VARCHAR) "
            f"WHEN {text} IS NULL OR {_is_marker(f'lower({text})')} THEN '' "
            f"WHEN lower({text}) IN ('true', 'false') THEN 'b' || lower({text}) "
            f"ELSE 's' || {text} END)")


def _staged_key(i: int, kind: str) -> str:
    """The canonical text of column ``c{i}``'s value in :func:`_staged_row`'s last stage."""
    if kind in _NUMBER_TYPES:
        return _number_key(f"t{i}")
    return _text_key(f"t{i}", f"d{i}")


def _dictionary_key(i: int, kind: str) -> str:
    """The canonical text of column ``c{i}``'s value (``t{i}``, untouched) as one function of
    that value alone (:func:`_staged_key`'s in a lambda): DuckDB runs such a function once
    per entry of a dictionary vector (a dictionary-encoded Parquet column, under 20,000
    entries), where a ``CASE`` or a ``CAST`` runs once per row. The same text. CPU of one
    column's keys at 10^6 rows, one thread, per-row form / this one: a 10-entry text column
    0.115 / 0.004 s; 10^5 distinct numbers written as text (a dictionary over DuckDB's
    limit, so the lambda runs per row) 0.19 / 0.25 s."""
    if kind in _NUMBER_TYPES:
        key = _number_key("v")
    else:
        key = _text_key("trim(CAST(v AS VARCHAR))", "TRY_CAST(trim(CAST(v AS VARCHAR)) AS DOUBLE)")
    return f"list_transform([t{i}], lambda v: {key})[1]"


def _staged_row(order: list[int], types: dict[int, str],
                dictionary: frozenset[int] = frozenset()) -> str:
    """The row text of columns ``order`` (``r``) over ``__SOURCE__``, each value's trimmed
    text (``t``) and number (``d``) computed once: about half the work of the list form on
    a narrow table. A finite number is tested first (no missing marker reads as one), so
    the text is lowered only for a value that is not a number. A value of a number type
    (``types``: DuckDB's type of each column) is written from its number, and through its
    text only when it is not finite (NULL, NaN, an infinity). A column of ``dictionary``
    (read as dictionary vectors) has its canonical text from :func:`_dictionary_key`."""
    typed = {i for i in order if types.get(i) in _NUMBER_TYPES}
    whole = typed | set(dictionary)    # read untouched in the first two stages
    trimmed = ", ".join(f'"c{i}" AS t{i}' if i in whole else
                        f'trim(CAST("c{i}" AS VARCHAR)) AS t{i}' for i in order)
    numbers = ", ".join(f"t{i}" if i in whole else f"t{i}, TRY_CAST(t{i} AS DOUBLE) AS d{i}"
                        for i in order)
    keys = ", ".join(f"{_dictionary_key(i, types.get(i, ''))} AS k{i}" if i in dictionary
                     else f"{_staged_key(i, types.get(i, ''))} AS k{i}" for i in order)
    row = "concat(" + ", '|', ".join(f"length(k{i}), ':', k{i}" for i in order) + ")"
    return (f"SELECT {row} AS r FROM (SELECT {keys} FROM (SELECT {numbers} FROM "
            f"(SELECT {trimmed} FROM __SOURCE__)))")


class _TypesRead(tuple):
    """DuckDB's type name of each column (a tuple of texts), and ``dictionary``: the columns
    it reads as dictionary vectors. How the digest's SQL reads each column (one argument, so
    that the SQL builder keeps its two: tests/plan/test_identity_wide.py puts the first
    version's in its place), never what it computes."""

    dictionary: frozenset[int]

    def __new__(cls, types: Sequence[str], dictionary: frozenset[int]) -> _TypesRead:
        read = super().__new__(cls, types)
        read.dictionary = dictionary
        return read


def _digest_sql(names: list[str], types: Sequence[str] = ()) -> tuple[str, list[str]]:
    """The digest's SELECT over columns ``c0 … c{n-1}`` (in sorted-name order): each row's
    values cast to text, each value's canonical text, the row's text (length-prefixed
    values joined by ``|``, so no separator is ambiguous), and the multiset of rows as the
    sums of the rows' 128-bit MD5 halves (one MD5 per row: ``md5_number``'s low 64 bits are
    ``md5_number_upper``, its high 64 bits ``md5_number_lower``).

    A narrow table in stages (:func:`_staged_row`, ``types`` DuckDB's type names of the
    columns if known, and the columns read as dictionary vectors if a :class:`_TypesRead`
    says so); a wide one in one flat expression whatever the number of columns: each row's
    values in one list (a value is NULL as text exactly when it was NULL) and its lambdas
    nest no deeper for a wide table, and work and memory grow linearly in the columns (one
    DuckDB vector of rows' texts in flight per thread). The row text is the one the first
    version built as a chain of ``||`` over per-column subqueries (which nested one level
    per column, and whose ``IN`` lists DuckDB planned as one join per column): the digests
    are equal.
    """
    order = sorted(range(len(names)), key=lambda i: (names[i].strip(), i))
    if 0 < len(order) <= STAGED_COLUMNS:
        dictionary = types.dictionary if isinstance(types, _TypesRead) else frozenset()
        rows = _staged_row(order, {i: str(t).upper() for i, t in enumerate(types)},
                           dictionary)
    else:
        cells = ", ".join(f'CAST("c{i}" AS VARCHAR)' for i in order)
        value = _canonical_value("trim(v)", "TRY_CAST(trim(v) AS DOUBLE)", "v IS NULL")
        row = (f"array_to_string(list_transform(list_transform([{cells}], lambda v: {value}), "
               f"lambda k: length(k) || ':' || k), '|')") if order else "''"
        rows = f"SELECT {row} AS r FROM __SOURCE__"
    sql = (f"SELECT count(*), coalesce(sum(CAST(m & {2**64 - 1} AS HUGEINT)), 0), "
           f"coalesce(sum(CAST(m >> 64 AS HUGEINT)), 0) FROM (SELECT md5_number(r) AS m "
           f"FROM ({rows}))")
    return sql, [names[i].strip() for i in order]


def _digest_of(connection, clause: str, params: dict, names: list[str],
               dictionary: frozenset[int] = frozenset()) -> str:
    described = connection.execute(f"SELECT * FROM {clause} LIMIT 0", params).description
    sql, ordered = _digest_sql(names, _TypesRead([str(d[1]) for d in described], dictionary))
    rows, upper, lower = connection.execute(sql.replace("__SOURCE__", clause),
                                            params).fetchone()
    h = hashlib.sha256(_DIGEST_FORMAT)
    for name in ordered:
        encoded = name.encode("utf-8")
        h.update(len(encoded).to_bytes(4, "big") + encoded)
    h.update(b"\x00" + f"{int(rows)}|{int(upper)}|{int(lower)}".encode("ascii"))
    return _digest(h)


def _dictionary_columns(connection, path: str | list[str], names: list[str]) -> frozenset[int]:
    """The columns (indices into ``names``) of the Parquet file(s) at ``path`` whose every
    column chunk is dictionary-encoded (their footers say it): DuckDB reads them as
    dictionary vectors, which :func:`_dictionary_key` digests once per entry. Only a choice
    of how to compute the same digest: a footer that cannot be read chooses none."""
    try:
        encoded = connection.execute(
            "SELECT path_in_schema FROM parquet_metadata($path) GROUP BY path_in_schema "
            "HAVING bool_and(contains(encodings, 'DICTIONARY')) "
            "AND count(DISTINCT (file_name, row_group_id)) = (SELECT count(DISTINCT "
            "(file_name, row_group_id)) FROM parquet_metadata($path))", {"path": path}
        ).fetchall()
    except duckdb.Error:
        return frozenset()
    found = {row[0] for row in encoded}
    return frozenset(i for i, name in enumerate(names)
                     if name in found and names.count(name) == 1)


#: A file version whose newest time (modification or change) is less than this many seconds
#: before the moment it is identified is never remembered, in this process or across
#: processes. A stat sees a rewrite through its size, its times or (a file replaced by a new
#: one) its inode; it cannot see a rewrite in place that keeps the size within one tick of
#: the file system's clock (a few milliseconds on Linux, up to 2 s on FAT, 1 s on HFS+): the
#: second write stamps the same times. Git's "racily clean" rule closes that gap: a version
#: remembered only once its times are this old cannot be followed by a same-tick write that
#: the stat would miss. The change time (ctime) is kept too, because tools that put a file's
#: old modification time back (``touch -d``, ``cp -p``, ``rsync -t``, ``tar``) cannot set it.
#: Left unseen: a write that bypasses the file system's times (a raw block device, a network
#: file system that does not keep them, a clock set back by an administrator).
RACY_SECONDS = 2.0


class DigestMemo(Protocol):
    """Where digests of file versions are kept across processes (``release.identities``):
    ``recall`` gives the digest remembered for exactly this path and version, or None."""

    def recall(self, path: str, version: str) -> str | None: ...

    def remember(self, path: str, version: str, digest: str) -> None: ...


def _stamp(info: os.stat_result) -> str:
    return (f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:"
            f"{info.st_dev}")


def file_version(path: Path, fmt: str) -> tuple[str, bool]:
    """The version of the file or Parquet folder at ``path`` read as ``fmt``: a text naming
    the digest's format, the reading and each file's size, times (ns), inode and device (a
    folder's own entry and each part a release reads, by its relative path), and whether it
    is too recent to be remembered (:data:`RACY_SECONDS`)."""
    info = path.stat()
    stamps = [_stamp(info)]
    newest = max(info.st_mtime_ns, info.st_ctime_ns)
    if stat.S_ISDIR(info.st_mode):
        for part in parquet_parts(path):
            part_info = part.stat()
            stamps.append(f"{part.relative_to(path).as_posix()}={_stamp(part_info)}")
            newest = max(newest, part_info.st_mtime_ns, part_info.st_ctime_ns)
    version = (f"{_DIGEST_FORMAT.rstrip(bytes(1)).decode('ascii')}|reading{_READING}|{fmt}|"
               + "|".join(stamps))
    # a time in the future (another machine's clock) is as recent as can be
    racy = time.time_ns() - newest < RACY_SECONDS * 1e9
    return version, racy


def content_digest(data: object, *, memo: DigestMemo | None = None) -> str:
    """The digest of a dataset's canonical table (see the module): ``sha256:`` and 64 hex.

    ``data``: a pandas frame, an ``engine.sources.FileSource`` (CSV, CSV.gz, Parquet file or
    folder) or a path to one. CSV files are read with every column as text, so no guess of
    a column's type (which depends on all its values) enters the identity. A file's digest
    is remembered per version (:func:`file_version`) in this process and in ``memo`` when
    given, and read again only when the version changes or is too recent
    (:data:`RACY_SECONDS`).

    Raises
    ------
    OSError
        The file cannot be read.
    """
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        data = FileSource(path, "parquet" if path.is_dir() or path.name.lower().endswith(
            ".parquet") else "csv")
    connection = duckdb.connect()
    try:
        if isinstance(data, pd.DataFrame):
            frame = data.set_axis([f"c{i}" for i in range(data.shape[1])], axis=1)
            connection.register("frame_view", frame)
            return _digest_of(connection, "frame_view", {}, [str(c) for c in data.columns])
        if not isinstance(data, FileSource):
            raise TypeError(f"data must be a DataFrame or a FileSource, got "
                            f"{type(data).__name__}")
        version, racy = file_version(data.path, data.format)
        key = (str(data.path), version)
        remembered = _recall(key, racy, memo)
        if remembered is not None:
            return remembered
        try:
            if data.format == "csv":
                # Exactly the cells a release reads (engine.cells' one reading, by DuckDB's
                # reader of the engine): never a guess of a column's type, never a refusal
                # for one malformed record.
                reader, params, _ = csv_text_reader(data)
                names = csv_names(data)
                digest = _digest_of(connection, reader, params, names)
            else:
                reader = "read_parquet($path)"
                path = parquet_path(data)   # the files a release reads, nothing more
                names = [d[0] for d in connection.execute(
                    f"SELECT * FROM {reader} LIMIT 0", {"path": path}).description]
                alias = ", ".join(f'"c{i}"' for i in range(len(names)))
                digest = _digest_of(connection, f"{reader} AS t({alias})", {"path": path},
                                    names, _dictionary_columns(connection, path, names))
        except (duckdb.Error, EngineError):
            # DuckDB's message may quote a line number or a cell: say only what to do.
            raise OSError(f"{data.path.name} cannot be read to identify it: check that it is "
                          "a CSV or Parquet file the app can read") from None
        return _settled(data, key, racy, memo, digest)
    finally:
        connection.close()


def _recall(key: tuple[str, str], racy: bool, memo: DigestMemo | None) -> str | None:
    """The digest remembered for this file version, in this process or in ``memo`` (None: not
    remembered, or the version is too recent to trust: :data:`RACY_SECONDS`)."""
    if racy:
        return None
    with _lock:
        if key in _digest_cache:
            _digest_cache.move_to_end(key)
            return _digest_cache[key]
    remembered = None if memo is None else memo.recall(*key)
    if remembered is not None:
        _remember(key, remembered)
    return remembered


def _settled(data, key: tuple[str, str], racy: bool, memo: DigestMemo | None,
             digest: str) -> str:
    """``digest``, computed from the file at version ``key``: refused if the file changed
    while it was read, remembered unless the version is too recent."""
    if file_version(data.path, data.format)[0] != key[1]:
        raise OSError(f"{data.path} changed while it was being read; try again")
    if not racy:
        _remember(key, digest)
        if memo is not None:
            memo.remember(*key, digest)
    return digest


class CellsDigest:
    """A CSV file's content digest computed from the cells a release reads anyway (issue 37):
    the engine hands the table of the file's text cells it made for the plan's queries
    (``DuckDBBackend.run_many``'s readings, every column, ``csv_text_reader``'s cells) to
    :meth:`digest`, and the file is not parsed a second time to identify it. The same SQL
    (:func:`_digest_of`) over the same cells: the same digest as :func:`content_digest`.
    Made by :func:`cells_digest`; :meth:`result` is None when the engine read no cells (its
    aggregates were cached, or it reads no CSV table: Spark)."""

    def __init__(self, source, key: tuple[str, str], racy: bool,
                 memo: DigestMemo | None) -> None:
        self.source, self._key, self._racy, self._memo = source, key, racy, memo
        self._digest: str | None = None

    def digest(self, connection, cells: str) -> None:
        """Digest the relation ``cells`` (columns ``c0 …``, every column of the file, as
        ``csv_text_reader`` reads them) on DuckDB's ``connection``; a failure leaves the
        digest to :func:`content_digest` (which says what is wrong)."""
        import duckdb

        from engine.duckdb_backend import csv_names
        from engine.errors import EngineError

        try:
            self._digest = _digest_of(connection, cells, {}, csv_names(self.source))
        except (duckdb.Error, OSError, EngineError):
            self._digest = None

    def result(self) -> str | None:
        """The digest (remembered as :func:`content_digest` remembers it), or None if the
        cells were not read.

        Raises
        ------
        OSError
            The file changed while it was read.
        """
        if self._digest is None:
            return None
        return _settled(self.source, self._key, self._racy, self._memo, self._digest)


def cells_digest(source: object, *, memo: DigestMemo | None = None) -> CellsDigest | None:
    """A :class:`CellsDigest` for ``source`` when it is a CSV file whose digest is not
    remembered for its version (in this process or ``memo``), else None. A Parquet file is
    digested from the file: its scan is cheap (0.04 s CPU of the digest's 2.2 s at 10^6
    rows), and from a table of every column the digest was not cheaper where it would be
    needed (10^7 rows: 11.7 s from the file, 1.1 s to build the table and 14.7 s from it,
    spilling under the engine's 1 GB), besides that table's memory."""
    from engine.sources import FileSource

    if not (isinstance(source, FileSource) and source.format == "csv"):
        return None
    try:
        version, racy = file_version(source.path, source.format)
    except OSError:
        return None                   # content_digest says what is wrong
    key = (str(source.path), version)
    if _recall(key, racy, memo) is not None:
        return None
    return CellsDigest(source, key, racy, memo)


def _remember(key: tuple[str, str], digest: str) -> None:
    with _lock:
        _digest_cache[key] = digest
        _digest_cache.move_to_end(key)
        while len(_digest_cache) > _CACHE_SIZE:
            _digest_cache.popitem(last=False)
