"""The code every exported program shares: reading the data, bounding each person's
contribution, the cells of a grouped query, the mean's and the variance's post-processing.

release.programs copies the SHARED block below into each generated program (after the
plan's literals); the placeholders above it only make this file importable and linted.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os

import numpy as np
import pandas as pd

# >>> PLAN: placeholders for the plan's names the shared code reads (a program defines them)
PLAN_SHA256 = "sha256:"
PLAN_JSON = ""
PERSON_COLUMN: str | None = None
MAX_ROWS = 1
MAX_GROUPS: int | None = None
QUERIES: list[dict] = []
# <<< PLAN

# >>> SHARED: copied into every program

# ------------------------------------------------------------------------------------------
# reading the data and bounding each person's contribution (the same in every program)


class Refused(Exception):
    """The release cannot go ahead as planned; nothing was drawn."""


def check_plan():
    digest = "sha256:" + hashlib.sha256(PLAN_JSON.encode("utf-8")).hexdigest()
    if digest != PLAN_SHA256:
        raise Refused("PLAN_JSON does not match PLAN_SHA256: the program was edited")


def needed_columns():
    names = [] if PERSON_COLUMN is None else [PERSON_COLUMN]
    for query in QUERIES:
        for name in query["columns"]:
            if name not in names:
                names.append(name)
    return names


def read_frame(path):
    """The columns the plan needs, from a CSV, CSV.gz or Parquet file (or Parquet folder):
    a CSV's cells each as its own text (:func:`read_csv_cells`), never typed by column."""
    if os.path.isdir(path) or path.lower().endswith((".parquet", ".pq")):
        frame = pd.read_parquet(path)
    else:
        frame = read_csv_cells(path)
    return select_columns(frame)


def read_csv_cells(path, delimiter=","):
    """A CSV (or CSV.gz) file as a frame of texts, one column per header field: records and
    fields split by ``delimiter`` and RFC 4180 quoting only. Malformed records are read, never
    refused: bytes that are not UTF-8 are replaced (U+FFFD), a leading BOM is dropped, a
    record with fewer fields than the header has the rest missing (None), extra fields are
    dropped, and blank lines are no record."""
    opener = gzip.open if path.lower().endswith(".gz") else open
    with opener(path, "rb") as handle:
        text = handle.read().decode("utf-8", errors="replace").removeprefix("\ufeff")
    records = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next((r for r in records if r), None)
    if header is None:
        raise Refused("the data file has no header")
    width = len(header)
    # as the csv module hands them over: a short record padded with None (missing), the
    # fields past the header dropped
    body = [r[:width] + [None] * (width - len(r)) for r in records if r]
    frame = pd.DataFrame(body, columns=range(width), dtype=object)
    frame.columns = header
    return frame


def select_columns(frame):
    missing = [name for name in needed_columns() if name not in frame.columns]
    if missing:
        raise Refused(f"the data has no column(s) {missing!r}, which the plan needs")
    # the first column of each name (a header may repeat a name)
    first = ~pd.Index(frame.columns).duplicated()
    return frame.loc[:, first][needed_columns()]


# ------------------------------------------------------------------------------------------
# one reading of a cell, the same as the release's (missing markers, numbers, keys)

#: A cell whose text, without surrounding white space, is one of these (any letter case) is
#: missing.
MISSING_MARKERS = frozenset({"", "na", "n/a", "nan", "null", "#n/a", "<na>"})
_SPACE = "\u0020\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
_WS = "[\t\n\x0b\f\r ]"
_DIGITS = r"[0-9](?:_?[0-9])*"
#: The text DuckDB's TRY_CAST(trim(text) AS DOUBLE) reads as a number: digits (an underscore
#: between two of them), a point, an exponent, inf, infinity or nan; "+-" is a minus sign.
NUMBER = (rf"[{_SPACE}]*{_WS}*((?:\+-|[+-])?(?:(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?"
          rf"|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?|(?i:inf|infinity|nan))){_WS}*[{_SPACE}]*")
#: Whole numbers up to this magnitude are keyed as their integer's decimal text.
WHOLE_KEY_LIMIT = 2.0**53


def _as_series(values):
    return values if isinstance(values, pd.Series) else pd.Series(values, dtype=object)


def _texts(values):
    """Each value as the text a key or number is read from (None: missing). A text cell as it
    is; a typed value (Parquet, a frame) as DuckDB casts it to text: a whole number as its
    integer, true/false, another number as its shortest decimal text."""
    values = _as_series(values)
    if pd.api.types.is_bool_dtype(values.dtype):
        return values.map({True: "true", False: "false"}).astype(object)
    if pd.api.types.is_integer_dtype(values.dtype):
        return values.astype(str).astype(object)
    if pd.api.types.is_float_dtype(values.dtype):
        x = values.to_numpy(dtype=float)
        whole = np.isfinite(x) & (np.floor(x) == x) & (np.abs(x) <= WHOLE_KEY_LIMIT)
        out = values.astype(str).astype(object)
        out[whole] = pd.Series(x[whole]).astype(np.int64).astype(str).to_numpy()
        return out.where(~np.isnan(x), None)
    if pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):
        return values.astype(object).where(values.notna(), None)
    return _texts_of_mixed(values)


