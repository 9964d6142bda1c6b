"""The code every exported program shares: reading the data, bounding each person's
contribution, the cells of a grouped query, the mean's and the variance's post-processing,
and the registry of each kind's snippet (``snippet``).

release.programs copies the SHARED block below into each generated program (after the
plan's literals and engine/cells.py's code, verbatim: the one reading of a cell that the
release follows); the placeholders and the import above it only make this file importable
and linted.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pandas as pd

from engine.cells import (
    NO_HEADER,
    boolean_key,
    cell_key,
    cell_keys,
    cell_number,
    column_names,
    deviation_bound,
    has_header,
    read_cells,
)

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
    a CSV's cells each as its own text, by the one reading of the release (``read_cells``
    above: the delimiter read from the header alone; a short record padded, a long one cut,
    blank lines skipped, a record holding a byte that is not UTF-8 or more than
    MAX_RECORD_CHARS characters dropped, a file with no header refused), never typed by
    column; a Parquet file's cells as its types hold them, a 64-bit integer exactly (as
    DuckDB reads it) even in a column with a missing cell, which pandas would make float64
    (2^53 + 1 read as 2^53)."""
    if os.path.isdir(path) or path.lower().endswith((".parquet", ".pq")):
        import pyarrow.parquet as pq  # here: a program reading a CSV needs no pyarrow

        frame = pq.read_table(path).to_pandas(integer_object_nulls=True)
    else:
        with open(path, "rb") as handle:
            data = handle.read()
        header, frame = read_cells(data)
        if not has_header(header, data):
            # as the release refuses it (engine.sources.csv_layout): the file, not its data
            raise Refused(f"the file {NO_HEADER}, then one row per person")
        frame.columns = column_names(header)
    return select_columns(frame)


def select_columns(frame):
    missing = [name for name in needed_columns() if name not in frame.columns]
    if missing:
        raise Refused(f"the data has no column(s) {missing!r}, which the plan needs")
    return frame[needed_columns()]


def number_of(values):
    """Each cell as the number it reads as (``cell_number``: DuckDB's TRY_CAST(trim(text) AS
    DOUBLE); NaN where none and for NaN; ±inf as itself, clamped by the bounds), once per distinct
    value."""
    series = values if isinstance(values, pd.Series) else pd.Series(
        np.asarray(values, dtype=object), dtype=object)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    x = np.array([cell_number(v) for v in uniques] + [None], dtype=float)
    return x[codes]


def keys_of(values):
    """Each cell's canonical key (``cell_key``; None when missing): "12", "012", "12.0",
    "1.2e1" and " 12" are all "12"."""
    return cell_keys(values).to_numpy(dtype=object)


def cell_texts(values):
    """Each cell as the ranking hashes it, a function of that cell alone: a text as written,
    any other cell (a typed number or boolean) as its canonical key (``cell_key``: 1 and 1.0
    are "1"), a missing cell as missing; a column of texts is taken as it is (no cell read
    one by one: the ranking's cost stays pandas' hash of the column)."""
    series = values if isinstance(values, pd.Series) else pd.Series(
        np.asarray(values, dtype=object), dtype=object)
    if pd.api.types.infer_dtype(series, skipna=True) in ("string", "empty"):
        return series.to_numpy(dtype=object)
    codes, uniques = pd.factorize(series.astype(object), use_na_sentinel=True)
    texts = [v if isinstance(v, str) else cell_key(v) for v in uniques]
    return np.array([*texts, None], dtype=object)[codes]


def numbers(values, lower, upper, whole=False):
    """A column as numbers clamped to the plan's bounds (rounded to whole numbers, ties to
    even, when the noise is whole-number noise, as the release rounds them); a missing value
    adds nothing."""
    x = np.clip(number_of(values), lower, upper)
    if whole:
        x = np.rint(x)
    return np.where(np.isnan(x), 0.0, x)


#: What a declared category with no key is compared as: an object equal to no cell's key
#: (a found key is a text, a boolean or None).
_NO_KEY = object()


