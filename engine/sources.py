"""Where a dataset's rows live: an in-memory frame, a file or Parquet folder, a Spark table.

Also the server's data folder (environment variable ``EPSILON_LAB_DATA``): every CSV, CSV.gz
and Parquet file and Parquet folder in it, by name, and nothing outside it.
"""

from __future__ import annotations

import functools
import io
import json
import os
import stat
import threading
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from engine.cells import (
    NO_HEADER,
    column_names,
    copy_without_badly_quoted,
    has_header,
    header_layout,
    may_be_badly_quoted,
    read_cells,
)
from engine.errors import DataFolderError, EngineError
from engine.queries import Query, query_key

__all__ = [
    "FrameSource", "FileSource", "TableSource", "Source", "DataFile", "DATA_ENV",
    "data_folder", "list_data_folder", "open_data_file", "MISSING_MARKERS", "missing_spellings",
    "csv_layout", "csv_column_names", "csv_without_rows", "parquet_parts",
]

#: The environment variable naming the server's data folder.
DATA_ENV = "EPSILON_LAB_DATA"
#: A schema file larger than this is not read (a declaration is a few kilobytes).
MAX_SCHEMA_BYTES = 1_000_000
#: A CSV cell holding one of these texts (any letter case) is missing, on every path: an
#: upload (``dashboard.data.upload``) and a data-folder CSV (DuckDB's and Spark's readers).
MISSING_MARKERS = frozenset({"", "na", "n/a", "nan", "null", "#n/a", "<na>"})
#: Characters DuckDB's file readers treat as a glob pattern: a file name with one is refused.
GLOB_CHARACTERS = frozenset("*?[]{}")


def parquet_parts(folder: Path) -> list[Path]:
    """The Parquet files of a folder a release reads, sorted: every ``*.parquet`` below it
    except those under a name starting with ``_`` or ``.`` (``_extra.parquet``,
    ``.staging/``), which Spark's reader leaves out as hidden: DuckDB, Spark and the
    identity digest read the same files, nothing more (issue 31)."""
    root = Path(folder)
    return sorted(p for p in root.rglob("*.parquet")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts))


def missing_spellings() -> list[str]:
    """Every letter case of every missing marker ("NA", "Na", "nA", "na", …), sorted: what a
    CSV reader that compares cells exactly (DuckDB's ``nullstr``) is given."""
    import itertools

    return sorted({"".join(letters) for marker in MISSING_MARKERS for letters in
                   itertools.product(*[(ch.lower(), ch.upper()) for ch in marker])})


_SUFFIXES: tuple[tuple[str, Literal["csv", "parquet"]], ...] = (
    (".csv.gz", "csv"), (".csv", "csv"), (".tsv", "csv"), (".parquet", "parquet"),
)


def _key(identity: str, version: str, query: Query) -> str:
    return f"{identity}\x1f{version}\x1f{query_key(query)}"


@dataclass(frozen=True, eq=False)
class FrameSource:
    """A pandas frame held in memory: a built-in dataset or an upload.

    DuckDB scans it in place (never written to disk). ``key`` names this frame's content: a
    built-in's name and parameters, or an upload's id; two frames with the same key must hold
    the same rows. Left out, every FrameSource gets a fresh random key.

    ``cells``: an upload's cells as text (``LoadedDataset.cells``, the same columns in the
    same order, every record of the file): then every query whose answer a release uses
    reads them, each cell by the one rule, as a CSV file of the data folder is read
    (``_folding.reads_text``), and ``frame`` (typed) is only what the pages show about the
    columns (their kinds, profile, first rows).
    """

    frame: pd.DataFrame
    name: str = "data"
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    cells: pd.DataFrame | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.frame, pd.DataFrame):
            raise TypeError(f"frame must be a pandas DataFrame, got {type(self.frame).__name__}")
        if self.cells is not None and (
                not isinstance(self.cells, pd.DataFrame)
                or list(self.cells.columns) != list(self.frame.columns)):
            raise ValueError("cells must be a pandas DataFrame with the frame's columns, in "
                             "the same order")

    @property
    def identity(self) -> str:
        return f"frame:{self.key}"

    @property
    def version(self) -> str:
        """A frame never changes: a new upload is a new FrameSource with a new key."""
        return ""

    def cache_key(self, query: Query) -> str:
        return _key(self.identity, self.version, query)

    def describe(self) -> str:
        return f"the data {self.name!r} held in memory"


