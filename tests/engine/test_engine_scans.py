"""A bounded sum and a bounded histogram read the data twice (issue 20: fewer scans per
query), and their bookkeeping — missing values, rows with no person, rows the bounds
dropped, rows outside the categories — is still what pandas counts, on frames and CSVs."""

from __future__ import annotations

import numpy as np
import pytest

from engine import BoundedSum, CategoryCounts, Contribution, FileSource, FrameSource
from engine.duckdb_backend import DuckDBBackend
from tests import engine_reference as ref


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=2)


def _sources(frame, tmp_path, seed):
    path = tmp_path / f"f{seed}.csv"
    frame.to_csv(path, index=False)
    return FrameSource(frame), FileSource(path, "csv")


@pytest.mark.parametrize("seed", range(3))
def test_a_bounded_sum_reads_twice_and_keeps_its_bookkeeping(duck, tmp_path, seed):
    frame = ref.random_frame(seed)
    for source in _sources(frame, tmp_path, seed):
        for column, person, k in ((ref.ODD, ref.PERSON, 2), (ref.LOG, ref.WHO, 1),
                                  (ref.SMALL, ref.PERSON, 3)):
            query = BoundedSum(column, -50.0, 50.5, Contribution(person, k, seed=seed))
            assert len(duck.sql_for(source, query)) == 2
            got = duck.run(source, query)
            want = ref.bounded_sum_per_person(frame, column, -50.0, 50.5, person, k, seed)
            value_missing = frame[column].isna().to_numpy()
            person_missing = frame[person].isna().to_numpy()
            eligible = int((~value_missing & ~person_missing).sum())
            assert (got.rows, got.clamped) == (want["rows"], want["clamped"])
            assert got.missing == int(value_missing.sum())
            assert got.missing_person_rows == int(person_missing.sum()) > 0
            assert got.dropped_rows == eligible - want["rows"]


@pytest.mark.parametrize("seed", range(3))
def test_a_bounded_histogram_reads_twice_and_keeps_its_bookkeeping(duck, tmp_path, seed):
    frame = ref.random_frame(seed)
    codes = ref.cell_codes(frame[ref.SEMI], ref.DECLARED)
    for source in _sources(frame, tmp_path, seed):
        for person, k, groups in ((ref.PERSON, 1, None), (ref.WHO, 3, 2)):
            query = CategoryCounts(ref.SEMI, ref.DECLARED,
                                   Contribution(person, k, groups, seed=seed))
            assert len(duck.sql_for(source, query)) == 2
            got = duck.run(source, query)
            kept = ref.bounded_cells(codes, frame, person, len(ref.DECLARED), k, groups, seed,
                                     ref.texts(ref.DECLARED))
            person_missing = frame[person].isna().to_numpy()
            np.testing.assert_array_equal(got.counts, kept)
            assert (got.outside, got.missing) == (int((codes == 0).sum()),
                                                  int((codes < 0).sum()))
            assert got.missing_person_rows == int(person_missing.sum()) > 0
            assert got.dropped_rows == int(((codes > 0) & ~person_missing).sum()) - kept.sum()


def test_a_text_cell_is_read_once_to_test_whether_it_is_missing(duck, tmp_path):
    """A CSV's cells are text: whether a value is missing reads its number once, and says
    missing exactly for the empty, unreadable and not-a-number cells."""
    cells = ["1.5", " 2 ", "", "x", "nan", "NaN", "-nan", "inf", "-inf", "1e400", "0", "-0",
             "7", "NA", "1e3"]
    path = tmp_path / "t.csv"
    path.write_text("pid,v\n" + "".join(f"{i % 4},{c}\n" for i, c in enumerate(cells)))
    source = FileSource(path, "csv")
    query = BoundedSum("v", -10.0, 10.0, Contribution("pid", 10))
    counts, _ = duck.sql_for(source, query)
    # the one reading of the cell (``_text_number``), whose two casts are two branches: the
    # text, or (digits grouped by underscores) the text without them
    from engine.duckdb_backend import _text_number

    assert counts[0].count(_text_number('"c1"')) == 1
    assert counts[0].count("TRY_CAST") == 2
    got = duck.run(source, query)
    readable = ["1.5", " 2 ", "inf", "-inf", "1e400", "0", "-0", "7", "1e3"]
    assert got.missing == len(cells) - len(readable)
    assert (got.rows, got.clamped) == (len(readable), 4)  # inf, -inf, 1e400, 1e3
    assert got.total == 1.5 + 2 + 10 - 10 + 10 + 0 + 0 + 7 + 10
