"""The unit's one truncation (issue 37, item 2): every query under the same bounds reads the
same kept rows of each person, ranked once over the person's whole rows; checked against the
pandas reference (``engine_reference.row_ranks``) and by queries that must agree row by row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import (
    Binned,
    BoundedSum,
    CategoryCounts,
    Contribution,
    CountRows,
    FileSource,
    FrameSource,
    GroupedSum,
    JointCells,
)
from engine.duckdb_backend import DuckDBBackend
from tests import engine_reference as ref


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=2)


def one_person() -> pd.DataFrame:
    """One person with four rows: one has a value of x (in cell "a"), three have none (in
    cell "b"); a second person with one row."""
    return pd.DataFrame({"p": [1, 1, 1, 1, 2], "x": [10.0, np.nan, np.nan, np.nan, 1.0],
                         "c": ["a", "b", "b", "b", "a"]})


def cells_of(joint) -> dict:
    """A joint aggregate's non-empty cells, in no order: {codes: count}."""
    return dict(zip(map(tuple, joint.codes.tolist()), joint.counts.tolist(), strict=True))


@pytest.mark.parametrize("seed", range(12))
def test_every_query_reads_the_same_kept_row(duck, seed) -> None:
    frame = one_person()
    source = FrameSource(frame)
    unit = Contribution("p", 1, seed=seed)
    ranks = ref.row_ranks(frame, "p", seed)
    kept = frame[ranks == 1]
    has_value = bool(kept["x"].notna().sum() == 2)   # person 1 kept its row with a value
    total = duck.run(source, BoundedSum("x", 0.0, 100.0, unit))
    assert total.total == (11.0 if has_value else 1.0)
    assert total.rows == (2 if has_value else 1)
    counts = duck.run(source, CategoryCounts("c", ("a", "b"), unit)).counts
    assert counts.tolist() == ([2, 0] if has_value else [1, 1])
    by_key = duck.run(source, GroupedSum("c", ("a", "b"), "x", 0.0, 100.0, unit))
    assert by_key.totals.tolist() == ([11.0, 0.0] if has_value else [1.0, 0.0])
    bins = duck.run(source, Binned("x", (0.0, 5.0, 20.0), contribution=unit)).counts
    assert bins.tolist() == ([0, 1, 1, 0] if has_value else [0, 1, 0, 0])
    joint = duck.run(source, JointCells(("c",), (("a", "b"),), (False,), unit))
    table = dict(zip(joint.codes[:, 0].tolist(), joint.counts.tolist(), strict=True))
    assert table == ({0: 2} if has_value else {0: 1, 1: 1})
    assert duck.run(source, CountRows(unit)).rows == 2


def test_a_sum_no_longer_keeps_only_rows_with_a_value(duck) -> None:
    """Before: a sum ranked only the rows that have a value, so person 1 always kept 10.
    Now the row kept is one of the four, the same as every other query's: over twelve seeds
    both kinds of row are kept (the reference says which: 3 of 12 keep the value)."""
    frame = one_person()
    totals = {duck.run(FrameSource(frame), BoundedSum("x", 0.0, 100.0,
                                                      Contribution("p", 1, seed=s))).total
              for s in range(12)}
    expected = {11.0 if (ref.row_ranks(frame, "p", s)[0] == 1) else 1.0 for s in range(12)}
    assert totals == expected == {1.0, 11.0}


@pytest.mark.parametrize("seed", range(3))
def test_a_csv_read_as_text_keeps_the_rows_its_frame_keeps(duck, tmp_path, seed) -> None:
    """The page's frame (typed) and the release's CSV cells (text) sort a person's rows
    alike, so they keep the same rows: numbers written 1.50, 1.5 and 1.5e0, ids 7 and 07."""
    rng = np.random.default_rng(seed)
    n = 400
    frame = pd.DataFrame({
        "p": rng.integers(0, 60, size=n),
        "x": rng.choice([0.5, 1.5, 2.0, -0.0, 0.0, 3.25, np.nan], size=n),
        "c": rng.choice(["a", "b", " a", "z"], size=n),
        "k": rng.integers(0, 4, size=n),
    })
    path = tmp_path / "data.csv"
    text = frame.astype(object).where(frame.notna(), "").astype(str)
    text["x"] = text["x"].replace({"1.5": "1.50", "2.0": "2"})
    text.to_csv(path, index=False)
    csv = FileSource(path, "csv")
    for k, groups in ((1, None), (3, None), (2, 2)):
        unit = Contribution("p", k, groups, seed)
        for query in (BoundedSum("x", 0.0, 3.0, Contribution("p", k, seed=seed)),
                      CategoryCounts("c", ("a", "b"), unit),
                      GroupedSum("k", (0, 1, 2, 3), "x", 0.0, 3.0, unit),
                      Binned("x", (0.0, 1.0, 2.0, 4.0), contribution=unit)):
            ref.assert_same(query, duck.run(FrameSource(frame), query), duck.run(csv, query))