@dataclass(frozen=True)
class FileSource:
    """A CSV (optionally gzip-compressed) or Parquet file, or a folder of Parquet files.

    Scanned out of core on every query; ``version`` (modification time and size) changes when
    the file does, so cached aggregates of an older version are never reused.
    """

    path: Path
    format: Literal["csv", "parquet"]
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path).absolute())
        if self.format not in ("csv", "parquet"):
            raise ValueError(f"format must be 'csv' or 'parquet', got {self.format!r}")
        if not self.name:
            object.__setattr__(self, "name", self.path.name)
        if GLOB_CHARACTERS & set(str(self.path)):
            raise EngineError(f"The path {str(self.path)!r} contains one of "
                              f"{' '.join(sorted(GLOB_CHARACTERS))}, which file readers take "
                              "for a pattern: rename the file or folder without them.")

    @property
    def is_folder(self) -> bool:
        return self.path.is_dir()

    @property
    def identity(self) -> str:
        return f"file:{self.path}"

    @property
    def version(self) -> str:
        """Modification time and size (for a folder: of its newest file, total size, count)."""
        try:
            info = self.path.stat()
            if not stat.S_ISDIR(info.st_mode):
                return f"{info.st_mtime_ns}:{info.st_size}"
            files = [p.stat() for p in parquet_parts(self.path)]
        except OSError as exc:
            raise EngineError(
                f"{self.describe()} cannot be read any more ({exc.strerror or exc}). It may "
                "have been moved or removed: choose the dataset again from the list."
            ) from None
        newest = max((f.st_mtime_ns for f in files), default=info.st_mtime_ns)
        return f"{newest}:{sum(f.st_size for f in files)}:{len(files)}"

    def cache_key(self, query: Query) -> str:
        return _key(self.identity, self.version, query)

    def describe(self) -> str:
        kind = "Parquet folder" if self.format == "parquet" and self.is_folder else (
            "Parquet file" if self.format == "parquet" else "CSV file")
        return f"the {kind} {self.name!r}"


@dataclass(frozen=True)
class TableSource:
    """A table of the Spark catalogue, by name (Spark only).

    Spark says nothing cheap about a table's changes, so ``version`` is what the caller gives
    (for example a date it was loaded): change it to read the table afresh.
    """

    table: str
    version: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table.strip():
            raise ValueError("table must be a non-empty table name")

    @property
    def name(self) -> str:
        return self.table

    @property
    def identity(self) -> str:
        return f"table:{self.table}"

    def cache_key(self, query: Query) -> str:
        return _key(self.identity, self.version, query)

    def describe(self) -> str:
        return f"the Spark table {self.table!r}"


Source = FrameSource | FileSource | TableSource


# --------------------------------------------------------------------------------------------
# The server's data folder


@dataclass(frozen=True)
class DataFile:
    """One dataset found in the data folder.

    ``problem`` says why it cannot be opened (None when it can); ``schema`` is the raw JSON of
    ``NAME.schema.json`` beside it (None when there is none), ``schema_problem`` why a schema
    file present could not be read.
    """

    name: str
    path: Path
    format: Literal["csv", "parquet"]
    folder: bool
    size: int
    problem: str | None = None
    schema: dict | None = None
    schema_problem: str | None = None

    def source(self) -> FileSource:
        if self.problem is not None:
            raise DataFolderError(self.problem)
        return FileSource(self.path, self.format, self.name)


def data_folder() -> Path | None:
    """The folder named by ``EPSILON_LAB_DATA``, or None when it is not set."""
    value = os.environ.get(DATA_ENV, "").strip()
    return Path(value) if value else None


def _format_of(name: str) -> Literal["csv", "parquet"] | None:
    lower = name.lower()
    for suffix, kind in _SUFFIXES:
        if lower.endswith(suffix) and len(lower) > len(suffix):
            return kind
    return None


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _read_head(path: Path) -> None:
    """Open and read a few bytes: fails as reading the data would (permissions, I/O)."""
    with open(path, "rb") as stream:
        stream.read(4)


def _unreadable(name: str, exc: OSError) -> str:
    return (f"{name!r} in the data folder cannot be read ({exc.strerror or exc}). Ask the "
            "server's administrator to make it readable by the app, or remove it.")


