"""The missing markers in DuckDB's SQL (issue 37): the engine tests them with
``list_contains``, not an ``IN`` list (which DuckDB plans as a mark join whose key is computed
for every row), and finds exactly the cells ``engine.cells.is_missing`` (the one rule) finds
missing, cell by cell, on tricky cells, from a frame and from a CSV file."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

from engine import CategoryCounts, Contribution, CountRows, FileSource, FrameSource
from engine.cells import is_missing
from engine.duckdb_backend import _TEXT, DuckDBBackend, _key, _text_missing


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=1)


#: Cells a marker test could get wrong: NULL, every marker in several letter cases and with
#: white space around it (ASCII and Unicode separators), texts close to a marker, ``None``
#: (no marker), a full-width "NA" (its lower case is no marker either) and a zero-width space,
#: which is no white space (the cell is present).
TRICKY = ["NA", " na ", "nA", "NaN", "nan", "NAN", "null", "NULL", "Null", "None", "none",
          "", " ", "\t", "\u00a0NA\u3000", "N/A", " n/a\t", "#N/A", "#n/a", "<NA>", "<na> ",
          "n a", "nul", "NA.", "na na", "\uff2e\uff21", "NA\u200b", "\u2003null\u2003", "NaN0",
          "inf", "x", "0", "q"]
FRAME_ONLY = [None, np.nan, pd.NA]


def _answers(duck: DuckDBBackend, source) -> tuple[int, int]:
    """(rows left out for a missing person id, rows whose category is missing) of the
    two-row table ``_table`` makes: each 1 exactly when the tricky cell is missing."""
    unit = Contribution("p", 1, seed=0)
    count, histogram = duck.run_many(source, [CountRows(unit),
                                              CategoryCounts("c", ("x",), unit)])
    return count.missing_person_rows, histogram.missing


def _table(cell: object) -> pd.DataFrame:
    """The tricky ``cell`` as the person id of one row and as the category of another."""
    return pd.DataFrame({"p": pd.Series([cell, "p2"], dtype=object),
                         "c": pd.Series(["x", cell], dtype=object)})


@pytest.mark.parametrize("cell", TRICKY + FRAME_ONLY, ids=repr)
def test_a_frames_cell_is_missing_by_the_one_rule(duck, cell) -> None:
    missing = int(is_missing(cell))
    assert _answers(duck, FrameSource(_table(cell))) == (missing, missing)


@pytest.mark.parametrize("cell", TRICKY, ids=repr)
def test_a_csv_cell_is_missing_by_the_one_rule(duck, tmp_path, cell) -> None:
    """Every field quoted, so its white space is the cell's; an empty field is NULL to the
    reader (``engine.cells.read_cells`` reads it as "", a marker: missing either way)."""
    path = tmp_path / "t.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows([["p", "c"], [cell, "x"], ["p2", cell]])
    missing = int(is_missing(cell))
    assert _answers(duck, FileSource(path, "csv")) == (missing, missing)


def test_the_sql_marker_test_is_the_rule_on_null_too(duck) -> None:
    """The SQL helpers themselves, on every tricky text and NULL at once: a key is NULL
    exactly where the cell is missing, and the missing test is true there (never NULL)."""
    cursor = duck._cursor()
    try:
        rows = cursor.execute(
            f"SELECT x, {_key('x', _TEXT)}, {_text_missing('x')} "
            "FROM (SELECT unnest($cells) AS x)", {"cells": [*TRICKY, None]}).fetchall()
    finally:
        cursor.close()
    assert len(rows) == len(TRICKY) + 1
    for cell, key, missing in rows:
        assert missing is is_missing(cell), repr(cell)
        assert (key is None) is is_missing(cell), repr(cell)


def test_no_mark_join_tests_the_markers(duck) -> None:
    """DuckDB plans ``x IN (...)`` of five or more constants as a mark join (its key, the text
    lowered, computed for every row); the markers' test is one function of the row."""
    cursor = duck._cursor()
    try:
        sql = (f"SELECT {_key('x', _TEXT)} AS k, {_text_missing('x')} AS m "
               "FROM (SELECT unnest($cells) AS x)")
        plan = json.loads(cursor.execute(f"EXPLAIN (FORMAT json) {sql}",
                                         {"cells": TRICKY}).fetchall()[0][1])
    finally:
        cursor.close()
    assert "JOIN" not in json.dumps(plan)
