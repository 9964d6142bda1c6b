"""A very wide table has a content digest too, and the same one the first version gave.

The first digest built each row's text as a chain of ``||`` nested one level per column:
DuckDB refused it past about 300 columns (too deep) and took minutes well before (its ``IN``
lists planned as one join per column). The digest now builds the same row text in one flat
expression. Its SQL builder as it was is copied below as the reference: the ledger
identities of existing releases must not change.
"""

from __future__ import annotations

import re
from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest

import plan.identity as identity
from dashboard.data.upload import MAX_UPLOAD_COLUMNS, load_upload
from dashboard.release_panel import content_hash_of
from engine import FileSource
from plan.identity import content_digest

# ---------------------------------------------------------------------------------------------
# the reference: the digest's SQL builder as it was before wide tables (copied, not imported)

_REFERENCE_MISSING_TEXTS = ("", "na", "n/a", "nan", "null", "#n/a", "<na>")


def _reference_canonical_value(text: str, number: str, missing: str) -> str:
    markers = ", ".join(f"'{m}'" for m in _REFERENCE_MISSING_TEXTS)
    return (f"(CASE WHEN {missing} OR lower({text}) IN ({markers}) THEN '' "
            f"WHEN isfinite({number}) THEN 'n' || CAST({number} + 0.0 AS VARCHAR) "
            f"WHEN lower({text}) IN ('true', 'false') THEN 'b' || lower({text}) "
            f"ELSE 's' || {text} END)")


def _reference_digest_sql(names: list[str], types=()) -> tuple[str, list[str]]:
    order = sorted(range(len(names)), key=lambda i: (names[i].strip(), i))
    inner = ", ".join(
        f"c{i} IS NULL AS m{i}, trim(CAST(c{i} AS VARCHAR)) AS t{i}, "
        f"TRY_CAST(trim(CAST(c{i} AS VARCHAR)) AS DOUBLE) AS n{i}" for i in order)
    middle = ", ".join(f"{_reference_canonical_value(f't{i}', f'n{i}', f'm{i}')} AS k{i}"
                       for i in order)
    row = " || '|' || ".join(f"length(k{i}) || ':' || k{i}" for i in order) or "''"
    sql = (f"SELECT count(*), coalesce(sum(CAST(md5_number_upper(r) AS HUGEINT)), 0), "
           f"coalesce(sum(CAST(md5_number_lower(r) AS HUGEINT)), 0) FROM ("
           f"SELECT {row} AS r FROM (SELECT {middle or '1'} FROM (SELECT {inner or '1'} "
           f"FROM __SOURCE__)))")
    return sql, [names[i].strip() for i in order]


def _reference_digest(data: object, monkeypatch: pytest.MonkeyPatch) -> str:
    """The digest as the first version computed it: the same reading of the data, the old
    SQL (and no cached digest of a file)."""
    with monkeypatch.context() as patched:
        patched.setattr(identity, "_digest_sql", _reference_digest_sql)
        patched.setattr(identity, "_digest_cache", OrderedDict())
        return content_digest(data)


