"""A plan's queries read a CSV once (issue 37, item 6): ``DuckDBBackend.run_many`` reads the
file once into a table of each cell's readings (its text, canonical key and number, each
computed once) that every statement reads; each answer is still ``run``'s, and each key and
number is still the one reading's (``engine.cells``, the pure-Python rule)."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pandas as pd
import pytest

from engine import (
    BoundedSum,
    CategoryCounts,
    Contribution,
    CountRows,
    DistinctValues,
    FileSource,
    GroupedSum,
    PersonCells,
    RowsPerPerson,
    cells,
)
from engine.duckdb_backend import (
    _TEXT,
    DuckDBBackend,
    _key,
    _readings_table,
    _text_missing,
    _text_number,
    csv_text_reader,
)
from tests.engine.test_engine_one_scan import assert_same, plan, spy_statements, varied


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=2)


#: Cells whose reading is not their text: white space of every kind at either end (one of
#: them before a combining mark, which makes one grapheme of the two), missing markers,
#: numbers written several ways, and texts that are no number.
TEXTS = [
    "12", "012", " 12", "12\t", "\u00a012", "12\u202f", "\u300012\u3000", "1.2e1", "+12",
    "12.0", "-0", "1_2", "1.5", " 1.50 ", "2**60", "9007199254740993", "1e300", "inf",
    "-Infinity", "nan", "NaN", " NA ", "null", "\tN/A", "#n/a", "<NA>", "", " ", "\u2003",
    " \u0308a", "a\u0308 ", "\u0308", "ab", " ab", "ab\n", "a b", "x\u00a0", "region 03",
    "é", "12,500", "\u200b12",
]


def test_the_sql_reads_each_cell_as_the_one_reading(tmp_path) -> None:
    """The per-use SQL of a key, of whether a cell is missing and of its number, and the
    readings table's columns, read every cell of ``TEXTS`` as ``engine.cells`` does."""
    con = duckdb.connect()
    con.execute("CREATE TABLE cells (c0 VARCHAR)")
    con.executemany("INSERT INTO cells VALUES (?)", [[t] for t in TEXTS])
    x = '"c0"'
    per_use = con.execute(f"SELECT c0, {_key(x, _TEXT)}, {_text_missing(x)}, "
                          f"{_text_number(x)} FROM cells").fetchall()
    con.execute(_readings_table("r", "cells", 1, '"c0" "c0_key" "c0_num"'))
    table = con.execute('SELECT c0, c0_key, c0_num FROM r').fetchall()
    assert len(per_use) == len(table) == len(TEXTS)
    by_text = {text: (key, number) for text, key, number in table}
    for text, key, missing, number in per_use:
        number = None if number is None or np.isnan(number) else number
        assert key == cells.cell_key(text), repr(text)
        assert missing == (cells.cell_key(text) is None), repr(text)
        assert number == cells.cell_number(text), repr(text)
        stored_key, stored_number = by_text[text]
        assert stored_key == key, repr(text)
        assert (None if stored_number is None or np.isnan(stored_number)
                else stored_number) == number, repr(text)


def messy(seed: int = 5) -> pd.DataFrame:
    """``varied``'s table with its cells written as a hand-made CSV might hold them: ids with
    white space and leading zeros, missing ids and values written as markers, values with
    white space, a thousands separator (no number), and categories with white space."""
    rng = np.random.default_rng(seed)
    frame = varied(seed=seed).astype(object)
    n = len(frame)
    frame["p"] = [rng.choice([f"{p}", f" {p}", f"00{p}", f"{p}.0", f"{p}\t"])
                  for p in frame["p"]]
    frame.loc[rng.random(n) < 0.03, "p"] = " NA "
    frame["x"] = [rng.choice(["null", " n/a", ""]) if pd.isna(v) else
                  rng.choice([f"{v}", f" {v} ", f"{v:.3f}", "12,500"], p=[.4, .3, .28, .02])
                  for v in frame["x"]]
    frame["c"] = [rng.choice([c, f" {c}", f"{c}\u00a0"]) for c in frame["c"]]
    return frame


def the_plan(unit: Contribution) -> list:
    """``test_engine_one_scan.plan`` and every other query that reads a CSV as text: rows per
    person, a person's cells, every key of a column, queries under another unit and under
    none."""
    other = Contribution(unit.person, 1, seed=unit.seed + 1)
    return plan(unit) + [
        RowsPerPerson("p"), DistinctValues("c", limit=None), DistinctValues("p", limit=None),
        PersonCells("p", column="x", lower=0.0, upper=30.0),
        PersonCells("p", column="c", categories=("a", "b")),
        CategoryCounts("c", ("a", "b", "c"), other), BoundedSum("x", 0.0, 30.0, other),
        CountRows(), BoundedSum("w", 0, 25), GroupedSum("d", ("u", "v"), "x", 0.0, 30.0),
    ]


@pytest.mark.parametrize("seed", [0, 3])
def test_reading_once_answers_as_each_query_alone(duck, tmp_path, seed) -> None:
    path = tmp_path / "messy.csv"
    messy(seed).to_csv(path, index=False)
    source = FileSource(path, "csv")
    # and examples of a column's values, which read the guessed types (as run does)
    queries = the_plan(Contribution("p", 2, seed=seed)) + [DistinctValues("c")]
    many = duck.run_many(source, queries)
    assert len(many) == len(queries)
    for query, answer in zip(queries, many, strict=True):
        assert_same(duck.run(source, query), answer)