def _check_file(name: str, path: Path, root: Path) -> str | None:
    """Why this file (or Parquet folder) cannot be offered, or None."""
    if GLOB_CHARACTERS & set(name):
        return (f"{name!r}: a file name with any of {' '.join(sorted(GLOB_CHARACTERS))} cannot "
                "be read (file readers take them for a pattern). Rename the file.")
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # a dangling link, a loop
        return (f"{name!r} in the data folder points to nothing that exists "
                f"({getattr(exc, 'strerror', None) or exc}). Fix or remove the link.")
    if not _inside(real, root):
        return (f"{name!r} links to a place outside the data folder, and only the data folder "
                "is served. Copy the file into the folder instead of linking to it.")
    try:
        info = real.stat()
        if stat.S_ISDIR(info.st_mode):
            parts = parquet_parts(real)
            if not parts:
                return f"The folder {name!r} holds no .parquet files."
            for part in parts:
                if not _inside(part.resolve(), root):
                    return (f"The folder {name!r} holds {part.name!r}, which links outside "
                            "the data folder: only the data folder is served.")
            _read_head(parts[0])
        elif not stat.S_ISREG(info.st_mode):
            return f"{name!r} in the data folder is not a regular file."
        else:
            _read_head(real)
    except OSError as exc:
        return _unreadable(name, exc)
    return None


def _schema_beside(name: str, fmt: str, root: Path) -> tuple[dict | None, str | None]:
    stem = name
    for suffix, _ in _SUFFIXES:
        if name.lower().endswith(suffix):
            stem = name[: -len(suffix)]
            break
    for candidate in (f"{stem}.schema.json", f"{name}.schema.json"):
        path = root / candidate
        if not path.exists() and not path.is_symlink():
            continue
        try:
            real = path.resolve(strict=True)
            if not _inside(real, root):
                return None, (f"{candidate!r} links outside the data folder and was not read.")
            if real.stat().st_size > MAX_SCHEMA_BYTES:
                return None, f"{candidate!r} is larger than {MAX_SCHEMA_BYTES:,} bytes."
            raw = json.loads(real.read_text(encoding="utf-8"))
        except OSError as exc:
            return None, f"{candidate!r} cannot be read ({exc.strerror or exc})."
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return None, f"{candidate!r} is not valid JSON ({exc})."
        if not isinstance(raw, dict):
            return None, f"{candidate!r} must hold a JSON object, got {type(raw).__name__}."
        return raw, None
    return None, None


def _root(folder: str | os.PathLike | None) -> Path | None:
    folder = data_folder() if folder is None else Path(folder)
    if folder is None:
        return None
    try:
        root = folder.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise DataFolderError(
            f"The data folder {str(folder)!r} ({DATA_ENV}) does not exist or cannot be reached "
            f"({getattr(exc, 'strerror', None) or exc}). Set {DATA_ENV} to an existing folder."
        ) from None
    if not root.is_dir():
        raise DataFolderError(f"{DATA_ENV} names {str(folder)!r}, which is not a folder.")
    if GLOB_CHARACTERS & set(str(root)):
        raise DataFolderError(f"The data folder's path {str(root)!r} contains one of "
                              f"{' '.join(sorted(GLOB_CHARACTERS))}: move or rename it.")
    return root


def list_data_folder(folder: str | os.PathLike | None = None) -> list[DataFile]:
    """Every CSV, CSV.gz, TSV and Parquet file and Parquet folder directly in the data folder.

    ``folder`` defaults to ``EPSILON_LAB_DATA`` (an empty list when that is not set). Sorted by
    name; hidden names (starting with a dot) and ``*.schema.json`` files are not datasets. An
    entry that cannot be opened — a link out of the folder, a dangling link, an unreadable
    file, a folder without Parquet files — is listed with its ``problem``.

    Raises
    ------
    DataFolderError
        The folder does not exist, is not a folder, or cannot be listed.
    """
    root = _root(folder)
    if root is None:
        return []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        raise DataFolderError(f"The data folder {str(root)!r} cannot be listed "
                              f"({exc.strerror or exc}). Make it readable by the app.") from None
    found: list[DataFile] = []
    for entry in entries:
        name = entry.name
        if name.startswith(".") or name.lower().endswith(".schema.json"):
            continue
        path = root / name
        try:
            is_dir = path.is_dir()
        except OSError:
            is_dir = False
        fmt = "parquet" if is_dir else _format_of(name)
        if fmt is None:
            continue
        problem = _check_file(name, path, root)
        try:
            size = path.stat().st_size if not is_dir else sum(
                p.stat().st_size for p in parquet_parts(path))
        except OSError:
            size = 0
        schema, schema_problem = _schema_beside(name, fmt, root)
        found.append(DataFile(name, path, fmt, is_dir, size, problem, schema, schema_problem))
    return found


