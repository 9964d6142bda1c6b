"""The CSV upload parser: a user's file (CSV, TSV, .csv.gz) read into a LoadedDataset with
plain-language warnings, or a DatasetError saying what is wrong and how to fix it.

Pure pandas; the file stays in memory (never written to disk).
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import re
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dashboard.data.model import MAX_CATEGORIES, DatasetError, LoadedDataset
from dpcore.checks import check_int
from engine import cells as one_reading
from engine.cells import (
    NUMERIC_SHARE,  # noqa: F401 — the rule's share, for dashboard.datasets
    cell_numbers,
    column_type,
    records_badly_quoted,
    records_too_long,
    sniff_delimiter,
    strip_text,
)
from engine.sources import MISSING_MARKERS as ENGINE_MISSING_MARKERS

#: Largest upload in megabytes (MiB). ``.streamlit/config.toml`` sets server.maxUploadSize to
#: this value; :func:`load_upload` checks it again.
MAX_UPLOAD_MB: int = 50
#: An upload keeps at most this many columns (the first ones) ...
MAX_UPLOAD_COLUMNS = 500
#: ... and at most this many data rows (the first ones).
MAX_UPLOAD_ROWS = 1_000_000
#: A gzip upload may decompress to at most this many times the upload limit (gzip bombs).
GZIP_EXPANSION_LIMIT = 4
#: Column names longer than this are cut.
MAX_NAME_LENGTH = 200
#: Cell texts read as missing (compared case-insensitively, after trimming spaces): the
#: engine's, which reads a data-folder CSV with the same markers.
MISSING_MARKERS = ENGINE_MISSING_MARKERS


# --------------------------------------------------------------------------------------------
# Uploads

# Signatures of common non-CSV files: (magic bytes, what it is, how to fix).
_SAVE_AS_CSV = ("open it in Excel or LibreOffice, use Save As → 'CSV UTF-8 (comma "
                "delimited)', then upload the .csv file.")
_SIGNATURES: tuple[tuple[bytes, str, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image", "Upload the table as a .csv file instead."),
    (b"\xff\xd8\xff", "a JPEG image", "Upload the table as a .csv file instead."),
    (b"GIF87a", "a GIF image", "Upload the table as a .csv file instead."),
    (b"GIF89a", "a GIF image", "Upload the table as a .csv file instead."),
    (b"%PDF-", "a PDF document", "Export the table from its source as a .csv file."),
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx or OpenDocument file is one too)",
     "Unzip it and upload the .csv inside; if it is a spreadsheet, " + _SAVE_AS_CSV),
    (b"PK\x05\x06", "an empty ZIP archive", "Upload a .csv file."),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Microsoft Office file (.xls or .doc)",
     "To use a spreadsheet, " + _SAVE_AS_CSV),
    (b"PAR1\x15", "a Parquet file", "Convert it to CSV first, e.g. pandas.read_parquet(...)"
     ".to_csv(...)."),
    (b"SQLite format 3\x00", "an SQLite database", "Export the table as CSV first."),
    (b"\x1f\x8b", "a gzip file inside a gzip file", "Compress the CSV only once."),
    *((b"BZh%d1AY&SY" % level, "a bzip2 archive",
       "Decompress it and upload the .csv (or gzip it: .csv.gz).") for level in range(1, 10)),
    (b"\xfd7zXZ\x00", "an xz archive", "Decompress it and upload the .csv (or .csv.gz)."),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "Extract it and upload the .csv (or .csv.gz)."),
    (b"Rar!\x1a\x07", "a RAR archive", "Extract it and upload the .csv (or .csv.gz)."),
)
_BOMS = (  # UTF-32 before UTF-16: the UTF-32-LE mark starts with the UTF-16-LE one.
    (b"\xff\xfe\x00\x00", "utf-32", "UTF-32"),
    (b"\x00\x00\xfe\xff", "utf-32", "UTF-32"),
    (b"\xff\xfe", "utf-16", "UTF-16"),
    (b"\xfe\xff", "utf-16", "UTF-16"),
)
_DELIMITERS = (",", "\t", ";", "|")
_SAMPLE_CHARS = 64 * 1024
# Control characters other than tab, newline and carriage return.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_NAME_BREAKS = re.compile("[\t\n\r\u2028\u2029]+")
# HTML tags or entities, Markdown emphasis/links/headings/code, Streamlit colour directives:
# none is interpreted (the UI renders names as plain text), but say so.
_MARKUP = re.compile(r"<[^>]*>|&#?\w+;|\*\*|__\w+__|\[[^\]]*\]\([^)]*\)|^\s*#|`|:\w+\[")
_FORMULA_START = ("=", "+", "-", "@")
#: A number written with thousands separators (1,234; 1 234; 1.234,5) or a decimal comma (1,5):
#: no path reads it as a number (``engine.cells`` rule 4), and the upload says so.
_SEPARATED_NUMBER = re.compile(
    r"[+-]?\d{1,3}(?P<sep>[,. \u00a0\u202f'])\d{3}(?:(?P=sep)\d{3})*(?:[.,]\d+)?"
    r"|[+-]?\d+,\d+")
_EXCEL_SEP_LINE = re.compile(r"\A[ \t]*sep=(.)[ \t]*\n", re.IGNORECASE)
#: The same line in the text as written (its line break not yet made "\n").
_EXCEL_SEP_WRITTEN = re.compile(r"\A[ \t]*sep=(.)[ \t]*(?:\r\n|\r|\n)", re.IGNORECASE)


def load_upload(data: bytes, filename: str, *,
                max_bytes: int = MAX_UPLOAD_MB * 2**20) -> LoadedDataset:
    """Validate and load an uploaded CSV, TSV or gzip-compressed CSV, in memory only.

    The bytes are never written to disk or logged. The delimiter (comma, semicolon, tab or pipe)
    is read from the header line alone (``engine.cells.sniff_delimiter``); text is read as UTF-8
    (with or without a byte-order mark), or as UTF-16 or UTF-32 when a byte-order mark says so;
    a row holding bytes that are not UTF-8 is left out (the malformed-record rule of
    ``engine.cells``, which every reader follows). The first row must hold the column names.

    Every cell is read on its own by the one rule of every path (``engine.cells``), so the
    frame the pages show holds what every query reads (a page's true answers and a release
    read ``cells``, the file's cells as text, themselves).

    Odd content loads with a warning saying what was changed (never naming a row or a cell):
    ragged rows (short rows padded with missing values, the extra fields of long rows dropped),
    infinite numbers (numbers, which bounds clamp), duplicate or empty column names (renamed),
    markup-looking names (kept as text), formula-looking cells (kept as text), more than
    ``MAX_UPLOAD_COLUMNS`` columns or ``MAX_UPLOAD_ROWS`` rows (the rest dropped), empty
    columns (dropped) and empty rows (kept: a count counts them), numbers written with
    thousands separators or a decimal comma (not numbers, on any path), a few non-numbers in a
    numeric column (missing; a column is numeric when at least 95 % of its cells are numbers)
    and text columns with more than ``MAX_CATEGORIES`` distinct values (kept, but not offered
    as categorical columns).

    Parameters
    ----------
    data : bytes
        The file's content.
    filename : str
        The file's name as uploaded (used in messages, and a ``.tsv`` name favours tabs).
    max_bytes : int
        Largest accepted upload; a gzip file may decompress to ``GZIP_EXPANSION_LIMIT`` times
        this.

    Returns
    -------
    LoadedDataset
        ``domains`` is empty: bounds for an upload must be declared by the user.

    Raises
    ------
    DatasetError
        The file is empty, too big, binary or not a table, cannot be decoded, has no header
        row, no data rows or no usable columns. The message says how to fix it.
    TypeError
        ``data`` is not bytes or ``filename`` not a string.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    if not isinstance(filename, str):
        raise TypeError(f"filename must be a string, got {type(filename).__name__}")
    max_bytes = check_int("max_bytes", max_bytes, minimum=1)
    data = bytes(data)
    display_name = _plain_name(filename) or "upload"
    warnings: list[str] = []

    if len(data) > max_bytes:
        raise DatasetError(
            f"The file is too big: {_megabytes(len(data))}, and the limit is "
            f"{_megabytes(max_bytes)}. Upload a sample of the rows, drop columns you do not "
            "need, or compress it as .csv.gz."
        )
    if not data:
        raise DatasetError("The file is empty (0 bytes). Upload a CSV file whose first row "
                           "holds the column names, followed by one row per person.")
    if data.startswith(b"\x1f\x8b"):
        data = _gunzip(data, GZIP_EXPANSION_LIMIT * max_bytes)
    _reject_known_formats(data)
    text = _decode(data, warnings)
    if text.startswith("\ufeff"):       # a UTF-8 byte-order mark is dropped, as everywhere
        text = text[1:]
    # as written (a CRLF inside quotes 2 characters): what the long-record rule counts
    written = text
    text = _normalise_newlines(text)
    _reject_non_text(text)

    delimiter = None
    hint = _EXCEL_SEP_LINE.match(text)
    if hint and hint.group(1) in _DELIMITERS:  # Excel's "sep=;" first line names the delimiter
        delimiter = hint.group(1)
        text = text[hint.end():]
        written = written[_EXCEL_SEP_WRITTEN.match(written).end():]
    if not text.strip():
        raise DatasetError("The file holds only blank lines or spaces. Upload a CSV file whose "
                           "first row holds the column names, followed by the data rows.")
    _reject_other_text_formats(text)
    if delimiter is None:
        delimiter = sniff_delimiter(text)   # from the header alone, as every reader (engine.cells)

    scan = _scan_records(text, delimiter)
    frame, cells = _build_frame(text, delimiter, scan, warnings, written)
    return LoadedDataset(name=display_name, frame=frame, domains={}, warnings=warnings,
                         source=f"Uploaded file {display_name}", cells=cells)


def _megabytes(n: int) -> str:
    return f"{n / 2**20:,.1f} MB" if n >= 2**20 // 10 else f"{n:,} bytes"


def _plain_name(text: str, limit: int = MAX_NAME_LENGTH) -> str:
    text = _NAME_BREAKS.sub(" ", text)
    text = _CONTROL.sub("", text).strip()
    return text[:limit]


def _gunzip(data: bytes, limit: int) -> bytes:
    """Decompress, reading at most ``limit + 1`` bytes so a gzip bomb cannot fill memory."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            out = stream.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetError(
            f"The file starts like a gzip file but cannot be decompressed ({exc}). It may be "
            "damaged or cut short: compress the CSV again, or upload it uncompressed."
        ) from None
    if len(out) > limit:
        raise DatasetError(
            f"The gzip file decompresses to more than {_megabytes(limit)} (the limit is "
            f"{GZIP_EXPANSION_LIMIT} × the upload limit). Upload a smaller sample of the rows."
        )
    if not out:
        raise DatasetError("The gzip file is empty once decompressed. Compress a CSV file "
                           "that has a header row and data rows.")
    return out


def _reject_known_formats(data: bytes) -> None:
    for magic, what, how in _SIGNATURES:
        if data.startswith(magic):
            raise DatasetError(f"This file is {what}, not a CSV table. {how}")


def _decode(data: bytes, warnings: list[str]) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return data[3:].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"The file starts with a UTF-8 marker but is not valid UTF-8 (byte "
                f"{exc.start + 3:,}). Save it again as 'CSV UTF-8' and upload it again."
            ) from None
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError:
                raise DatasetError(
                    f"The file starts with a {label} marker but cannot be decoded as {label}. "
                    "Save it as 'CSV UTF-8' and upload it again."
                ) from None
            warnings.append(f"The file is encoded as {label}; it was read as such. UTF-8 is "
                            "the safer choice for CSV files.")
            return text.removeprefix("\ufeff")
    if b"\x00" in data:
        raise DatasetError(
            "The file contains NUL bytes, so it is binary, not a text CSV file. If it is text "
            "saved as UTF-16 without a byte-order mark, save it as 'CSV UTF-8' instead; "
            "otherwise export the table as CSV."
        )
    # Bytes that are not UTF-8 become U+FFFD, and a record holding one is left out
    # (_build_frame): the one reading of every path (engine.cells). Reading the whole file as
    # Latin-1 instead would let one person's stray byte change how every other row reads.
    return data.decode("utf-8", errors="replace")


def _normalise_newlines(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _reject_non_text(text: str) -> None:
    sample = text[:_SAMPLE_CHARS]
    controls = len(_CONTROL.findall(sample))
    if controls > 8 and controls > 0.01 * len(sample):  # a few strays are fine
        raise DatasetError(
            "The file does not look like text: it is full of control characters. Upload a "
            "CSV (comma-separated text) file; spreadsheets and databases must be exported to "
            "CSV first."
        )


def _reject_other_text_formats(text: str) -> None:
    head = text[:300].lstrip().lower()
    kinds = (
        (("<?xml",), "an XML document", "Export the table as CSV."),
        (("<!doctype html", "<html"), "a web page (HTML)",
         "Download the table itself as CSV, not the page."),
        (("{\\rtf",), "a rich-text (RTF) document", "Save the table as CSV."),
        (("{", "[{", "[["), "JSON", "Convert it to CSV first, e.g. with "
         "pandas.read_json(...).to_csv(...)."),
    )
    for starts, what, how in kinds:
        if head.startswith(starts):
            raise DatasetError(f"This file looks like {what}, not a CSV table. {how}")


@dataclass
class _Scan:
    lengths: NDArray[np.int64]   # fields per record (0 = blank line), every record to read
    header_index: int            # the first non-blank record holds the column names
    truncated: bool              # records after the first MAX_UPLOAD_ROWS data rows exist


def _scan_records(text: str, delimiter: str) -> _Scan:
    """Fields per record, up to the header and MAX_UPLOAD_ROWS non-blank data records.

    pandas pads short rows silently, so the ragged-row report needs this pass of its own; it
    runs in C (map over the csv reader), without a Python loop over records.
    """
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar='"', strict=False)
    wanted = MAX_UPLOAD_ROWS + 2  # the header, the rows we keep, and one to see if more exist
    chunks: list[NDArray[np.int64]] = []
    filled = 0
    try:
        while filled < wanted:  # blank lines do not count towards the cap, so ask again
            ask = wanted - filled
            chunk = np.fromiter(map(len, itertools.islice(reader, ask)), dtype=np.int64)
            chunks.append(chunk)
            filled += int(np.count_nonzero(chunk))
            if chunk.size < ask:
                break
    except csv.Error:
        raise DatasetError(
            "Could not split the file into cells. This usually means a quote (\") that opens "
            "a cell is never closed. Check the quotes, or save the file again from a "
            "spreadsheet as CSV."
        ) from None
    lengths = np.concatenate(chunks)
    filled_records = np.flatnonzero(lengths)
    if filled_records.size == 0:
        raise DatasetError("The file holds only blank lines. Upload a CSV file whose first row "
                           "holds the column names, followed by the data rows.")
    truncated = filled_records.size > MAX_UPLOAD_ROWS + 1
    if truncated:
        lengths = lengths[: filled_records[MAX_UPLOAD_ROWS + 1]]
    return _Scan(lengths, int(filled_records[0]), truncated)


_HEADER_NUMBER = re.compile(r"[+-]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _is_number(text: str) -> bool:
    # Not float(): "nan", "inf" and "infinity" are fine column names.
    return _HEADER_NUMBER.fullmatch(text) is not None


def _build_frame(text: str, delimiter: str, scan: _Scan, warnings: list[str], written: str
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    lengths, top = scan.lengths, scan.header_index
    data_records = np.flatnonzero(lengths[top + 1:]) + top + 1  # blank lines skipped silently
    data_lengths = lengths[data_records]

    # The header fixes the number of columns. Fields past it that are all empty (a trailing
    # delimiter) do no harm; if most rows carry text past it (an unnamed index column, say),
    # the extra columns get generated names instead.
    header_len = ncols = int(lengths[top])
    long = data_lengths > ncols
    if long.any():
        long[long] = _extra_fields_filled(text, delimiter, ncols, data_records[long])
    if long.sum() > data_records.size / 2:
        ncols = int(np.bincount(data_lengths[long]).argmax())
        unnamed = (f"the unnamed columns were named 'column {header_len + 1}' to "
                   f"'column {ncols}'" if ncols > header_len + 1 else
                   f"the unnamed last column was named 'column {ncols}'")
        warnings.append(f"The header names {header_len} columns but most rows have {ncols} "
                        f"fields; {unnamed}.")
        long = data_lengths > ncols
        if long.any():
            long[long] = _extra_fields_filled(text, delimiter, ncols, data_records[long])
    kept_cols = min(ncols, MAX_UPLOAD_COLUMNS)

    cells = _read_cells(text, delimiter, ncols, kept_cols, scan, warnings)
    header = [str(cell).strip() for cell in cells[top]]
    named = [cell for cell in header[:header_len] if cell]
    if not named or all(_is_number(cell) for cell in named):
        what = "is empty" if not named else "holds only numbers"
        raise DatasetError(
            f"The first row {what}, so the file seems to have no header row. Add a first row "
            "with a name for each column (e.g. age,sex,income) and upload the file again."
        )
    if data_records.size == 0:
        raise DatasetError("The file has a header row but no data rows. Add one row per "
                           "person below the column names and upload it again.")
    if ncols > kept_cols:
        warnings.append(f"The file has {ncols:,} columns; only the first {kept_cols} were "
                        f"loaded ({ncols - kept_cols:,} dropped). Upload only the columns you "
                        "need.")
    if scan.truncated:
        warnings.append(f"The file has more than {MAX_UPLOAD_ROWS:,} rows; only the first "
                        f"{MAX_UPLOAD_ROWS:,} were loaded. Upload a sample to use all of it.")

    rows = data_records + 1  # row numbers as a spreadsheet shows them (header = row 1)
    # The malformed-record rule (engine.cells): no message names a row or a cell.
    short = data_lengths < ncols
    if short.any():
        n = int(short.sum())
        warnings.append(
            f"{_count(n, 'row', 'has/have')} fewer fields than the {ncols} columns; the "
            "missing cells were left empty.")
    if long.any():
        n = int(long.sum())
        warnings.append(
            f"{_count(n, 'row', 'has/have')} more fields than the {ncols} columns; the fields "
            "past the last column were dropped. Check for unquoted delimiters.")
    undecodable = _holds_replacement(cells[data_records])
    if undecodable.any():
        n = int(undecodable.sum())
        if undecodable.all():
            raise DatasetError(
                "No row of the file is valid UTF-8 text (the encoding every reader of the "
                "data uses). Save the file as 'CSV UTF-8' and upload it again.")
        warnings.append(
            f"{_count(n, 'row', 'holds/hold')} bytes that are not UTF-8 text and "
            f"{_verb(n, 'was/were')} left out, as every release reads the file. Save the file "
            "as 'CSV UTF-8' to keep them.")
    # a record whose kept fields hold more than MAX_RECORD_CHARS characters is dropped, as
    # every release reads the file (engine.cells, rule 2): the record's own text decides,
    # counted as the rule counts it (the header's width, not the columns loaded here; the
    # text as written, a CRLF inside quotes 2 characters), so that the upload's release and
    # a program run on the same file drop the same records
    counted = records_too_long(written, delimiter, data_records.size)
    overlong = np.zeros(data_records.size, dtype=bool)
    overlong[:counted.size] = counted[:data_records.size]
    overlong &= ~undecodable
    if overlong.any():
        n, limit = int(overlong.sum()), int(one_reading.MAX_RECORD_CHARS)
        if (undecodable | overlong).all():
            raise DatasetError(
                f"Every row of the file holds more than {limit:,} characters (or bytes that "
                "are not UTF-8), and every release leaves such rows out. Shorten the long "
                "cells (or leave their columns out of the file) and upload it again.")
        warnings.append(
            f"{_count(n, 'row', 'holds/hold')} more than {limit:,} characters and "
            f"{_verb(n, 'was/were')} left out, as every release reads the file. Shorten the "
            "long cells (or leave their columns out) to keep them.")
    # a record with text after a closing quote ("ab"cd) is dropped, as every release reads
    # the file (engine.cells, rule 2): each reader makes another text of it
    misquoted = records_badly_quoted(written, delimiter, data_records.size)
    misquoted &= ~(undecodable | overlong)
    if misquoted.any():
        n = int(misquoted.sum())
        if (undecodable | overlong | misquoted).all():
            raise DatasetError(
                "Every row of the file has a cell with text after its closing quote (such as "
                '"ab"cd), and every release leaves such rows out. Quote each whole cell '
                '("abcd") and upload the file again.')
        warnings.append(
            f"{_count(n, 'row', 'has/have')} a cell with text after its closing quote (such "
            f"as \"ab\"cd) and {_verb(n, 'was/were')} left out, as every release reads the "
            'file. Quote the whole cell ("abcd") to keep them.')
    keep = ~(undecodable | overlong | misquoted)
    generated = [f"column {k}" for k in range(header_len + 1, ncols + 1)]
    names = _column_names((header[:header_len] + generated)[:kept_cols], warnings)
    return _convert_columns(cells[data_records[keep]], names, delimiter, rows[keep], warnings)


def _holds_replacement(cells: NDArray[np.object_]) -> NDArray[np.bool_]:
    """Which rows hold U+FFFD (a byte that was not UTF-8): one column at a time."""
    out = np.zeros(cells.shape[0], dtype=bool)
    for j in range(cells.shape[1]):
        out |= pd.Series(cells[:, j], dtype=object).str.contains("\ufffd", regex=False,
                                                                 na=False).to_numpy(dtype=bool)
    return out


def _extra_fields_filled(text: str, delimiter: str, ncols: int,
                         records: NDArray[np.int64]) -> NDArray[np.bool_]:
    """For each given (over-long) record, whether a field past the ncols-th one has text."""
    wanted = set(records.tolist())
    filled: dict[int, bool] = {}
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar='"', strict=False)
    for i, record in enumerate(itertools.islice(reader, int(records[-1]) + 1)):
        if i in wanted:
            filled[i] = any(field.strip() for field in record[ncols:])
    return np.array([filled.get(int(i), True) for i in records], dtype=bool)


def _read_cells(text: str, delimiter: str, ncols: int, kept_cols: int,
                scan: _Scan, warnings: list[str]) -> NDArray[np.object_]:
    """Every scanned record (blank ones too) as a row of strings, padded to kept_cols."""
    n_records = len(scan.lengths)
    try:
        # usecols keeps over-long rows (cut to ncols) instead of skipping them, and
        # skip_blank_lines=False keeps blank lines, so row i is record i of the scan.
        raw = pd.read_csv(
            io.StringIO(text), sep=delimiter, header=None, names=range(ncols),
            usecols=range(kept_cols), dtype=object, na_filter=False, quotechar='"',
            skip_blank_lines=False, nrows=n_records, engine="c",
        )
    except pd.errors.ParserError:
        # a quote left open: the rest of the file is one cell, as every reader reads it
        # (engine.cells); the csv module's reading below, never a refusal
        raw = None
        warnings.append("A quote (\") that opens a cell is never closed, so the rest of the "
                        "file was read as one cell, as every release reads it. Check the "
                        "quotes, or save the file again from a spreadsheet as CSV.")
    if raw is not None and len(raw) == n_records:
        return raw.to_numpy(dtype=object)
    # pandas and the csv module disagreed about a record boundary (odd quoting): fall back to
    # the csv module's reading, which the ragged-row report is based on.
    # (the file's last line break ends its last record, never a field: engine.cells)
    reader = csv.reader(io.StringIO(text.removesuffix("\n")), delimiter=delimiter,
                        quotechar='"', strict=False)
    cells = np.full((n_records, kept_cols), "", dtype=object)
    for i, record in enumerate(itertools.islice(reader, n_records)):
        record = record[:kept_cols]
        cells[i, : len(record)] = record
    return cells


def _column_names(header: list[str], warnings: list[str]) -> list[str]:
    names: list[str] = []
    controls, cut, empty, markup, formula = [], [], [], [], []
    for position, raw in enumerate(header, start=1):
        name = _NAME_BREAKS.sub(" ", raw)
        if _CONTROL.search(name):
            controls.append(position)
            name = _CONTROL.sub("", name)
        name = name.strip()
        if len(name) > MAX_NAME_LENGTH:
            cut.append(position)
            name = name[: MAX_NAME_LENGTH - 1].rstrip() + "…"
        if not name:
            empty.append(position)
            name = f"column {position}"
        elif _MARKUP.search(name):
            markup.append(name)
        if name.startswith(_FORMULA_START):
            formula.append(name)
        names.append(name)
    if controls:
        warnings.append("Control characters were removed from "
                        f"{_count(len(controls), 'column name')} ({_positions(controls)}).")
    if cut:
        warnings.append(f"{_count(len(cut), 'column name')} longer than {MAX_NAME_LENGTH} "
                        f"characters {_verb(len(cut), 'was/were')} cut ({_positions(cut)}).")
    if empty:
        unnamed = [f"column {p}" for p in empty]
        warnings.append(f"{_count(len(empty), 'column')} had no name and "
                        f"{_verb(len(empty), 'was/were')} named by position "
                        f"({_list(unnamed, quote=True)}).")
    if markup:
        warnings.append(f"{_count(len(markup), 'column name', 'looks/look')} like HTML or Markdown "
                        f"({_list(markup, quote=True)}): kept, and always shown as plain text.")
    if formula:
        warnings.append(f"{_count(len(formula), 'column name', 'starts/start')} with =, +, - or "
                        f"@ ({_list(formula, quote=True)}): kept as text; exports escape them.")
    return _deduplicate(names, warnings)


def _deduplicate(names: list[str], warnings: list[str]) -> list[str]:
    taken = set(names)
    seen: set[str] = set()
    renamed: list[str] = []
    out: list[str] = []
    for name in names:
        if name in seen:
            k = 2
            while f"{name} ({k})" in taken:
                k += 1
            new = f"{name} ({k})"
            taken.add(new)
            renamed.append(new)
            name = new
        seen.add(name)
        out.append(name)
    if renamed:
        warnings.append(f"Duplicate column names were made unique: {_list(renamed, quote=True)}.")
    return out


def _count(n: int, noun: str, verb: str = "") -> str:
    """``_count(2, "row", "has/have")`` is "2 rows have"."""
    words = f"{n:,} {noun}" + ("" if n == 1 else "s")
    return f"{words} {_verb(n, verb)}" if verb else words


def _positions(positions: list[int]) -> str:
    return ("column " if len(positions) == 1 else "columns ") + _list(positions)


def _verb(n: int, forms: str) -> str:
    singular, plural = forms.split("/")
    return singular if n == 1 else plural


def _list(items: list[object], *, quote: bool = False, limit: int = 5) -> str:
    shown = [f"'{_plain_name(str(i), 60)}'" if quote else str(i) for i in items[:limit]]
    more = f" and {len(items) - limit:,} more" if len(items) > limit else ""
    return ", ".join(shown) + more


@dataclass
class _ColumnReport:
    not_numbers: list[tuple[str, int, int]]     # (column, how many, first row)
    infinite: list[tuple[str, int]]
    separated: list[str]                        # numbers written with separators: not read
    formulas: int
    formula_columns: list[str]
    text_columns: list[str]                     # too many distinct values for categories
    empty_columns: list[str]
    trimmed: int


def _convert_columns(cells: NDArray[np.object_], names: list[str], delimiter: str,
                     rows: NDArray[np.int64], warnings: list[str]
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the frame the pages show, the cells every query reads: ``LoadedDataset.cells``).

    Both hold every record of the file, row for row: the frame is the cells typed by the one
    reading (``engine.cells``), so what the Data page shows about a column is what a query of
    it reads (a page's true answers and a release read the cells themselves)."""
    report = _ColumnReport([], [], [], 0, [], [], [], 0)
    columns: dict[str, object] = {}
    texts: dict[str, NDArray[np.object_]] = {}
    for j, name in enumerate(names):
        column, texts[name] = _convert_column(cells[:, j], name, delimiter, rows, report)
        if column is not None:
            columns[name] = column
    _report_columns(report, warnings)
    if not columns:
        raise DatasetError("Every column is empty or holds only missing markers (NA, NaN, "
                           "NULL…), so there is nothing to analyse. Fill in some values and "
                           "upload the file again.")
    frame = pd.DataFrame(columns)
    release_cells = pd.DataFrame(texts, dtype=object)
    # A row is empty when its own cells are, whatever the other rows hold.
    empty_rows = release_cells.isna().all(axis=1).to_numpy()
    if empty_rows.all():
        raise DatasetError("Every row is empty or holds only missing markers (NA, NaN, "
                           "NULL…), so there is nothing to analyse. Fill in some values and "
                           "upload the file again.")
    if empty_rows.any():
        # kept, as every path keeps them (engine.cells: every record is a row): a count
        # counts them, every other query finds their cells missing
        n = int(empty_rows.sum())
        warnings.append(f"{_count(n, 'row')} {_verb(n, 'has/have')} every cell empty or "
                        f"missing: kept (a count of rows counts {_verb(n, 'it/them')}, as "
                        "every release does).")
    said = missing_cells_warning(int(frame.isna().to_numpy().sum()),
                                 said_above=any("set to missing" in w for w in warnings))
    if said is not None:
        warnings.append(said)
    return frame, release_cells


def missing_cells_warning(missing: int, *, said_above: bool = False) -> str | None:
    """The warning for ``missing`` cells with no value (None when there are none): an
    upload's, and a data-folder file's from the engine's count (``column_facts.missing_warning``).
    ``said_above``: an earlier warning said that some cells were set to missing (only then
    does this one point to it)."""
    if not missing:
        return None
    how = "empty, NA, NaN, NULL or set to missing as said above" if said_above else \
        "empty, NA, NaN or NULL"
    return (f"{_count(missing, 'cell', 'is/are')} missing ({how}); queries treat them as "
            "missing.")


def _convert_column(raw: NDArray[np.object_], name: str, delimiter: str,
                    rows: NDArray[np.int64], report: _ColumnReport
                    ) -> tuple[object | None, NDArray[np.object_]]:
    """One column as numbers (int64/float64) or categories or text (None if it is empty),
    and its cells as a release reads them (``_release_texts``).

    Every cell is read on its own by the one rule of every path (``engine.cells``): missing
    by rule 3, a number by rule 4 (DuckDB's cast: "1,500" and "1,5" are no numbers, ±inf
    is one), a text without the white space around it (a category as written: "012" stays
    "012", which every query matches by its key, 12). Only which columns the pages offer as
    numbers depends on the column's other cells (``engine.cells.column_type``: at least
    ``NUMERIC_SHARE`` of them numbers), by the rule a data-folder CSV's type follows; no
    cell's value does. All the string
    work happens once per distinct cell text, then maps back through codes.
    """
    codes, uniques = pd.factorize(raw)
    counts = np.bincount(codes, minlength=len(uniques))
    stripped = np.array([strip_text(str(text)) for text in uniques], dtype=object)
    # rule 3 (engine.cells.is_missing of a text: its stripped text a marker)
    present = np.array([text.lower() not in MISSING_MARKERS for text in stripped], dtype=bool)
    n_present = int(counts[present].sum())
    texts = _release_texts(uniques, present)[codes]
    if n_present == 0:
        report.empty_columns.append(name)
        return None, np.full(raw.shape, None, dtype=object)

    numbers = cell_numbers(uniques)           # rule 4 (NaN: missing or not a number)
    parsed = present & ~np.isnan(numbers)
    failed = present & ~parsed
    if any(_SEPARATED_NUMBER.fullmatch(text) for text in stripped[failed]):
        report.separated.append(name)
    values = numbers[codes]
    whole = bool(np.all(np.isfinite(values)) and np.all(values == np.rint(values))
                 and np.all(np.abs(values) < 2**53))
    offered = column_type(n_present, int(counts[parsed].sum()), whole)   # a data folder's too
    if offered != "VARCHAR":
        if failed.any():
            first = int(rows[np.flatnonzero(failed[codes])[0]])
            report.not_numbers.append((name, int(counts[failed].sum()), first))
        infinite = np.isinf(numbers)
        if infinite.any():
            report.infinite.append((name, int(counts[infinite].sum())))
        return (values.astype(np.int64) if offered == "BIGINT" else values), texts

    changed = np.array([a != b for a, b in zip(stripped, uniques, strict=True)], dtype=bool)
    report.trimmed += int(counts[present & changed].sum())
    starts = np.array([text.startswith(_FORMULA_START) for text in stripped], dtype=bool)
    formula = failed & starts
    if formula.any():
        report.formulas += int(counts[formula].sum())
        report.formula_columns.append(name)
    category_codes, categories = pd.factorize(np.where(present, stripped, None))
    categories = np.asarray(categories, dtype=object)
    order = np.argsort(categories.astype(str), kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    row_codes = np.where(category_codes >= 0, rank[np.maximum(category_codes, 0)], -1)[codes]
    sorted_categories = categories[order]
    if len(sorted_categories) <= MAX_CATEGORIES:
        return pd.Categorical.from_codes(row_codes, categories=pd.Index(sorted_categories,
                                                                        dtype="str")), texts
    report.text_columns.append(name)
    values = np.where(row_codes >= 0, sorted_categories[np.maximum(row_codes, 0)], None)
    return pd.array(values, dtype="str"), texts


def _release_texts(uniques: NDArray[np.object_], present: NDArray[np.bool_]
                   ) -> NDArray[np.object_]:
    """Each distinct cell as a release reads it (``engine.cells``, the reading of every
    path): its text as written, None when missing (``present``: not missing, rule 3).
    Nothing is converted here ("1,500" stays the text "1,500", not a number for a query, as
    in the same file on the command line); the engine reads numbers and keys from it row by
    row."""
    return np.array([str(text) if keep else None for text, keep in zip(uniques, present,
                                                                        strict=True)],
                    dtype=object)


def _report_columns(report: _ColumnReport, warnings: list[str]) -> None:
    if report.empty_columns:
        n = len(report.empty_columns)
        warnings.append(f"{_count(n, 'column')} with no values {_verb(n, 'was/were')} dropped: "
                        f"{_list(report.empty_columns, quote=True)}.")
    if report.separated:
        warnings.append(
            f"Numbers written with thousands separators or a decimal comma (like 1,234 or "
            f"1,5) are not read as numbers in {_list(report.separated, quote=True)}: no page "
            "and no release reads them so (each cell is read on its own). Write them plainly "
            "(1234, 1.5) and upload the file again to count them.")
    for name, n, _row in report.not_numbers[:5]:
        warnings.append(f"Column '{_plain_name(name, 60)}' is numeric, but "
                        f"{_count(n, 'cell', 'is/are')} not a number: set to missing on every "
                        "page and in every release.")
    if len(report.not_numbers) > 5:
        more = [name for name, _, _ in report.not_numbers[5:]]
        warnings.append(f"More numeric columns had cells that are not numbers, set to missing: "
                        f"{_list(more, quote=True)}.")
    if report.infinite:
        total = sum(n for _, n in report.infinite)
        where = _list([name for name, _ in report.infinite], quote=True)
        warnings.append(f"{_count(total, 'infinite value')} (inf) in {where}: "
                        f"{_verb(total, 'it is/they are')} a number, which a query's bounds "
                        "clamp.")
    if report.formulas:
        # the columns are said as columns, and the cells are listed on the Data page (the
        # owner's eyes): "(… 'cmd')" after "formulas" read as if 'cmd' were the cell
        where = ("column " if len(report.formula_columns) == 1 else "columns ") + _list(
            report.formula_columns, quote=True)
        warnings.append(
            f"{_count(report.formulas, 'cell')} in {where} "
            f"{_verb(report.formulas, 'starts/start')} with =, +, - or @ and could run as a "
            "formula in a spreadsheet: kept as text here, and every download escapes it. The "
            "Data page lists these cells, for your eyes only.")
    if report.text_columns:
        warnings.append(
            f"{_list(report.text_columns, quote=True)} "
            f"{_verb(len(report.text_columns), 'has/have')} more than {MAX_CATEGORIES:,} "
            "different values: kept as text, but not offered for categorical queries.")
    if report.trimmed:
        warnings.append(f"Spaces around {_count(report.trimmed, 'text cell')} were removed.")