def test_a_plan_reads_a_csv_once(duck, tmp_path, monkeypatch) -> None:
    """Every statement that reads the file is counted: one for the plan's queries together
    (``run_many``); with ``run``, one or more per query."""
    statements = spy_statements(monkeypatch)
    path = tmp_path / "messy.csv"
    messy().to_csv(path, index=False)
    source = FileSource(path, "csv")
    queries = the_plan(Contribution("p", 2, seed=1))
    duck.columns(source)           # the header and the sniffed types, read once per version
    statements.clear()
    duck.run_many(source, queries)
    assert sum("read_csv(" in s for s in statements) == 1
    statements.clear()
    for query in queries:
        duck.run(source, query)
    assert sum("read_csv(" in s for s in statements) >= len(queries)


def test_a_plan_read_as_text_never_types_the_columns(tmp_path, monkeypatch) -> None:
    """A new backend answering a plan of queries that read a CSV as text reads its header
    alone for the columns: the types (``_csv_types``, a parse of every cell) are for what the
    pages show (issue 37: a release parsed the file twice, once for types it did not use)."""
    typed: list[str] = []
    csv_types = DuckDBBackend._csv_types

    def spy(self, source, width):
        typed.append(source.describe())
        return csv_types(self, source, width)

    monkeypatch.setattr(DuckDBBackend, "_csv_types", spy)
    path = tmp_path / "messy.csv"
    messy().to_csv(path, index=False)
    source = FileSource(path, "csv")
    queries = the_plan(Contribution("p", 2, seed=1))
    fresh = DuckDBBackend(threads=2)
    many = fresh.run_many(source, queries)
    alone = [fresh.run(source, query) for query in queries]
    assert typed == []
    fresh.columns(source)               # what the pages ask: the types, read once
    assert len(typed) == 1
    for one, answer in zip(alone, many, strict=True):
        assert_same(one, answer)


def test_a_file_with_no_quote_is_still_read_by_the_serial_scanner(tmp_path):
    """DuckDB 1.5.6's parallel CSV scanner, with this reader's options, read some records
    twice where a ~32 MB buffer ends among blank lines or mixed line ends — even in a file
    with no quote character (a review measured 8,000,002 records from 8,000,000 one-column
    rows each followed by blank lines). A quote-free file was briefly read in parallel; every
    CSV is read serially, whatever it holds (too large a file to build here: the reader's
    statement is checked instead)."""
    path = tmp_path / "plain.csv"
    path.write_text("a,b\n1,2\n\n\n3,4\r\n5,6\r7,8\n")
    reader, _, _ = csv_text_reader(FileSource(path, "csv"))
    assert "parallel = false" in reader
    assert "parallel = true" not in reader


def test_the_readings_table_holds_only_the_readings_the_queries_read(duck, tmp_path,
                                                                      monkeypatch) -> None:
    """The readings table holds a column's number only where a query reads it (a sum's
    values): the content order's numbers of the other columns are computed in the ranking,
    for the rows of a person above max rows only, from their texts, which only those rows
    carry (issue 37: on main every column had its number in the table, computed for every
    cell because the order reads them, and every row carried every text and number through
    the count's window). The answers stay ``run``'s, each query alone on the file's per-use
    SQL."""
    statements = spy_statements(monkeypatch)
    path = tmp_path / "messy.csv"
    frame = messy()
    frame[["p", "x", "w", "c", "d"]].to_csv(path, index=False)   # p c0, x c1, w c2, c c3, d c4
    source = FileSource(path, "csv")
    unit = Contribution("p", 2, seed=4)
    queries = [CountRows(unit), BoundedSum("x", 0.0, 30.0, unit),
               CategoryCounts("c", ("a", "b"), unit)]
    many = duck.run_many(source, queries)
    build = [s for s in statements if s.startswith("CREATE TEMP TABLE read_")]
    assert len(build) == 1
    listed = build[0].split(" FROM ", 1)[0]
    # every text (the order's ties), the person's and the category's keys, x's number
    for name in ('"c0"', '"c1"', '"c2"', '"c3"', '"c4"', '"c0_key"', '"c3_key"', '"c1_num"'):
        assert name in listed, name
    for name in ('"c0_num"', '"c2_num"', '"c3_num"', '"c4_num"'):
        assert name not in build[0], name
    ranking = [s for s in statements if s.startswith("CREATE TEMP TABLE kept_")]
    assert len(ranking) == 1
    # what the ranking's rows carry through the count's window (its CTE b): the sum's
    # number, no other, and no text: the order's texts are joined back by row id for the
    # rows of a person above max rows alone
    b = ranking[0].split(" bn AS ", 1)[0]
    assert set(re.findall(r'"c\d+_num"', b)) == {'"c1_num"'}
    assert re.findall(r'"c\d+"', b) == [] and "rowid AS rid" in b
    for query, answer in zip(queries, many, strict=True):
        assert_same(duck.run(source, query), answer)