def _fresh_digest(data: object, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patched:
        patched.setattr(identity, "_digest_cache", OrderedDict())
        return content_digest(data)


# ---------------------------------------------------------------------------------------------
# tables

HOSTILE_NAMES = ("a", " a", 'b"c', "d'e", "f|g:h", "Ünï cödé", "; DROP TABLE t; --", "1",
                 "NULL", "x  y")
TEXTS = np.array(["plain", "  padded  ", "a|b", "3:abc", "Ünï", "", "'quoted'", "TRUE",
                  "1e3", " 7 ", "0.10", "-0", "inf", "None"], dtype=object)
MARKERS = np.array(["NA", "n/a", " null ", "", "#N/A", "<NA>", "NaN", "x"], dtype=object)


def _column(kind: int, rows: int, rng: np.random.Generator) -> object:
    """One column of ``rows`` values of the ``kind``-th sort: floats with missing, zero and
    infinite values; integers; text (with separators, padding, numbers written as text);
    text with missing markers; booleans; text with missing cells (None)."""
    if kind == 0:
        values = np.round(rng.normal(0, 1e3, rows), 3)
        values[rng.random(rows) < 0.2] = np.nan
        values[rng.random(rows) < 0.1] = -0.0
        values[rng.random(rows) < 0.05] = np.inf
        return values
    if kind == 1:
        return rng.integers(-10**12, 10**12, rows)
    if kind == 2:
        return rng.choice(TEXTS, rows)
    if kind == 3:
        return rng.choice(MARKERS, rows)
    if kind == 4:
        return rng.random(rows) < 0.5
    values = rng.choice(TEXTS[:5], rows)
    values[rng.random(rows) < 0.3] = None
    return values


def mixed_table(columns: int, rows: int = 40, seed: int = 0) -> pd.DataFrame:
    """A table of numbers, text, missing markers and booleans under hostile column names
    (quotes, separators, names equal once trimmed, a SQL fragment)."""
    rng = np.random.default_rng(seed)
    names = [HOSTILE_NAMES[i % len(HOSTILE_NAMES)] + (f" {i}" if i >= len(HOSTILE_NAMES)
                                                      else "") for i in range(columns)]
    return pd.DataFrame({name: _column(i % 6, rows, rng) for i, name in enumerate(names)})


def _as(form: str, table: pd.DataFrame, folder) -> object:
    if form == "frame":
        return table
    if form == "csv":
        table.to_csv(folder / "t.csv", index=False)
        return FileSource(folder / "t.csv", "csv")
    table.to_parquet(folder / "t.parquet")
    return FileSource(folder / "t.parquet", "parquet")


# ---------------------------------------------------------------------------------------------
# (a) the same digest as before

# the reference takes a second or more per call from 40 columns
@pytest.mark.parametrize("form", ["frame", "csv", "parquet"])
@pytest.mark.parametrize("columns", [1, 5, pytest.param(40, marks=pytest.mark.slow),
                                     pytest.param(70, marks=pytest.mark.slow)])
def test_the_digest_is_the_one_the_first_version_gave(tmp_path, monkeypatch, form, columns):
    data = _as(form, mixed_table(columns, seed=columns), tmp_path)
    assert _fresh_digest(data, monkeypatch) == _reference_digest(data, monkeypatch)


def test_an_empty_table_keeps_its_digest(tmp_path, monkeypatch):
    empty = mixed_table(5).iloc[:0]
    assert _fresh_digest(empty, monkeypatch) == _reference_digest(empty, monkeypatch)


# ---------------------------------------------------------------------------------------------
# (b) wide tables are identified, as narrow ones are

@pytest.mark.parametrize("form", ["frame", "csv"])
@pytest.mark.parametrize("columns", [600, pytest.param(2000, marks=pytest.mark.slow)])
def test_a_wide_table_is_identified_by_its_content(tmp_path, monkeypatch, form, columns):
    table = mixed_table(columns, rows=30, seed=1)
    # names unique once trimmed (names equal once trimmed are ordered by position)
    table.columns = [f"{name.strip()} #{i}" for i, name in enumerate(table.columns)]
    edited = table.copy()
    edited.iloc[7, columns - 3] = "changed"          # one text cell of the last columns
    variants = {"base": table, "one cell changed": edited,
                "rows reordered": table.sample(frac=1.0, random_state=2),
                "columns reordered": table[table.columns[::-1]]}
    digests = {}
    for name, variant in variants.items():
        folder = tmp_path / name.replace(" ", "_")
        folder.mkdir()
        digests[name] = _fresh_digest(_as(form, variant, folder), monkeypatch)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digests["base"])
    assert digests["one cell changed"] != digests["base"]
    assert digests["rows reordered"] == digests["base"]
    assert digests["columns reordered"] == digests["base"]


# ---------------------------------------------------------------------------------------------
# (c) a wide upload gets its content hash in the app

