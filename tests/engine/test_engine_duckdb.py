"""DuckDB backend: equal to a plain pandas/Python reference and to the tests' queries_reference,
on frames and files; no user text in SQL; clear errors; aggregates cached by data version."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import (
    BoundedSum,
    CategoryCounts,
    CategoryTable,
    Contribution,
    CountRows,
    DistinctValues,
    Engine,
    EngineError,
    FileSource,
    FrameSource,
    Profile,
    RowsPerPerson,
)
from engine.duckdb_backend import DuckDBBackend
from tests import engine_reference as ref
from tests import queries_reference as dp


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=2)


@pytest.mark.parametrize("seed", range(5))
def test_random_frames_match_the_reference(duck: DuckDBBackend, seed: int) -> None:
    frame = ref.random_frame(seed)
    source = FrameSource(frame)
    for query, expected in ref.cases(frame):
        ref.assert_matches(query, duck.run(source, query), expected)


def test_agrees_with_dpcore_queries(duck: DuckDBBackend) -> None:
    """The pandas code path the engine replaces gives the same numbers."""
    frame = ref.random_frame(7)
    source = FrameSource(frame)
    assert duck.run(source, CountRows()).rows == dp.count(frame).true_value
    for column, lower, upper in ((ref.ODD, -1000.25, 2e6), (ref.SMALL, -3, 3),
                                 (ref.LOG, -50, 50.5), (ref.QUOTED, -2.0**61, 2.0**61)):
        want = dp.bounded_sum(frame, column, lower=lower, upper=upper)
        got = duck.run(source, BoundedSum(column, lower, upper))
        assert math.isclose(got.total, float(want.true_value), rel_tol=1e-9)
        assert (got.clamped, got.missing) == (want.clamped_rows, want.missing_rows)
        _, count = dp.bounded_mean_parts(frame, column, lower=lower, upper=upper)
        assert got.rows == count.true_value
    every = ("red", "green", "blue", "purple", "Red")
    want = dp.histogram(frame, ref.SEMI, categories=list(every))
    got = duck.run(source, CategoryCounts(ref.SEMI, every))
    np.testing.assert_array_equal(got.counts, want.true_value)
    assert (got.outside, got.missing) == (0, want.missing_rows)
    codes = tuple(range(6))
    want = dp.crosstab(frame, ref.DOTTED, ref.CODE, row_categories=list(every),
                       column_categories=list(codes))
    got = duck.run(source, CategoryTable(ref.DOTTED, ref.CODE, every, codes))
    np.testing.assert_array_equal(got.counts, want.true_value)
    assert got.missing == want.missing_rows


def _write_files(frame: pd.DataFrame, folder) -> dict[str, FileSource]:
    csv = folder / "it's; odd.csv"
    frame.to_csv(csv, index=False)
    gz = folder / "data.csv.gz"
    frame.to_csv(gz, index=False, compression="gzip")
    parquet = folder / "data.parquet"
    frame.to_parquet(parquet, index=False)
    parts = folder / "parts"
    parts.mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_parquet(parts / "part-0.parquet", index=False)
    frame.iloc[half:].to_parquet(parts / "part-1.parquet", index=False)
    return {"csv": FileSource(csv, "csv"), "csv.gz": FileSource(gz, "csv"),
            "parquet": FileSource(parquet, "parquet"), "folder": FileSource(parts, "parquet")}


def test_files_give_the_frame_answers(duck: DuckDBBackend, tmp_path) -> None:
    """CSV, CSV.gz, Parquet and a Parquet folder: the same aggregates as the frame itself.

    The file holds odd names (quotes, semicolons, unicode) in its header and a quote and a
    semicolon in its own name: both reach DuckDB only as bound parameters or positions.
    """
    frame = ref.random_frame(3, rows=200)[[ref.ODD, ref.SEMI, ref.WHO, ref.CODE, ref.PERSON]]
    frame = frame.assign(**{ref.ODD: frame[ref.ODD].replace([np.inf, -np.inf, 1e300, -1e300],
                                                            [5e6, -5e6, 1e7, -1e7])})
    frame_source = FrameSource(frame)
    checks = [CountRows(), BoundedSum(ref.ODD, -1000.25, 2e6),
              CategoryCounts(ref.SEMI, ref.DECLARED),
              CategoryTable(ref.SEMI, ref.CODE, ref.DECLARED, ref.CODE_CATEGORIES),
              RowsPerPerson(ref.WHO),
              BoundedSum(ref.ODD, -1000.25, 2e6, Contribution(ref.PERSON, 2, seed=4)),
              CategoryCounts(ref.SEMI, ref.DECLARED, Contribution(ref.WHO, 3, 2, seed=1))]
    for name, source in _write_files(frame, tmp_path).items():
        assert [c.name for c in duck.columns(source)] == list(frame.columns), name
        for query in checks:
            ref.assert_same((name, query), duck.run(frame_source, query),
                            duck.run(source, query))


def test_nan_in_a_parquet_file_is_missing(duck: DuckDBBackend, tmp_path) -> None:
    """Parquet keeps NaN apart from null; both are missing, as in pandas. ±inf is clamped."""
    values = [1.5, float("nan"), None, float("inf"), float("-inf"), 2.0, float("nan")]
    table = pa.table({"x": pa.array(values, type=pa.float64(), from_pandas=False)})
    path = tmp_path / "nan.parquet"
    pq.write_table(table, path)
    assert pq.read_table(path).column("x").null_count == 1  # NaN stayed NaN in the file
    got = duck.run(FileSource(path, "parquet"), BoundedSum("x", 0, 10))
    assert (got.total, got.rows, got.missing, got.clamped) == (1.5 + 10 + 0 + 2, 4, 3, 2)
    hist = duck.run(FileSource(path, "parquet"), CategoryCounts("x", (1.5, 2.0)))
    assert (hist.counts.tolist(), hist.outside, hist.missing) == ([1, 1], 2, 3)


def test_no_user_text_reaches_the_sql(duck: DuckDBBackend) -> None:
    frame = ref.random_frame(1, rows=50)
    source = FrameSource(frame)
    query = CategoryCounts(ref.ODD, (1.0,), Contribution(ref.WHO, 2, 1, seed=3))
    statements = duck.sql_for(source, query) + duck.sql_for(
        source, CategoryTable(ref.QUOTED, ref.WHO, (1,), ("'; drop table y; --",)))
    for sql, _ in statements:
        for text in (ref.ODD, ref.QUOTED, ref.WHO, "drop table"):
            assert text not in sql
    assert any("'; drop table y; --" in params.get("ccats", []) for _, params in statements)


def test_distinct_values_sorted_and_limited(duck: DuckDBBackend) -> None:
    frame = pd.DataFrame({"c": pd.Categorical(["b", "a", None, "c", "a"],
                                              categories=["c", "b", "a", "z"])})
    source = FrameSource(frame)
    got = duck.run(source, DistinctValues("c"))
    assert (got.values, got.more) == (("a", "b", "c"), False)
    got = duck.run(source, DistinctValues("c", limit=2, exclude=("a",)))
    assert (got.values, got.more) == (("b", "c"), False)
    got = duck.run(source, DistinctValues("c", limit=2))
    assert (got.values, got.more) == (("a", "b"), True)
    got = duck.run(source, DistinctValues("c", limit=None))  # all of them
    assert (got.values, got.more) == (("a", "b", "c"), False)


def test_errors_say_what_is_wrong(duck: DuckDBBackend, tmp_path) -> None:
    frame = pd.DataFrame({"age": [30, 40], "name": ["x", "y"]})
    source = FrameSource(frame, "people")
    with pytest.raises(EngineError, match="'agee' is not a column of the data 'people'"):
        duck.run(source, BoundedSum("agee", 0, 1))
    # a text column is read row by row (tests/engine/test_engine_rows.py): no number, no value
    text = duck.run(source, BoundedSum("name", 0, 1))
    assert (text.rows, text.missing, text.total) == (0, 2, 0.0)
    with pytest.raises(EngineError, match="person-id column 'pid'"):
        duck.run(source, CountRows(Contribution("pid", 1)))
    path = tmp_path / "gone.parquet"
    frame.to_parquet(path)
    gone = FileSource(path, "parquet")
    assert duck.run(gone, CountRows()).rows == 2
    path.unlink()
    with pytest.raises(EngineError, match="moved or removed"):
        duck.run(gone, CountRows())
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(EngineError, match="broken.parquet"):
        duck.run(FileSource(broken, "parquet"), CountRows())
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("n\n" + "1\n" * 30000 + "not a number\n")
    # What a release reads takes each row on its own: the word is missing, nothing refused
    # (tests/engine/test_engine_rows.py); what the pages show about the columns names it.
    summed = duck.run(FileSource(bad_csv, "csv"), BoundedSum("n", 0, 1))
    assert (summed.total, summed.rows, summed.missing) == (30000, 30000, 1)
    # The pages' profile reads the sniffer's guessed type, and a cell past its sample that
    # is not of that type is missing there too: one record never fails a reading (issue 31).
    profile = duck.run(FileSource(bad_csv, "csv"), Profile())
    assert (profile.rows, profile.columns[0].missing) == (30001, 1)


def test_cache_by_data_version(duck: DuckDBBackend, tmp_path) -> None:
    """Asking again (ε moved) scans nothing; a rewritten file is scanned again."""
    engine = Engine(duck)
    path = tmp_path / "d.parquet"
    pd.DataFrame({"x": [1.0, 2.0]}).to_parquet(path)
    source = FileSource(path, "parquet")
    query = BoundedSum("x", 0, 10)
    assert engine.answer(source, query).total == 3.0
    assert engine.answer(source, BoundedSum("x", 0.0, 10.0)).total == 3.0
    assert engine.scans == 1
    pd.DataFrame({"x": [1.0, 2.0, 4.0]}).to_parquet(path)
    os.utime(path, ns=(1, 1))  # a new modification time, whatever the clock's resolution
    assert engine.answer(source, query).total == 7.0
    assert engine.scans == 2
    uploads = [FrameSource(pd.DataFrame({"x": [float(i)]})) for i in range(2)]
    assert [engine.answer(u, query).total for u in uploads] == [0.0, 1.0]
    engine.forget(uploads[0])
    engine.answer(uploads[0], query)
    assert engine.scans == 5


def test_backend_compiles_once(duck: DuckDBBackend) -> None:
    from engine.duckdb_backend import _compile

    frame = ref.random_frame(2, rows=20)
    source = FrameSource(frame)
    query = CategoryCounts(ref.SEMI, ref.DECLARED)
    duck.run(source, query)
    before = _compile.cache_info().hits
    duck.run(FrameSource(frame), query)
    assert _compile.cache_info().hits == before + 1