def open_data_file(name: str, folder: str | os.PathLike | None = None) -> FileSource:
    """The source of the data-folder entry called ``name`` (as listed, nothing else).

    Raises
    ------
    DataFolderError
        ``name`` is not a plain name listed in the folder (``..``, a path, an absolute name),
        or the entry cannot be opened (the message says why and what to do).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if (not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name
            or os.path.isabs(name)):
        raise DataFolderError(f"{name!r} is not a file name in the data folder: choose a "
                              "dataset from the list.")
    root = _root(folder)
    if root is None:
        raise DataFolderError(f"No data folder is configured: set {DATA_ENV} to a folder of "
                              "CSV or Parquet files.")
    for entry in list_data_folder(root):
        if entry.name == name:
            return entry.source()
    raise DataFolderError(f"There is no dataset {name!r} in the data folder (it may have been "
                          "removed): choose one from the list.")


# --------------------------------------------------------------------------------------------
# How a CSV file is split (engine.cells: the one reading of every cell)

#: The first bytes of a CSV read to find its header and delimiter.
CSV_HEAD_BYTES = 1 << 20


def csv_layout(source: FileSource) -> tuple[list[str], str, int]:
    """(the header's names, the delimiter, the blank lines before the header) of a CSV file,
    by ``engine.cells.header_layout`` from its first megabyte (decompressed): what DuckDB and
    Spark are told, so that they split the file as ``engine.cells.read_cells`` does. Cached
    per file version.

    Raises
    ------
    EngineError
        The file cannot be read (the message names the file, never its content).
    """
    names, delimiter, skip = _csv_layout(str(source.path), source.version, source.describe())
    return list(names), delimiter, skip


def _csv_head(path: str, size: int) -> bytes:
    """The first ``size`` bytes of a CSV file's text, decompressed when it is gzip.

    Raises
    ------
    OSError, EOFError
        The file cannot be read (or its gzip stream ends early)."""
    import gzip

    with open(path, "rb") as stream:
        magic = stream.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rb") as stream:
        return stream.read(size)


def _unreadable_csv(exc: BaseException, described: str) -> EngineError:
    """The refusal of a CSV file that cannot be read. A damaged gzip stream (a broken deflate
    block, a bad checksum, cut short) is told as such, quoting nothing of the error: zlib's and
    gzip's texts hold checksums and other values of the data; any other error is the
    system's (a file moved or removed), its text naming no data."""
    import gzip

    if isinstance(exc, (zlib.error, gzip.BadGzipFile, EOFError)):
        return EngineError(f"{described} is not a readable gzip file: it is damaged or cut short."
                           " Compress the CSV again (gzip) and replace the file, or choose "
                           "another dataset.")
    return EngineError(f"{described} cannot be read ({getattr(exc, 'strerror', None) or exc})"
                       ". It may have been changed, moved or removed: choose the dataset "
                       "again.")


@functools.lru_cache(maxsize=256)
def _csv_layout(path: str, version: str, described: str) -> tuple[tuple[str, ...], str, int]:
    try:
        head = _csv_head(path, CSV_HEAD_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise _unreadable_csv(exc, described) from None
    names, delimiter, skip = header_layout(head)
    if not has_header(names, head, complete=len(head) < CSV_HEAD_BYTES):
        # no header at all: DuckDB's parser text ("syntax error at or near ...") was the
        # message; the file's bytes are public here only as "none", never quoted
        raise EngineError(f"{described[:1].upper()}{described[1:]} {NO_HEADER} (e.g. "
                          "age,sex,income), then one row per person: write them into the file "
                          "(save it again from a spreadsheet as CSV), or choose another file.")
    return tuple(names), delimiter, skip


def csv_read_path(source: FileSource) -> str:
    """The file DuckDB and Spark read for a CSV: the file itself, or, when it holds records
    with text after a closing quote (``engine.cells.badly_quoted``: ``"ab"cd``), a copy of it
    without them (``engine.cells.without_badly_quoted``), so that DuckDB and Spark drop the
    records ``read_cells`` drops and read every other one as before. Neither can drop them
    itself: DuckDB's lenient reader makes ``abc`` of ``"ab"cd`` (and of some, with a doubled
    quote, one field running to the end of the file), and its strict mode refuses a whole
    file with mixed line breaks and drops records with extra fields; Spark reads such a field
    as written, quotes and all, which is also the text of some well-formed fields, and its
    RAISE_ERROR option fails the whole file.

    Cached per file version, at most one copy per file (:data:`READ_PATHS` files): a new
    version's copy replaces the previous one, which is removed, and so is the copy of a file
    evicted from the cache. The file is first searched for a quote byte, in chunks: none,
    and it is read itself, unparsed; otherwise it is read in C from the line of its first
    quote on, streamed (its memory a record: ``engine.cells.may_be_badly_quoted``); only a
    file that reading refuses (such records, or a quote left open) is copied without them,
    streamed block by block (``engine.cells.copy_without_badly_quoted``: a block read in C
    written as it is, one it refuses split in Python; its memory a block and a record), to
    a private temporary folder removed when the process ends (the copy removed at once when
    no record was dropped)."""
    _, delimiter, _ = csv_layout(source)   # no header: raised there
    path, key = str(source.path), (source.version, delimiter)
    with _READ_LOCK:
        known = _READ_PATHS.get(path)
        if known is not None and known[0] == key:
            _READ_PATHS.move_to_end(path)
            return known[1]
    read = _read_path(path, source.describe(), delimiter)
    with _READ_LOCK:
        known = _READ_PATHS.get(path)
        if known is not None and known[0] == key:
            # this version read twice at once: the first reading kept (it may be in use)
            stale, read = [read], known[1]
        else:
            # the previous version's copy goes
            stale = [known[1]] if known is not None else []
        _READ_PATHS[path] = (key, read)
        _READ_PATHS.move_to_end(path)
        while len(_READ_PATHS) > READ_PATHS:
            stale.append(_READ_PATHS.popitem(last=False)[1][1])
    for copy in stale:
        if copy != path and copy != read and os.path.dirname(copy) == _copies():
            Path(copy).unlink(missing_ok=True)
    return read


#: Files whose reading ``csv_read_path`` keeps (the least recently read forgotten first).
READ_PATHS = 64
# path -> ((version, delimiter), the path read): the file itself or its one copy
_READ_PATHS: OrderedDict[str, tuple[tuple[str, str], str]] = OrderedDict()
_READ_LOCK = threading.Lock()


def _read_path(path: str, described: str, delimiter: str) -> str:
    import gzip

    copy = Path(_copies()) / f"{uuid.uuid4().hex}.csv"
    try:
        with open(path, "rb") as stream:
            magic = stream.read(2)
        opener = gzip.open if magic == b"\x1f\x8b" else open
        if not may_be_badly_quoted(path, delimiter, opener):
            return path
        # streamed, block by block (its memory a block and a record), as decode_bytes reads
        # it: a byte-order mark dropped, bytes that are not UTF-8 kept as they were
        with (opener(path, "rb") as stream,
              io.TextIOWrapper(stream, encoding="utf-8-sig", errors="surrogateescape",
                               newline="") as lines,
              open(copy, "w", encoding="utf-8", errors="surrogateescape", newline="") as out):
            dropped = copy_without_badly_quoted(lines, out, delimiter)
    except (OSError, EOFError, zlib.error) as exc:
        copy.unlink(missing_ok=True)
        raise _unreadable_csv(exc, described) from None
    if not dropped:
        copy.unlink()
        return path
    return str(copy)


@functools.cache
def _copies() -> str:
    """A private temporary folder for the copies ``csv_read_path`` writes, removed at exit."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="epsilon-lab-csv-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def csv_without_rows(source: FileSource) -> bool:
    """Whether a CSV file holds a header row and no data row: told the data's owner on the
    Data page (every count is 0), never refusing a release (an empty dataset is a dataset).
    Read by ``engine.cells.read_cells`` when the whole file (decompressed) is within its
    first megabyte; a longer file is taken to hold rows (no scan of it for a note). Cached
    per file version (the Data page asks on every run)."""
    csv_layout(source)   # no header: raised there
    return _without_rows(str(source.path), source.version)


@functools.lru_cache(maxsize=256)
def _without_rows(path: str, version: str) -> bool:
    try:
        head = _csv_head(path, CSV_HEAD_BYTES + 1)
    except (OSError, EOFError, zlib.error):
        return False     # the reading itself says what is wrong
    if len(head) > CSV_HEAD_BYTES:
        return False
    return len(read_cells(head)[1]) == 0


def csv_column_names(header: Sequence[str]) -> list[str]:
    """A CSV header's column names as the pages show them (``engine.cells.column_names``, the
    code the exported programs embed)."""
    return column_names(header)