def cells(values, categories):
    """The index of each value among the declared categories (-1: not declared, or missing),
    as the release matches them: declared texts by canonical key (``cell_key``: the declared
    "0012" is the cell "12"), declared numbers by the number each cell reads as (declared
    2.5 is the cell "2.50"), a boolean and a text by the text's key in lower case
    (``boolean_key``, engine.cells rule 6: declared True is a CSV's "true", "True" and
    "TRUE"; a declared "true" is a typed True); the first category of a key, number or
    boolean when two declared ones share it."""
    categories = list(categories)
    if categories and all(isinstance(c, int | float) and not isinstance(c, bool)
                          for c in categories):
        declared = pd.Index(np.asarray(categories, dtype=float))
        found = number_of(values)
    else:
        codes, uniques = pd.factorize(pd.Series(np.asarray(values, dtype=object),
                                                dtype=object), use_na_sentinel=True)
        if categories and all(isinstance(c, bool) for c in categories):
            # each cell as the boolean it is (a typed one, or a text whose key in lower case
            # is true or false), never the column's dtype: one missing cell makes a column of
            # booleans object (in a Spark partition, or a Parquet file written without
            # pandas' metadata)
            declared = pd.Index(categories, dtype=object)
            found = [boolean_key(v) for v in uniques]
        else:
            # a text cell by its key as written; a boolean cell (a typed column's) as the
            # first declared text that is that boolean (rule 6: "true", "True"; "yes" none).
            # A declared text with no key ("", "NA", " ": rule 5) matches no cell, as on
            # DuckDB: a sentinel no found key equals, so a missing or unmatched cell (None)
            # stays -1 (object dtype: pandas' str dtype would make None a NaN again)
            declared = pd.Index([_NO_KEY if key is None else key
                                 for key in map(cell_key, categories)], dtype=object)
            spelled = {}
            for category, key in zip(categories, declared, strict=True):
                spelled.setdefault(boolean_key(category), key)
            found = [spelled.get(bool(v)) if isinstance(v, bool | np.bool_) else cell_key(v)
                     for v in uniques]
        found = np.array([*found, None], dtype=object)[codes]
    first = ~declared.duplicated()
    positions = np.flatnonzero(first)
    index = pd.Index(declared[first]).get_indexer(found)
    return np.where(index >= 0, positions[np.maximum(index, 0)], -1).astype(np.int64)


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
    """The cell of each row for a grouped query, and the cells' labels, read off what its
    record declares (never its kind's name): two category lists (a crosstab's), keys (a
    group-by's), candidates (a selection's), bin edges or categories (a histogram's)."""
    if "row_categories" in query:
        rows = cells(frame[query["row"]], query["row_categories"])
        columns = cells(frame[query["column"]], query["column_categories"])
        width = len(query["column_categories"])
        codes = np.where((rows >= 0) & (columns >= 0), rows * width + columns, -1)
        labels = [[str(r), str(c)] for r in query["row_categories"]
                  for c in query["column_categories"]]
        return codes, labels
    if "keys" in query:
        return cells(frame[query["key"]], query["keys"]), [[str(k)] for k in query["keys"]]
    if "candidates" in query:
        return cells(frame[query["column"]], query["candidates"]), None
    if query.get("edges") is not None:
        labels = bin_labels(query["edges"], query["outside"])
        return bins(frame[query["column"]], query["edges"], query["outside"]), [
            [label] for label in labels]
    codes = cells(frame[query["column"]], query["categories"])
    return codes, [[str(c)] for c in query["categories"]]


def ranked(frame, rng=None):
    """The unit's one truncation, drawn once per release: each row with a person id and its
    rank (``__rank__``, from 0) among its person's rows, in the order of a random priority;
    every query keeps the rows of rank < MAX_ROWS (``bounded``), so all of the plan's
    queries read the same kept rows. A person is a person id's canonical key (``keys_of``,
    in ``__person__``); a row with no person id is no one's and is left out. The priority
    is a hash, keyed by a secret drawn for the release (from ``rng`` when given), of the
    person's key and that row's own cells, each cell by itself (``cell_texts``: a text as
    written, a typed number or boolean as its canonical key), so what a person keeps depends
    on that person's rows only: never on other people's rows, the file's order, or the batch
    the rows are read in. With one row per person, every row (rank 0)."""
    if PERSON_COLUMN is None:
        return frame.assign(__rank__=np.zeros(len(frame), dtype=np.int64))
    rng = np.random.default_rng() if rng is None else rng
    row_secret = rng.bytes(8).hex()   # 16 characters
    person = keys_of(frame[PERSON_COLUMN])
    known = pd.notna(person)
    frame, person = frame[known], pd.Series(person[known], dtype=object)
    # Each cell hashed as a text (or missing), never as its column's dtype: pandas hashes an
    # int64 1, a float64 1.0 and a text "1" differently, and a column's dtype is guessed from
    # the other cells of its batch (in a Spark partition: float64 beside another person's
    # missing cell, object beside a text), so the same row was ranked otherwise there.
    keyed = pd.DataFrame({f"c{i}": cell_texts(frame.iloc[:, i]) for i in range(frame.shape[1])},
                         dtype=object).assign(__person__=person.to_numpy())
    priority = pd.util.hash_pandas_object(keyed, index=False, hash_key=row_secret).to_numpy()
    order = np.argsort(priority, kind="stable")
    frame, person = frame.iloc[order], person.iloc[order].to_numpy()
    rank = pd.Series(person).groupby(person, sort=False).cumcount().to_numpy()
    return frame.assign(__person__=person, __rank__=rank)


