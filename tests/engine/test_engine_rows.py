"""How the engine reads a value: row by row, never by what other rows hold.

A CSV column's type is guessed from its values, so one person's row ("n/a", "2.5") can turn
an integer column into a text or a float column. Nothing a release computes may change for
the other rows when that happens (it would be one person moving everybody's answer) and
nothing may be refused (a refusal would say what the data holds): a number column is read
as numbers, any other column's text as the number it reads as, else as missing; a sum with
whole-number noise rounds each clamped value (ties to even) and sums exactly. On DuckDB and
on Spark, against numpy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import FileSource, FrameSource
from engine.duckdb_backend import DuckDBBackend
from engine.queries import Binned, BoundedSum, Contribution, GroupedSum


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=1)


def _whole_sum(values: np.ndarray, lower: float, upper: float) -> int:
    return int(np.sum(np.round(np.clip(values, lower, upper))))   # numpy rounds half to even


def test_a_whole_sum_rounds_each_clamped_value(duck):
    values = np.array([0.5, 1.5, 2.5, -0.5, 7.49, 9.5, 12.0, np.nan, 3.25])
    frame = pd.DataFrame({"x": values, "pid": [1, 1, 2, 2, 3, 3, 4, 4, 5],
                          "g": list("aabbaabba")})
    agg = duck.run(FrameSource(frame), BoundedSum("x", 0, 10, whole=True))
    assert agg.exact and agg.total == _whole_sum(values[~np.isnan(values)], 0, 10) == 34
    assert duck.run(FrameSource(frame), BoundedSum("x", 0, 10)).total == pytest.approx(
        float(np.nansum(np.clip(values, 0, 10))))
    grouped = duck.run(FrameSource(frame), GroupedSum("g", ("a", "b"), "x", 0, 10, whole=True))
    a = values[(frame["g"] == "a").to_numpy() & ~np.isnan(values)]
    assert grouped.exact and grouped.totals[0] == _whole_sum(a, 0, 10)
    person = duck.run(FrameSource(frame), BoundedSum("x", 0, 10, Contribution("pid", 5),
                                                     whole=True))
    assert person.total == 34
    with pytest.raises(ValueError, match="whole bounds"):
        BoundedSum("x", 0, 10.5, whole=True)


def _csv(tmp_path, name: str, column: list[str]) -> FileSource:
    rows = ["pid,x"] + [f"{i},{v}" for i, v in enumerate(column)]
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n")
    return FileSource(path, "csv")


QUERIES = (BoundedSum("x", 0, 100), BoundedSum("x", 0, 100, whole=True),
           Binned("x", (0.0, 10.0, 50.0), "bins", "separate"),
           Binned("x", (5.0, 20.0, 40.0), "ranks", "separate"))


@pytest.mark.parametrize("other", ["n/a", "2.5", "oops", "1e400"])
def test_one_persons_value_never_changes_how_the_others_are_read(duck, tmp_path, other):
    """The same integer column with one more person whose value makes the CSV reader guess
    another type (text, float): every aggregate moves by what that one row adds, no more."""
    base = [str(v) for v in np.random.default_rng(5).integers(0, 60, 500)]
    first = _csv(tmp_path, "base.csv", base)
    second = _csv(tmp_path, "plus-one.csv", [*base, other])
    assert duck.columns(first)[1].kind == "integer"
    for query in QUERIES:
        a, b = duck.run(first, query), duck.run(second, query)
        if isinstance(query, BoundedSum):
            assert abs(b.total - a.total) <= 100 and b.rows - a.rows in (0, 1), query
        else:
            moved = np.abs(np.asarray(b.counts) - np.asarray(a.counts)).sum()
            assert moved <= 1, (query, moved)


def test_numbers_declared_for_a_column_read_as_text_still_match(duck, tmp_path):
    """Integer codes declared as categories: a CSV column of codes turns to text when more
    than 5 % of its rows hold a word (engine.cells.column_type); every other row still
    counts in its code's cell."""
    from engine.queries import CategoryCounts

    base = [str(v) for v in np.random.default_rng(2).integers(1, 4, 300)]
    first = _csv(tmp_path, "codes.csv", base)
    second = _csv(tmp_path, "codes-plus-words.csv", [*base, *["unknown"] * 20])
    assert duck.columns(second)[1].kind == "text"      # 300 numbers of 320 cells: 93.75 %
    query = CategoryCounts("x", (1, 2, 3))
    a, b = duck.run(first, query), duck.run(second, query)
    assert np.array_equal(a.counts, b.counts) and b.outside == 20
    assert np.array_equal(a.counts, np.bincount(np.array(base, dtype=int))[1:])


def text_codes_cases(tmp_path) -> tuple[FileSource, FileSource, tuple]:
    """A column of codes 1 and 2 (a CSV reader guesses numbers) and the same file with one
    more person whose "x" makes it text; the declared categories are texts, "x" among them."""
    base = [str(v) for v in np.random.default_rng(8).integers(1, 3, 400)]
    first = _csv(tmp_path, "text-codes.csv", base)
    second = _csv(tmp_path, "text-codes-plus-x.csv", [*base, "x"])
    return first, second, ("1", "2", "x")


def assert_moves_by_one_row(engine, first: FileSource, second: FileSource,
                            categories: tuple) -> None:
    """Every release-path query over ``second`` differs from ``first`` by that one row."""
    from engine.queries import CategoryCounts, CategoryTable, DistinctValues

    people = tuple(range(401))
    a = engine.run(first, CategoryCounts("x", categories))
    b = engine.run(second, CategoryCounts("x", categories))
    assert np.abs(np.asarray(b.counts) - np.asarray(a.counts)).sum() <= 1, (a, b)
    assert a.counts[:2].sum() == 400               # the codes match the declared texts
    ta = engine.run(first, CategoryTable("x", "pid", categories, people))
    tb = engine.run(second, CategoryTable("x", "pid", categories, people))
    assert np.abs(np.asarray(tb.counts) - np.asarray(ta.counts)).sum() <= 1
    keys_a = engine.run(first, DistinctValues("x", limit=None)).values
    keys_b = engine.run(second, DistinctValues("x", limit=None)).values
    assert list(keys_a) == ["1", "2"] and list(keys_b) == ["1", "2", "x"]


def test_text_categories_on_a_column_of_codes_are_stable(duck, tmp_path):
    """Review of issue 21 (the class of issue 19 item 1): categories declared as texts on a CSV
    column of codes matched nothing while the reader guessed numbers (counts [0, 0, 0]) and
    everything once one person's "x" made the column text ([200, 200, 1]): one person moved
    every cell. Every query a release uses reads a CSV's cells as text, row by row."""
    assert_moves_by_one_row(duck, *text_codes_cases(tmp_path))


def test_a_value_past_the_type_sniffers_sample_is_not_refused(duck, tmp_path):
    """DuckDB guesses a CSV column's type from a sample of rows: a word on line 30,002 of a
    column of numbers failed the read (EngineError), so a release refused on what the data
    holds. Read as text, that row is missing and the others count."""
    from engine.queries import CountRows

    source = _csv(tmp_path, "late-word.csv", [*(str(i % 50) for i in range(30_000)), "abc"])
    total = duck.run(source, BoundedSum("x", 0, 100))
    assert (total.total, total.rows, total.missing) == (sum(i % 50 for i in range(30_000)),
                                                         30_000, 1)
    assert duck.run(source, CountRows()).rows == 30_001