def _texts_of_mixed(values):
    def one(v):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return None
        if isinstance(v, str):
            return v
        return _texts(pd.Series([v]))[0]
    return values.map(one).astype(object)


def missing(values):
    """Which values are missing: no value, or a text that is a missing marker."""
    texts = _texts(values)
    present = texts.notna().to_numpy()
    marker = np.zeros(len(texts), dtype=bool)
    marker[present] = texts[present].str.strip().str.lower().isin(MISSING_MARKERS).to_numpy()
    return ~present | marker


def number_of(values):
    """Each value as the number it reads as (float64), NaN where none: a typed number as it is,
    a text as DuckDB's TRY_CAST(trim(text) AS DOUBLE) reads it; NaN and infinities are no
    number (missing for the query)."""
    values = _as_series(values)
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(
            values.dtype):
        x = values.to_numpy(dtype=float)
    else:
        texts = _texts(values)
        x = np.full(len(texts), np.nan)
        present = texts.notna().to_numpy()
        if present.any():
            core = texts[present].str.extract(f"^{NUMBER}\\Z", expand=False)
            core = core.str.replace("_", "", regex=False).str.replace(r"^\+-", "-", regex=True)
            x[present] = pd.to_numeric(core, errors="coerce").to_numpy(dtype=float)
    return np.where(np.isfinite(x), x, np.nan)


def keys_of(values):
    """Each value's canonical key (None: missing): its text without surrounding white space;
    when that is a finite whole number within 2^53, its integer's decimal text ("012",
    "12.0", "1.2e1" and " 12" are all "12")."""
    texts = _texts(values)
    gone = missing(texts)
    stripped = texts.where(~gone, None).str.strip()
    x = number_of(stripped.where(~gone, None))
    whole = np.isfinite(x) & (np.floor(x) == x) & (np.abs(x) <= WHOLE_KEY_LIMIT)
    out = stripped.to_numpy(dtype=object, copy=True)
    out[whole] = pd.Series(x[whole] + 0.0).astype(np.int64).astype(str).to_numpy()
    out[gone] = None
    return out


def numbers(values, lower, upper, whole=False):
    """A column as numbers clamped to the plan's bounds (rounded to whole numbers, ties to
    even, when the noise is whole-number noise); a missing value adds nothing."""
    x = number_of(values)
    x = np.clip(x, lower, upper)
    if whole:
        x = np.rint(x)
    return np.where(np.isnan(x), 0.0, x)


def cells(values, categories):
    """The index of each value among the declared categories (-1: not declared, or missing):
    a value is in a category when their canonical keys are equal."""
    declared = pd.Index(keys_of(pd.Series(list(categories), dtype=object)))
    first = ~declared.duplicated()
    positions = np.flatnonzero(first)
    found = pd.Index(declared[first]).get_indexer(keys_of(values))
    return np.where(found >= 0, positions[found], -1).astype(np.int64)


def bins(values, edges, outside):
    """The cell of each value among the bins between ``edges`` ([a, b), the last closed):
    below, the bins, above when outside is "separate"; the end bins when "clamp"; -1 for a
    missing value."""
    x = number_of(values)
    e = np.asarray(edges, dtype=float)
    k = len(e) - 1
    i = np.searchsorted(e, x, side="right") - 1
    i = np.where(x == e[-1], k - 1, i)
    if outside == "clamp":
        i = np.clip(i, 0, k - 1)
    else:
        i = i + 1
    return np.where(np.isnan(x), -1, i).astype(np.int64)


def bin_labels(edges, outside):
    text = [f"{v:g}" for v in edges]
    labels = [f"[{a}, {b})" for a, b in zip(text[:-2], text[1:-1], strict=True)]
    labels.append(f"[{text[-2]}, {text[-1]}]")
    if outside == "separate":
        return [f"< {text[0]}", *labels, f"> {text[-1]}"]
    return labels