def bounded(frame, codes=None, rng=None):
    """The rows kept under the privacy unit: each person's rows of rank < MAX_ROWS
    (``ranked``: the same rows for every query of the plan), then, with ``codes``, those in
    a declared cell (``codes``: each row's cell, -1: in none). A grouped query with
    MAX_GROUPS keeps, on top, at most MAX_GROUPS cells of each person, chosen uniformly at
    random by an independent random priority per (person, cell) whatever their numbers of
    rows, and in each kept cell the MAX_ROWS rows of lowest rank. ``frame`` not yet ranked
    is ranked here (one draw for this query alone)."""
    if codes is not None:
        frame = frame.assign(__cell__=codes)
    if "__rank__" not in frame.columns:
        frame = ranked(frame, rng)
    if codes is None or MAX_GROUPS is None or PERSON_COLUMN is None:
        kept = frame[frame["__rank__"].to_numpy() < MAX_ROWS]
        return kept if codes is None else kept[kept["__cell__"].to_numpy() >= 0]
    rng = np.random.default_rng() if rng is None else rng
    cell_secret = rng.bytes(8).hex()
    frame = frame[frame["__cell__"].to_numpy() >= 0]
    frame = frame.iloc[np.argsort(frame["__rank__"].to_numpy(), kind="stable")]
    person, cell = frame["__person__"].to_numpy(), frame["__cell__"].to_numpy()
    rank = pd.DataFrame({"p": person, "c": cell}).groupby(
        ["p", "c"], sort=False).cumcount().to_numpy()
    frame, person, cell = frame[rank < MAX_ROWS], person[rank < MAX_ROWS], cell[rank < MAX_ROWS]
    pairs = pd.DataFrame({"p": person, "c": cell}).drop_duplicates()
    # not the cells met first among the rows (a cell with more rows comes first more
    # often): the MAX_GROUPS cells of highest independent priority
    pair_priority = pd.util.hash_pandas_object(pairs, index=False, hash_key=cell_secret)
    pairs = pairs.iloc[np.argsort(pair_priority.to_numpy(), kind="stable")]
    pairs = pairs[pairs.groupby("p", sort=False).cumcount().to_numpy() < MAX_GROUPS]
    kept = pd.MultiIndex.from_frame(pairs).get_indexer(
        pd.MultiIndex.from_arrays([person, cell])) >= 0
    return frame[kept]


def with_a_value(codes, frame, query):
    """A sum's or mean's cells by group (``codes``), a row whose value reads as no number in
    none (-1), before a person's cells are chosen (``bounded``): as the release reads them,
    a person's groups are the cells where they have a value, and a mean counts the values."""
    return np.where(present(frame[query["column"]]), codes, -1)


def mean_of(noisy_sum, noisy_count, lower, upper):
    """A mean from its noisy sum and count: the count floored at 1, the ratio clamped."""
    return float(min(max(float(noisy_sum) / max(float(noisy_count), 1.0), lower), upper))


def present(values):
    """Which values read as numbers (a variance leaves the others out, as the app does)."""
    return ~np.isnan(number_of(values))


def deviations(values, lower, upper):
    """Each value clamped to the plan's bounds, minus the bounds' midpoint: in [-h, h], h
    half the bounds' width (a variance's parts sum these and their squares), clamped to
    the plan's h (``deviation_bound``: the subtraction can exceed it by a few ulps)."""
    half = deviation_bound(lower, upper)
    return np.clip(numbers(values, lower, upper) - (lower + upper) / 2, -half, half)


def variance_of(noisy_count, noisy_deviations, noisy_squares, lower, upper):
    """A variance from its noisy parts: S2/n - (S1/n)^2, the count n floored at 1, clamped
    to [0, h^2] (every variance of values in the bounds lies there; h = (upper - lower)/2)."""
    n = max(float(noisy_count), 1.0)
    mean = float(noisy_deviations) / n
    half = (upper - lower) / 2
    return float(min(max(float(noisy_squares) / n - mean * mean, 0.0), half * half))


#: Each kind's snippet in this program, by the kind's name (``snippet``): a program asks its
#: query's kind for its snippet and never compares kind names, so a new kind is its own
#: snippet in each template and nothing else there.
SNIPPETS = {}


def snippet(kind, grouped=False, **more):
    """Registers the decorated function as the release of the kind ``kind`` in this program;
    ``grouped``: its parts measure one value per declared cell (a vector), not one number;
    ``more``: what else the program asks the kind's snippet (e.g. how it reads a row's
    value), set on it."""
    def register(release):
        SNIPPETS[kind] = release
        release.grouped = grouped
        for name, value in more.items():
            setattr(release, name, value)
        return release
    return register


def snippet_of(query):
    """The snippet that releases ``query`` (Refused for a kind this program has none of)."""
    release = SNIPPETS.get(query["kind"])
    if release is None:
        raise Refused(f"query {query['id']!r}: this program cannot release its kind")
    return release


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