def test_a_wide_upload_gets_the_content_hash_of_its_file(tmp_path, monkeypatch):
    """An upload of 400 columns (the first digest failed from about 300): the hash the app
    records for a release is the digest of the file it came from, as for a narrow one."""
    assert MAX_UPLOAD_COLUMNS >= 400
    rng = np.random.default_rng(5)
    table = pd.DataFrame({f"v{i}": np.round(rng.normal(size=50), 2) for i in range(400)})
    table["city"] = rng.choice(["Oslo", "Lima", "Pune"], 50)
    data = table.to_csv(index=False).encode("utf-8")
    (tmp_path / "upload.csv").write_bytes(data)

    loaded = load_upload(data, "upload.csv")
    assert loaded.frame.shape == (50, 401)
    digest = content_hash_of(loaded)
    assert digest is not None
    assert digest == _fresh_digest(tmp_path / "upload.csv", monkeypatch)


# ---------------------------------------------------------------------------------------------
# (c) a narrow table's staged digest is the list form's, up to the widest staged table

@pytest.mark.parametrize("form", ["frame", "csv", "parquet"])
@pytest.mark.parametrize("columns", [1, 6, identity.STAGED_COLUMNS])
def test_the_staged_digest_is_the_list_forms(tmp_path, monkeypatch, form, columns):
    table = mixed_table(columns, rows=60, seed=columns + 7)
    first = table.columns[0]
    table[first] = table[first].astype(object)
    table.iloc[:6, 0] = [" 1e400 ", "-inf", "Infinity", "0x10", " TRUE ", "1_000"]  # edges
    if form == "parquet":
        table[first] = table[first].astype(str)
    data = _as(form, table, tmp_path)
    staged = _fresh_digest(data, monkeypatch)
    with monkeypatch.context() as patched:
        patched.setattr(identity, "STAGED_COLUMNS", 0)  # every table in the list form
        assert _fresh_digest(data, monkeypatch) == staged


@pytest.mark.parametrize("form", ["frame", "csv", "parquet"])
def test_typed_numbers_keep_the_digest_at_their_edges(tmp_path, monkeypatch, form):
    """A number column's value is written from its number, not its text: the same digest
    for the extremes of doubles and 64-bit integers, NaN of either sign, infinities, -0 and
    float32 (whose text is not its double's)."""
    doubles = np.array([5e-324, 1.7976931348623157e308, -0.0, np.nan, -np.nan, np.inf, -np.inf,
                        0.1, 1 / 3, 2.0**53 + 2, 1e22, -2.5e-310])
    rng = np.random.default_rng(5)
    table = pd.DataFrame({
        "double": doubles,
        "int64": np.array([2**63 - 1, -2**63, 2**53 + 1, 0, -1, 7, *rng.integers(-10**18, 10**18,
                                                                                 6)]),
        "uint64": np.array([2**64 - 1, 2**53 + 1, *range(10)], dtype=np.uint64),
        "float32": doubles.astype(np.float32),
        "int8": np.arange(-6, 6, dtype=np.int8),
        "random": rng.standard_normal(12) * 10.0 ** rng.integers(-300, 300, 12),
    })
    data = _as(form, table, tmp_path)
    assert _fresh_digest(data, monkeypatch) == _reference_digest(data, monkeypatch)


def test_integers_beyond_64_bits_keep_the_digest_of_their_text(tmp_path, monkeypatch):
    """Python integers past 64 bits (a frame DuckDB reads as HUGEINT): DuckDB's HUGEINT to
    DOUBLE rounds twice (20950946717816088603 lands one double off its text's), so such a
    value must be written through its text: the first version's digest, and its CSV's."""
    table = pd.DataFrame({"big": [20950946717816088603, 2**64 + 2049, -(2**70) - 1, 7]})
    table.to_csv(tmp_path / "big.csv", index=False)
    digest = _fresh_digest(table, monkeypatch)
    assert digest == _reference_digest(table, monkeypatch)
    assert digest == _fresh_digest(FileSource(tmp_path / "big.csv", "csv"), monkeypatch)
