"""Engine queries: validation names the parameter, keys are stable, aggregates are small."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine import (
    Binned,
    BoundedSum,
    CategoryCounts,
    CategoryTable,
    Contribution,
    CountRows,
    DistinctValues,
    FileSource,
    FrameSource,
    GroupedSum,
    RowsPerPerson,
    RowsPerPersonAggregate,
    TableSource,
    query_key,
)


@pytest.mark.parametrize("make, error, name", [
    (lambda: BoundedSum("x", 1, 0), ValueError, "lower"),
    (lambda: BoundedSum("x", 0, math.nan), ValueError, "upper"),
    (lambda: BoundedSum("x", 0, math.inf), ValueError, "upper"),
    (lambda: BoundedSum(3, 0, 1), TypeError, "column"),
    (lambda: CategoryCounts("x", ()), ValueError, "categories"),
    (lambda: CategoryCounts("x", "abc"), TypeError, "categories"),
    (lambda: CategoryCounts("x", ("a", "a")), ValueError, "categories"),
    (lambda: CategoryCounts("x", (1, 1.0)), ValueError, "categories"),
    (lambda: CategoryCounts("x", ("a", 1)), TypeError, "categories"),
    (lambda: CategoryCounts("x", (1.0, math.nan)), ValueError, "categories"),
    (lambda: CategoryTable("x", "y", ("a",), ()), ValueError, "column_categories"),
    (lambda: Contribution("p", 0), ValueError, "max_rows"),
    (lambda: Contribution("p", 1, max_groups=0), ValueError, "max_groups"),
    (lambda: Contribution("p", 1, seed=-1), ValueError, "seed"),
    (lambda: CountRows(Contribution("p", 1, max_groups=2)), ValueError, "max_groups"),
    (lambda: BoundedSum("x", 0, 1, Contribution("p", 1, 2)), ValueError, "max_groups"),
    (lambda: CountRows("p"), TypeError, "contribution"),
    (lambda: RowsPerPerson(None), TypeError, "person"),
    (lambda: DistinctValues("x", limit=0), ValueError, "limit"),
    (lambda: Binned("x", ()), ValueError, "points"),
    (lambda: Binned("x", (1.0,)), ValueError, "points"),
    (lambda: Binned("x", (2.0, 1.0)), ValueError, "points"),
    (lambda: Binned("x", (0.0, math.inf)), ValueError, "points"),
    (lambda: Binned("x", ("a", "b")), TypeError, "points"),
    (lambda: Binned("x", (0.0, 1.0), cells="deciles"), ValueError, "cells"),
    (lambda: Binned("x", (0.0, 1.0), outside="drop"), ValueError, "outside"),
    (lambda: Binned(3, (0.0, 1.0)), TypeError, "column"),
    (lambda: GroupedSum("k", (), "x", 0, 1), ValueError, "categories"),
    (lambda: GroupedSum("k", ("a",), "x", 1, 0), ValueError, "lower"),
    (lambda: GroupedSum(None, ("a",), "x", 0, 1), TypeError, "key"),
])
def test_validation_names_the_parameter(make, error, name) -> None:
    with pytest.raises(error, match=name):
        make()


def test_queries_are_values() -> None:
    """Equal declarations are one query (one cache entry), numpy scalars included."""
    assert BoundedSum("x", 0, 1) == BoundedSum("x", np.float64(0.0), 1.0)
    assert query_key(BoundedSum("x", 0, 1)) == query_key(BoundedSum("x", 0.0, 1.0))
    assert CategoryCounts("x", [np.int64(1), 2]) == CategoryCounts("x", (1, 2))
    assert query_key(CategoryCounts("x", ("a", "b"))) != query_key(CategoryCounts("x", ("b", "a")))
    assert query_key(BoundedSum("x", 0, 1)) != query_key(BoundedSum("x", 0, 1 + 2**-52))
    keys = {query_key(q) for q in (CountRows(), CountRows(Contribution("p", 1)),
                                   CountRows(Contribution("p", 1, seed=1)), RowsPerPerson("p"))}
    assert len(keys) == 4
    with pytest.raises(TypeError, match="query"):
        query_key("SELECT 1")


def test_cache_keys_separate_sources_and_versions(tmp_path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"x": [1]})
    a, b = FrameSource(frame), FrameSource(frame)
    assert a.cache_key(CountRows()) != b.cache_key(CountRows())  # two uploads, two keys
    assert FrameSource(frame, key="adult").cache_key(CountRows()) == FrameSource(
        frame, key="adult").cache_key(CountRows())
    path = tmp_path / "x.csv"
    path.write_text("x\n1\n")
    source = FileSource(path, "csv")
    before = source.cache_key(CountRows())
    path.write_text("x\n1\n2\n")
    assert source.cache_key(CountRows()) != before
    assert TableSource("db.t", version="1").cache_key(CountRows()) != TableSource(
        "db.t", version="2").cache_key(CountRows())


def test_kept_rows_is_the_bounded_count() -> None:
    """Σ_people min(rows, k), from the rows-per-person histogram alone."""
    agg = RowsPerPersonAggregate(np.array([1, 2, 5]), np.array([10, 3, 2]))
    assert [agg.kept_rows(k) for k in (1, 2, 3, 5, 9)] == [15, 20, 22, 26, 26]
    assert (agg.total_people, agg.max_rows) == (15, 5)
    assert not agg.rows.flags.writeable


def test_layers_import_only_what_they_may() -> None:
    """dpcore never imports the engine's databases; the engine never imports Streamlit, and
    loads PySpark only when the Spark backend runs."""
    import subprocess
    import sys

    code = ("import sys, dpcore, dpcore.queries; a = set(sys.modules); import engine, "
            "engine.duckdb_backend, engine.spark_backend; b = set(sys.modules); "
            "print(sorted({m.split('.')[0] for m in a} & {'duckdb', 'pyspark', 'engine'}), "
            "sorted({m.split('.')[0] for m in b} & {'streamlit', 'pyspark', 'plotly'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert out.stdout.split() == ["[]", "[]"], out.stdout
