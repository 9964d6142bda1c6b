"""The Spark engine keeps DuckDB's rows and counts a sum's rows as DuckDB does (found in
review: the Spark program did neither; tests/release/test_spark_program_one_rule.py).

On a small hand-made CSV (missing values, texts in the column of numbers, an undeclared group,
a row with no person id, people with more rows than max rows and rows that differ): the unit's
kept rows (``Contribution``: each person's rows sorted by their cells as the rule reads them,
the positions ranked by ``md5(seed | row | person | position)``) are DuckDB's and the pandas
reference's (``tests/engine_reference.row_ranks``), and a sum's rows — a mean's count — are
the kept rows that have a value, by group too, with max groups chosen among the cells where a
person has one. Also on the same rows as a typed Parquet file. A guard: these held on main.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import BoundedSum, CategoryCounts, Contribution, FileSource, GroupedSum
from engine.duckdb_backend import DuckDBBackend
from tests import engine_reference as ref

#: (person id, value, group) as written in the CSV: person 1 has six rows (max rows 2), two
#: without a number; person 4 writes 4 twice; the last row has no person id.
ROWS = [("1", "5", "a"), ("1", "oops", "a"), ("1", "", "b"), ("1", "7", "b"), ("1", "2.5", "a"),
        ("1", "12", "c"), ("2", "3", "b"), ("2", "NA", "b"), ("2", "8", "a"), ("3", "1", "a"),
        ("4", " 4 ", "b"), ("4", "4.0", "b"), ("4", "x9", "a"), ("", "6", "a")]
#: Each value as a number, by hand (None: no value).
NUMBER = {"5": 5.0, "oops": None, "": None, "7": 7.0, "2.5": 2.5, "12": 12.0, "3": 3.0,
          "NA": None, "8": 8.0, "1": 1.0, " 4 ": 4.0, "4.0": 4.0, "x9": None, "6": 6.0}
GROUPS = ("a", "b")
K, LOWER, UPPER = 2, 0.0, 10.0
SEEDS = (0, 3, 11)


@pytest.fixture(scope="module")
def backends(shared_spark):
    from engine.spark_backend import SparkBackend

    return DuckDBBackend(threads=1), SparkBackend(session=shared_spark)


def text_frame() -> pd.DataFrame:
    """The CSV's cells as both engines read them for a release: text, a missing marker
    (empty, NA) missing."""
    cells = [[None if v in ("", "NA") else v for v in row] for row in ROWS]
    return pd.DataFrame(cells, columns=["p", "x", "c"], dtype=object)


def expected(seed: int, groups: int | None) -> dict:
    """The reference's kept rows (``row_ranks`` of the text cells), then by hand: the sum
    and its rows (those with a value), and by group the sums and rows (with ``groups``, a
    person's cells with a value ranked by ``md5(seed | group | person | text)``)."""
    frame = text_frame()
    ranks = ref.row_ranks(frame, "p", seed)
    values = [NUMBER[x] for _, x, _ in ROWS]
    codes = ref.cell_codes(frame["c"], GROUPS)
    kept = [i for i in range(len(ROWS)) if 0 < ranks[i] <= K and values[i] is not None]
    total = sum(min(max(values[i], LOWER), UPPER) for i in kept)
    cells: dict[int, list[float]] = {1: [], 2: []}
    texts = ref.texts(GROUPS)
    for pid in {p for p, _, _ in ROWS if p}:
        mine = sorted((ranks[i], int(codes[i]), values[i]) for i in range(len(ROWS))
                      if ROWS[i][0] == pid and codes[i] > 0 and values[i] is not None)
        if groups is None:
            for rank, cell, value in mine:
                if rank <= K:
                    cells[cell].append(value)
            continue
        chosen = sorted({texts[c - 1] for _, c, _ in mine},
                        key=lambda t, pid=pid: (ref._key(seed, "group", pid, t), t))[:groups]
        for text in chosen:
            cell = texts.index(text) + 1
            cells[cell] += [v for _, c, v in mine if c == cell][:K]
    return {"total": total, "rows": len(kept),
            "totals": [sum(min(max(v, LOWER), UPPER) for v in cells[c]) for c in (1, 2)],
            "cell_rows": [len(cells[c]) for c in (1, 2)],
            "counts": ref.bounded_cells(codes, frame, "p", len(GROUPS), K, groups, seed,
                                        texts).tolist()}


def answers(backend, source, seed: int, groups: int | None) -> dict:
    bound = Contribution("p", K, groups, seed)
    total = backend.run(source, BoundedSum("x", LOWER, UPPER, Contribution("p", K, None, seed)))
    by_group = backend.run(source, GroupedSum("c", GROUPS, "x", LOWER, UPPER, bound))
    counts = backend.run(source, CategoryCounts("c", GROUPS, bound))
    return {"total": total.total, "rows": total.rows, "totals": by_group.totals.tolist(),
            "cell_rows": by_group.rows.tolist(), "counts": counts.counts.tolist()}


def test_spark_keeps_duckdbs_rows_and_counts_a_sums_rows_with_a_value(backends, tmp_path):
    """Every seed, with and without max groups: Spark = DuckDB = the reference."""
    path = tmp_path / "people.csv"
    path.write_text("p,x,c\n" + "".join(",".join(row) + "\n" for row in ROWS),
                    encoding="utf-8")
    source = FileSource(path, "csv")
    seen = set()
    for seed in SEEDS:
        for groups in (None, 1):
            want = expected(seed, groups)
            for backend in backends:
                # sums of halves: exact in any order
                assert answers(backend, source, seed, groups) == want, (backend.name, seed,
                                                                        groups)
            seen.add((want["total"], groups))
    assert len({total for total, groups in seen if groups is None}) > 1   # the seed matters


def test_spark_keeps_duckdbs_rows_of_a_typed_parquet_file(backends, tmp_path):
    """The same rows typed (person ids and values as numbers, a text's value missing): the
    same answers on both engines, for every seed, with and without max groups."""
    values = [NUMBER[x] for _, x, _ in ROWS]
    frame = pd.DataFrame({"p": pd.array([int(p) if p else None for p, _, _ in ROWS],
                                        dtype="Int64"),
                          "x": np.array([np.nan if v is None else v for v in values]),
                          "c": [c for _, _, c in ROWS]})
    path = tmp_path / "people.parquet"
    frame.to_parquet(path, index=False)
    source = FileSource(path, "parquet")
    duck, spark = backends
    for seed in SEEDS:
        for groups in (None, 1):
            assert answers(spark, source, seed, groups) == answers(duck, source, seed,
                                                                   groups), (seed, groups)
