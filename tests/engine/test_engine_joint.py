"""JointCells: the full contingency table of several columns (the Synthetic data page's
input), counted by DuckDB against a pandas reference (Spark against both:
tests/engine/test_engine_spark.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import Contribution, Engine, FileSource, FrameSource, JointCells
from engine.duckdb_backend import _SRC, DuckDBBackend, _compile
from tests import engine_reference as ref


def _engine() -> Engine:
    return Engine(DuckDBBackend(spill=False), frames=DuckDBBackend(spill=False))


def _dense(agg, shape) -> np.ndarray:
    table = np.zeros(shape, dtype=np.int64)
    np.add.at(table, tuple(agg.codes.T), agg.counts)
    return table


def test_joint_cells_match_a_pandas_reference():
    rng = np.random.default_rng(3)
    n = 2_000
    frame = pd.DataFrame({
        "col'; DROP": rng.choice(["a", "b", "c", "zz"], n).astype(object),
        "x": rng.normal(5, 4, n),
    })
    frame.loc[rng.random(n) < 0.1, "col'; DROP"] = None
    frame.loc[rng.random(n) < 0.1, "x"] = np.nan
    edges = (0.0, 2.5, 5.0, 10.0)
    query = JointCells(("col'; DROP", "x"), (("a", "b", "c"), edges), (False, True))
    assert query.shape == (4, 4)
    agg = _engine().answer(FrameSource(frame, "t", key="t"), query)
    # reference: category position (3 for missing or "zz"); bin with values clamped inside
    cat = frame["col'; DROP"].map({"a": 0, "b": 1, "c": 2}).fillna(3).to_numpy(int)
    x = frame["x"].to_numpy()
    inner = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, 2)
    inner = np.where(x == edges[-1], 2, inner)
    binned = np.where(np.isnan(x), 3, inner)
    expected = np.zeros((4, 4), dtype=np.int64)
    np.add.at(expected, (cat, binned), 1)
    assert np.array_equal(_dense(agg, (4, 4)), expected)
    assert agg.counts.sum() == n and (agg.counts > 0).all()


def test_joint_cells_keep_max_rows_per_person():
    frame = pd.DataFrame({"p": [1, 1, 1, 2, 2, None], "c": ["a", "b", "a", "b", "b", "a"]})
    agg = _engine().answer(FrameSource(frame, "t", key="t"),
                           JointCells(("c",), (("a", "b"),), (False,), Contribution("p", 1)))
    assert agg.counts.sum() == 2                    # one row each for persons 1 and 2
    assert agg.dropped_rows == 3 and agg.missing_person_rows == 1


def test_joint_cells_checks():
    with pytest.raises(ValueError, match="same length"):
        JointCells(("a", "b"), (("x",),), (False,))
    with pytest.raises(ValueError, match="repeat"):
        JointCells(("a", "a"), (("x",), ("y",)), (False, False))


def test_joint_cases_match_the_reference_on_a_frame_a_csv_and_an_empty_table(tmp_path):
    """tests/engine_reference.py's cases (the ones Spark is checked on): hostile names,
    undeclared and missing values, values on the bin edges, numbers stored as text, max rows
    1 and 3. A CSV's cells are read as text: the same cells as the frame's."""
    frame = ref.joint_frame(4)
    frame.to_csv(tmp_path / "joint.csv", index=False)
    engine = _engine()
    sources = (FrameSource(frame, "t", key="t"), FileSource(tmp_path / "joint.csv", "csv"))
    for query, expected in ref.joint_cases(frame):
        for source in sources:
            ref.assert_joint((source, query), engine.answer(source, query), expected)
    empty = frame.iloc[:0]
    for query, expected in ref.joint_cases(empty):
        agg = engine.answer(FrameSource(empty, "empty", key="empty"), query)
        ref.assert_joint(query, agg, expected)
        assert agg.codes.shape == (0, len(query.columns))


@pytest.mark.slow
def test_joint_cells_group_the_raw_values_before_coding_them(tmp_path):
    """A file's rows are grouped by their raw values before the cells are coded (issue 34:
    counting Adult's 8 columns from 10^7 rows took 35 CPU s coding each row's canonical text
    key and bin; grouping first codes each distinct combination once, 0.9 s; measured in
    bench/bench_synthetic.py, never timed here). The statement's shape says so (on main it
    coded every row, then grouped); the counts of a file of the same distinct rows repeated
    20 times are 20 times the small file's."""
    rng = np.random.default_rng(5)
    cats = [tuple(f"v{i}_{j}" for j in range(6)) for i in range(6)]
    distinct = pd.DataFrame({f"t{i}": rng.choice([*c, "other"], 2_000)
                             for i, c in enumerate(cats)})
    distinct["age"] = rng.integers(17, 91, 2_000)
    distinct["hours"] = rng.integers(1, 100, 2_000)
    edges = ((17.0, 25, 35, 45, 55, 65, 91), (0.0, 20, 40, 60, 100))
    query = JointCells(tuple(distinct.columns), (*cats, *edges), (False,) * 6 + (True, True))
    paths, answers = {}, {}
    for n in (30_000, 600_000):   # the small file's rows repeated: the same distinct rows
        paths[n] = tmp_path / f"rows_{n}.parquet"
        distinct.iloc[np.arange(n) % 2_000].to_parquet(paths[n])
        answers[n] = _engine().answer(FileSource(paths[n], "parquet"), query)
    assert np.array_equal(_dense(answers[600_000], query.shape),
                          20 * _dense(answers[30_000], query.shape))

    # the statement's shape: its first step groups the raw columns the cells read (the
    # source's columns, c0..c7 here) and counts them; the coding reads that grouping
    columns = tuple(DuckDBBackend(spill=False).columns(FileSource(paths[30_000], "parquet")))
    first = _compile("joint-shape", query, columns, "TRUE").statements[0]
    raw = ", ".join(f'"c{i}" AS "g{i}"' for i in range(len(query.columns)))
    assert first.startswith(f"WITH g AS (SELECT {raw}, count(*) AS n FROM {_SRC} GROUP BY ALL)")
    assert first.endswith("sum(n) FROM g GROUP BY ALL")
