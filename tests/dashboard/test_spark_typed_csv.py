"""The Data page's view of a messy CSV on Spark is DuckDB's: the same column types, minimum,
maximum, missing and distinct counts and the same values (``dashboard.data.column_facts``
over each engine), because Spark's typed reading follows the one rule (``engine.cells``:
``column_type`` over each cell's reading), as DuckDB's does.

Spark's own rule (its ``trim``, its cast, every cell a number) read ``1d`` and ``0x1p3`` as
numbers, no number with a no-break space or an underscore, a padded `` NULL `` as a present
text, a column of numbers with one text as text, and whole numbers with a missing cell as
integers. The test run's one small local Spark session (``shared_spark``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.data import column_facts
from dashboard.data.relation import Relation
from engine import FileSource
from engine.cells import cell_number, column_type, is_missing, strip_text
from engine.duckdb_backend import DuckDBBackend
from engine.service import Engine

ROWS = 40
NBSP = "\u00a0"


def _column(head: list[str], fill: str = "{i}") -> list[str]:
    """``head`` then numbered cells up to ``ROWS`` (plain whole numbers by default)."""
    return head + [fill.format(i=i) for i in range(len(head), ROWS)]


#: Each column holds one difficulty; the comment says what the rule makes of it.
MESSY = {
    # white space around numbers, a no-break space among it: whole numbers
    "spaced": _column([" 1", f"2{NBSP}", f"{NBSP}3 ", "\t4 ", f" {NBSP}5{NBSP} "]),
    # digits grouped by underscores read without them: whole numbers
    "grouped": _column(["1_000", "-2_500", "3_0"]),
    # missing markers in several cases and with spaces around: missing; the rest numbers
    "marked": _column(["NA", "n/a", " NULL ", "Nan", "<na>", "#N/A", "", f"{NBSP}null"],
                      "{i}.5"),
    # Java's suffixes and hexadecimal floats are no numbers (38 of 40 cells are)
    "suffixed": _column(["1d", "0x1p3"], "{i}.25"),
    # infinities are numbers
    "infinite": _column(["inf", "-Infinity", "+INF"], "{i}.0"),
    # whole numbers and one decimal: numbers, not whole
    "one_decimal": _column(["2.5"]),
    # whole numbers and one missing cell: numbers, not whole
    "one_missing": _column(["NA"]),
    # numbers and one text (39 of 40 cells: at least 95 % are numbers): numbers
    "one_text": _column(["oops"], "{i}.75"),
    # text with white space around: one value however it is padded
    "label": _column([" a", f"a{NBSP}", "b ", "NULL", "b"], "{i}x"),
}


@pytest.fixture(scope="module")
def messy_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("messy") / "messy.csv"
    frame = pd.DataFrame(MESSY)
    path.write_text(frame.to_csv(index=False), encoding="utf-8")
    return path


def expected_types() -> dict[str, str]:
    """Each column's kind by the rule, computed from ``engine.cells``' cell readers in plain
    Python (an independent reading: not the SQL or the Spark expressions under test)."""
    kinds = {"BIGINT": "integer", "DOUBLE": "float", "VARCHAR": "text"}
    out = {}
    for name, cells in MESSY.items():
        numbers = [cell_number(c) for c in cells]
        present = sum(not is_missing(c) or n is not None for c, n in zip(cells, numbers,
                                                                          strict=True))
        whole = all(n is not None and np.isfinite(n) and n == int(n) and abs(n) < 2**53
                    for n in numbers)
        read = sum(n is not None for n in numbers)
        out[name] = kinds[column_type(present, read, whole)]
    return out


def test_the_rule_reads_the_messy_columns_as_their_comments_say():
    assert expected_types() == {
        "spaced": "integer", "grouped": "integer", "marked": "float", "suffixed": "float",
        "infinite": "float", "one_decimal": "float", "one_missing": "float",
        "one_text": "float", "label": "text"}


def _data_page(backend, path, monkeypatch):
    """What the Data page shows of the file on ``backend``: the column profile table, the
    columns offered as numbers, and the rows (as column_facts computes them)."""
    import dashboard.data.relation as relation_module

    engine = Engine(backend)
    monkeypatch.setattr(relation_module, "engine", lambda: engine)
    relation = Relation(FileSource(path, "csv"))
    return (column_facts.profile_table(relation), column_facts.numeric_columns(relation),
            column_facts.first_rows(relation, ROWS + 5))


def test_spark_shows_duckdbs_profile_of_a_messy_csv(shared_spark, messy_csv, monkeypatch):
    from engine.spark_backend import SparkBackend

    duck_profile, duck_numeric, duck_rows = _data_page(DuckDBBackend(threads=1), messy_csv,
                                                       monkeypatch)
    spark = SparkBackend(session=shared_spark)
    spark_profile, spark_numeric, spark_rows = _data_page(spark, messy_csv, monkeypatch)

    # DuckDB follows the rule (its own tests), so both show the types the rule gives
    kinds = {c.name: c.kind for c in spark.columns(FileSource(messy_csv, "csv"))}
    assert kinds == expected_types()
    numeric = [n for n, k in expected_types().items() if k != "text"]
    assert spark_numeric == duck_numeric == numeric
    pd.testing.assert_frame_equal(spark_profile, duck_profile)

    # hand-checked figures: what each column's cells read as
    by = spark_profile.set_index("column")
    assert by.loc["spaced", ["min", "max", "missing"]].tolist() == [1, 39, 0]
    assert by.loc["grouped", ["min", "max", "missing"]].tolist() == [-2500, 1000, 0]
    assert by.loc["marked", ["min", "max", "missing"]].tolist() == [8.5, 39.5, 8]
    assert by.loc["suffixed", ["min", "max", "missing"]].tolist() == [2.25, 39.25, 2]
    assert by.loc["infinite", ["min", "max", "missing"]].tolist() == [-np.inf, np.inf, 0]
    assert by.loc["one_text", ["min", "max", "missing"]].tolist() == [1.75, 39.75, 1]
    assert by.loc["one_missing", "missing"] == 1
    assert by.loc["label", ["missing", "distinct"]].tolist() == [1, 2 + ROWS - 5]

    # the same values, row by row (Spark reads one small file in its order)
    assert len(spark_rows) == len(duck_rows) == ROWS
    for name in MESSY:
        a, b = spark_rows[name].tolist(), duck_rows[name].tolist()
        if kinds[name] == "text":
            assert [None if is_missing(x) else x for x in a] == [
                None if is_missing(x) else x for x in b], name
            assert all(is_missing(x) or x == strip_text(x) for x in a), name
        else:
            np.testing.assert_array_equal(np.asarray(a, dtype=float),
                                          np.asarray(b, dtype=float), err_msg=name)
