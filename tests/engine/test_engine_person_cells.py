"""Who contributes how much (``PersonCells``), computed by the engine with per-person
aggregates, against ``dpcore.contributions.contribution_cells`` on the rows read (numpy; a
person's rows are all their rows, those without a value or category too); the
same cells from a frame, a CSV file and a Parquet file. And how a data-folder CSV is read: the
same column kinds as an upload of the same bytes (yes/no, true/false and dates are text).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.data.upload import load_upload
from dpcore.contributions import contribution_cells
from engine import FileSource, FrameSource, PersonCells, Profile
from engine.duckdb_backend import DuckDBBackend

CATEGORIES = ("a", "b", "c", "z")    # "z" has no rows, "d" is outside


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=1)


def people(rows: int = 300, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pid = rng.integers(0, 60, rows).astype(float)
    pid[rng.random(rows) < 0.05] = np.nan
    value = np.round(rng.normal(20, 15, rows), 2)
    value[rng.random(rows) < 0.05] = np.nan
    kind = rng.choice(["a", "b", "c", "d"], rows).astype(object)
    kind[rng.random(rows) < 0.05] = None
    return pd.DataFrame({"pid": pid, "value": value, "kind": kind})


def assert_cells(agg, expected, left_out: int) -> None:
    for field in ("group", "rows", "person_rows", "person_groups", "persons"):
        np.testing.assert_array_equal(getattr(agg, field), getattr(expected, field), field)
    for field in ("value_sum", "value_sum_squares", "value_squares", "raw_value_sum"):
        np.testing.assert_allclose(getattr(agg, field), getattr(expected, field),
                                   rtol=1e-12, err_msg=field)
    assert agg.left_out == left_out


QUERIES = {
    "count": PersonCells("pid"),
    "sum": PersonCells("pid", "value", 0.0, 30.0),
    "unclamped sum": PersonCells("pid", "value"),
    "histogram": PersonCells("pid", "kind", categories=CATEGORIES),
}


def expected_cells(frame: pd.DataFrame, name: str):
    """numpy on the rows the query reads (an independent reference), every row with a
    person id counted among its person's rows (the unit's one truncation ranks them all)."""
    rows = frame[frame["pid"].notna()]
    read = np.ones(len(rows), dtype=bool)
    if name in ("sum", "unclamped sum"):
        read = rows["value"].notna().to_numpy()
    if name == "histogram":
        read = rows["kind"].isin(CATEGORIES).to_numpy()
    persons, left_out = rows["pid"].to_numpy(), len(frame) - int(read.sum())
    if name == "count":
        return contribution_cells(persons), left_out
    if name == "histogram":
        return contribution_cells(persons, groups=rows["kind"].to_numpy(object),
                                  read=read), left_out
    bounds = {"lower": 0.0, "upper": 30.0} if name == "sum" else {}
    return contribution_cells(persons, values=rows["value"].to_numpy(float), read=read,
                              **bounds), left_out


@pytest.mark.parametrize("name", list(QUERIES))
def test_cells_match_numpy_on_a_frame(duck, name):
    frame = people()
    expected, left_out = expected_cells(frame, name)
    assert left_out > 0
    assert_cells(duck.run(FrameSource(frame), QUERIES[name]), expected, left_out)


@pytest.mark.parametrize("name", list(QUERIES))
def test_a_csv_and_a_parquet_file_give_the_frames_cells(duck, tmp_path, name):
    frame = people(seed=8)
    frame.to_csv(tmp_path / "people.csv", index=False)
    frame.to_parquet(tmp_path / "people.parquet", index=False)
    expected, left_out = expected_cells(frame, name)
    for source in (FileSource(tmp_path / "people.csv", "csv"),
                   FileSource(tmp_path / "people.parquet", "parquet")):
        assert_cells(duck.run(source, QUERIES[name]), expected, left_out)


def test_a_text_value_is_read_row_by_row(duck):
    frame = pd.DataFrame({"pid": [1, 1, 2, 2], "x": ["1", " 2.5 ", "oops", "4"]})
    agg = duck.run(FrameSource(frame), PersonCells("pid", "x", 0.0, 3.0))
    np.testing.assert_array_equal(agg.rows, [1, 2])                # pid 2: "oops" is missing
    np.testing.assert_array_equal(agg.person_rows, [2, 2])         # ... but still pid 2's row
    np.testing.assert_allclose(agg.raw_value_sum, [4.0, 3.5])
    np.testing.assert_allclose(agg.value_sum, [3.0, 3.5])          # 4 clamped to 3
    assert agg.left_out == 1


def test_a_query_with_no_row_kept_has_no_cells(duck):
    frame = pd.DataFrame({"pid": [None, None], "x": [1.0, 2.0]})
    agg = duck.run(FrameSource(frame), PersonCells("pid", "x"))
    assert agg.rows.size == 0 and agg.left_out == 2


@pytest.mark.parametrize("bad", [
    {"lower": 0.0},                                   # one bound
    {"lower": 0.0, "upper": 1.0, "column": None},     # bounds without a column
    {"categories": ("a",), "column": None},           # categories without a column
    {"categories": ("a",), "lower": 0.0, "upper": 1.0},
])
def test_bad_queries_are_refused(bad):
    fields = {"column": "x"} | bad
    with pytest.raises(ValueError):
        PersonCells("pid", **fields)


CSV = (b"pid,smoker,married,joined,score,note,weight\n"
       b"1,yes,true,2024-01-02,1,,70.5\n"
       b"2,no,false,2024-01-03,5,x,NA\n"
       b"3,,TRUE,2024-02-04,0,N/A,null\n"
       b"4,yes,FALSE,,2,y,80.25\n")


def test_a_data_folder_csv_has_the_uploads_column_kinds(duck, tmp_path):
    """The same bytes, uploaded or in the data folder: the same kind for every column (a
    yes/no or true/false column is text on both paths, not BOOLEAN from the data folder; NA,
    N/A, null are missing on both paths: weight is numbers, not text)."""
    (tmp_path / "same.csv").write_bytes(CSV)
    from_file = duck.columns(FileSource(tmp_path / "same.csv", "csv"))
    uploaded = duck.columns(FrameSource(load_upload(CSV, "same.csv").frame))
    assert [(c.name, c.kind) for c in from_file] == [
        ("pid", "integer"), ("smoker", "text"), ("married", "text"), ("joined", "text"),
        ("score", "integer"), ("note", "text"), ("weight", "float")]
    assert [(c.name, c.kind) for c in uploaded] == [(c.name, c.kind) for c in from_file]
    profile = {c.name: c.missing for c in duck.run(FileSource(tmp_path / "same.csv", "csv"),
                                                    Profile()).columns}
    assert profile == {"pid": 0, "smoker": 1, "married": 0, "joined": 1, "score": 0,
                       "note": 2, "weight": 2}