def test_spark_keeps_the_rows_duckdb_and_the_reference_keep(shared_spark, duck, tmp_path):
    """Spark's one truncation is DuckDB's: on the one person of four rows (every seed here
    keeps a different row of it somewhere), and on a CSV of text cells (numbers written
    1.50, " a" beside "a", -0.0 beside 0.0)."""
    from engine.spark_backend import SparkBackend

    spark = SparkBackend(session=shared_spark)
    frame = one_person()
    for seed in range(4):
        unit = Contribution("p", 1, seed=seed)
        for query in (BoundedSum("x", 0.0, 100.0, unit), CategoryCounts("c", ("a", "b"), unit),
                      GroupedSum("c", ("a", "b"), "x", 0.0, 100.0, unit)):
            ref.assert_same(query, spark.run(FrameSource(frame), query),
                            duck.run(FrameSource(frame), query))
        joint = JointCells(("c",), (("a", "b"),), (False,), unit)
        assert cells_of(spark.run(FrameSource(frame), joint)) == cells_of(
            duck.run(FrameSource(frame), joint))
    rng = np.random.default_rng(5)
    n = 300
    cells = pd.DataFrame({"p": rng.integers(0, 40, size=n).astype(str),
                          "x": rng.choice(["0.5", "1.50", "1.5", "2", "-0.0", "0.0", "", "w"],
                                          size=n),
                          "c": rng.choice(["a", "b", " a", "z"], size=n)})
    path = tmp_path / "cells.csv"
    cells.to_csv(path, index=False)
    csv = FileSource(path, "csv")
    for k, groups in ((1, None), (2, 2)):
        unit = Contribution("p", k, groups, 3)
        for query in (BoundedSum("x", 0.0, 3.0, Contribution("p", k, seed=3)),
                      CategoryCounts("c", ("a", "b"), unit),
                      GroupedSum("c", ("a", "b"), "x", 0.0, 3.0, unit)):
            ref.assert_same(query, spark.run(csv, query), duck.run(csv, query))


def flags() -> pd.DataFrame:
    """Three rows a person (max rows 2 drops one): a boolean column before a number column,
    so a boolean sorted as a number (first, before x) and as a text (after x: it reads as no
    number) order a person's rows differently."""
    rng = np.random.default_rng(0)
    n = 300
    return pd.DataFrame({"p": np.repeat(np.arange(n // 3), 3),
                         "flag": rng.integers(0, 2, size=n).astype(bool),
                         "x": rng.integers(0, 10, size=n).astype(float)})


def flags_files(tmp_path) -> tuple[FileSource, FileSource, pd.DataFrame]:
    """``flags()`` as a Parquet file (a typed boolean) and as a CSV (the text "true" and
    "false", as DuckDB and Spark write a boolean), and the CSV's cells as the reference
    reads them (the flag as its text)."""
    frame = flags()
    frame.to_parquet(tmp_path / "flags.parquet", index=False)
    text = frame.assign(flag=frame["flag"].map({True: "true", False: "false"}))
    text.to_csv(tmp_path / "flags.csv", index=False)
    return (FileSource(tmp_path / "flags.parquet", "parquet"),
            FileSource(tmp_path / "flags.csv", "csv"), text)


@pytest.mark.parametrize("seed", range(3))
def test_a_boolean_column_keeps_the_same_rows_in_parquet_and_csv(duck, tmp_path, seed):
    """A person's rows sort the same whether a boolean column is typed (Parquet, a page's
    frame) or text (the same table as a CSV): before, a typed boolean sorted as 0/1 first
    among the numbers and the CSV's "true"/"false" (no number) only after them, so the two
    kept different rows and the page's true answer was not the release's."""
    parquet, csv, text = flags_files(tmp_path)
    frame = flags()
    query = BoundedSum("x", 0.0, 10.0, Contribution("p", 2, seed=seed))
    typed_total = ref.bounded_sum_per_person(frame, "x", 0.0, 10.0, "p", 2, seed)["total"]
    text_total = ref.bounded_sum_per_person(text, "x", 0.0, 10.0, "p", 2, seed)["total"]
    assert typed_total == text_total            # the reference: one order for both readings
    for source in (parquet, csv, FrameSource(frame)):
        assert duck.run(source, query).total == typed_total
    ranks = ref.row_ranks(frame, "p", seed)
    assert (ranks == ref.row_ranks(text, "p", seed)).all()
    assert int(((ranks >= 1) & (ranks <= 2)).sum()) == 200   # max rows bites for everyone


@pytest.mark.parametrize("seed", range(5))
def test_a_boolean_person_id_is_hashed_as_the_one_rule_writes_it(duck, seed):
    """A boolean person id keys its rows as "true"/"false" (engine.cells), on the engine and
    in the pandas reference: the reference hashed Python's "True", so with max rows 2 of 6
    it kept other rows than the engine (totals 12 against 13 at seed 0)."""
    frame = pd.DataFrame({"p": [True] * 6 + [False] * 6, "x": [1., 2., 3., 4., 5., 6.] * 2})
    query = BoundedSum("x", 0.0, 10.0, Contribution("p", 2, seed=seed))
    expected = ref.bounded_sum_per_person(frame, "x", 0.0, 10.0, "p", 2, seed)["total"]
    assert duck.run(FrameSource(frame), query).total == expected


def test_spark_keeps_a_boolean_columns_rows_as_duckdb(shared_spark, duck, tmp_path):
    """Spark's order of a boolean column is DuckDB's: a typed boolean (Parquet) and its CSV
    keep the same rows on both engines, as the reference does."""
    from engine.spark_backend import SparkBackend

    spark = SparkBackend(session=shared_spark)
    parquet, csv, _ = flags_files(tmp_path)
    frame = flags()
    for seed in range(2):
        query = BoundedSum("x", 0.0, 10.0, Contribution("p", 2, seed=seed))
        expected = ref.bounded_sum_per_person(frame, "x", 0.0, 10.0, "p", 2, seed)["total"]
        for source in (parquet, csv, FrameSource(frame)):
            assert spark.run(source, query).total == expected