def cell_codes(frame, query):
    """The cell of each row for a grouped query, and the cells' labels."""
    if query["kind"] == "crosstab":
        rows = cells(frame[query["row"]], query["row_categories"])
        columns = cells(frame[query["column"]], query["column_categories"])
        width = len(query["column_categories"])
        codes = np.where((rows >= 0) & (columns >= 0), rows * width + columns, -1)
        labels = [[str(r), str(c)] for r in query["row_categories"]
                  for c in query["column_categories"]]
        return codes, labels
    if query["kind"] == "group_by":
        return cells(frame[query["key"]], query["keys"]), [[str(k)] for k in query["keys"]]
    if query["kind"] == "selection":
        return cells(frame[query["column"]], query["candidates"]), None
    if query.get("edges") is not None:
        labels = bin_labels(query["edges"], query["outside"])
        return bins(frame[query["column"]], query["edges"], query["outside"]), [
            [label] for label in labels]
    codes = cells(frame[query["column"]], query["categories"])
    return codes, [[str(c)] for c in query["categories"]]


def bounded(frame, codes=None, rng=None):
    """The rows kept under the privacy unit: each person keeps at most MAX_ROWS rows (in each
    of at most MAX_GROUPS cells of a grouped query), chosen uniformly at random: the cells
    by an independent random priority per (person, cell), whatever their numbers of rows,
    and the rows of a kept cell by a random priority. A person is a person id's canonical
    key (``keys_of``); a row with no person id is no one's and is left out. Each priority
    is a hash, keyed by a secret drawn once per run (from ``rng`` when given), of the
    person's key and that row's own cells (or that cell), so what a person keeps depends on
    that person's rows only: never on other people's rows or the file's order. With one
    row per person, every row. ``codes``: each row's cell (-1: in none, dropped)."""
    if codes is not None:
        frame = frame.assign(__cell__=codes)
        frame = frame[frame["__cell__"].to_numpy() >= 0]
    if PERSON_COLUMN is None:
        return frame
    rng = np.random.default_rng() if rng is None else rng
    row_key, cell_key = rng.bytes(8).hex(), rng.bytes(8).hex()   # 16 characters each
    person = keys_of(frame[PERSON_COLUMN])
    known = pd.notna(person)
    frame, person = frame[known], pd.Series(person[known], dtype=object)
    keyed = frame.reset_index(drop=True).assign(__person__=person.to_numpy())
    priority = pd.util.hash_pandas_object(keyed, index=False, hash_key=row_key).to_numpy()
    order = np.argsort(priority, kind="stable")
    frame, person = frame.iloc[order], person.iloc[order].to_numpy()
    if codes is None or MAX_GROUPS is None:
        rank = pd.Series(person).groupby(person, sort=False).cumcount().to_numpy()
        return frame[rank < MAX_ROWS]
    cell = frame["__cell__"].to_numpy()
    rank = pd.DataFrame({"p": person, "c": cell}).groupby(
        ["p", "c"], sort=False).cumcount().to_numpy()
    frame, person, cell = frame[rank < MAX_ROWS], person[rank < MAX_ROWS], cell[rank < MAX_ROWS]
    pairs = pd.DataFrame({"p": person, "c": cell}).drop_duplicates()
    # not the cells met first among the rows (a cell with more rows comes first more
    # often): the MAX_GROUPS cells of highest independent priority
    pair_priority = pd.util.hash_pandas_object(pairs, index=False, hash_key=cell_key)
    pairs = pairs.iloc[np.argsort(pair_priority.to_numpy(), kind="stable")]
    pairs = pairs[pairs.groupby("p", sort=False).cumcount().to_numpy() < MAX_GROUPS]
    kept = pd.MultiIndex.from_frame(pairs).get_indexer(
        pd.MultiIndex.from_arrays([person, cell])) >= 0
    return frame[kept]


def mean_of(noisy_sum, noisy_count, lower, upper):
    """A mean from its noisy sum and count: the count floored at 1, the ratio clamped."""
    return float(min(max(float(noisy_sum) / max(float(noisy_count), 1.0), lower), upper))


def present(values):
    """Which values read as numbers (a variance leaves the others out, as the app does)."""
    return ~np.isnan(number_of(values))


def deviations(values, lower, upper):
    """Each value clamped to the plan's bounds, minus the bounds' midpoint: in [-h, h], h
    half the bounds' width (a variance's parts sum these and their squares)."""
    return numbers(values, lower, upper) - (lower + upper) / 2


def variance_of(noisy_count, noisy_deviations, noisy_squares, lower, upper):
    """A variance from its noisy parts: S2/n - (S1/n)^2, the count n floored at 1, clamped
    to [0, h^2] (every variance of values in the bounds lies there; h = (upper - lower)/2)."""
    n = max(float(noisy_count), 1.0)
    mean = float(noisy_deviations) / n
    half = (upper - lower) / 2
    return float(min(max(float(noisy_squares) / n - mean * mean, 0.0), half * half))


def plain(value):
    return value.item() if hasattr(value, "item") else value


def emit(out, path):
    """The released values as JSON: printed, and written to ``path`` when given."""
    text = json.dumps(out, indent=2, ensure_ascii=False, allow_nan=False)
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    print(text)
# <<< SHARED
