"""The Data page's engine queries (Profile, NumericBins, FirstRows): DuckDB against a plain
pandas/numpy reference, on a random frame (nulls, NaN, ±inf, huge values) and on files."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine import EngineError, FileSource, FirstRows, FrameSource, NumericBins, Profile
from engine.duckdb_backend import DuckDBBackend
from tests import engine_reference as ref
from tests.engine.test_engine_duckdb import _write_files


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=2)


def reference_profile(frame: pd.DataFrame) -> list[tuple]:
    """(missing, distinct, min, max) per column with pandas: NaN and None are missing."""
    out = []
    for name in frame.columns:
        col = frame[name]
        present = col[~col.isna()]
        numeric = (pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col))
        values = present.astype(np.float64).to_numpy() if numeric else None
        low = float(values.min()) if numeric and values.size else None
        high = float(values.max()) if numeric and values.size else None
        out.append((int(col.isna().sum()), int(present.nunique()), low, high))
    return out


def assert_profile(agg, frame: pd.DataFrame) -> None:
    assert agg.rows == len(frame)
    assert [c.name for c in agg.columns] == list(frame.columns)
    for got, want in zip(agg.columns, reference_profile(frame), strict=True):
        assert (got.missing, got.distinct) == want[:2], got.name
        assert (got.minimum, got.maximum) == want[2:], got.name


@pytest.mark.parametrize("seed", range(3))
def test_profile_matches_pandas(duck, seed) -> None:
    frame = ref.random_frame(seed)
    assert_profile(duck.run(FrameSource(frame), Profile()), frame)


def test_profile_of_an_empty_and_an_all_missing_column(duck) -> None:
    frame = pd.DataFrame({"x": [np.nan, np.nan], "t": [None, None]}).astype({"t": "str"})
    frame["t"] = [None, None]
    agg = duck.run(FrameSource(frame), Profile())
    assert [(c.missing, c.distinct, c.minimum) for c in agg.columns] == [(2, 0, None),
                                                                        (2, 0, None)]


def reference_bins(values: pd.Series, lower: float, upper: float, bins: int):
    x = values.astype(np.float64).to_numpy()
    present = x[~np.isnan(x)]
    counts, _ = np.histogram(present, bins=bins, range=(lower, upper))
    return counts, int(np.sum(present < lower)), int(np.sum(present > upper)), int(
        np.isnan(x).sum())


@pytest.mark.parametrize(("column", "lower", "upper", "bins"), [
    (ref.SMALL, -5.5, 5.5, 11), (ref.CODE, 0, 5, 5), (ref.ODD, -1e5, 1e5, 8),
    (ref.QUOTED, -2.0**62, 2.0**62, 16)])
def test_bins_match_numpy(duck, column, lower, upper, bins) -> None:
    """numpy.histogram's bins (upper edge in the last bin), outside values counted apart;
    edges where floating point could differ are avoided: dyadic values, dyadic bin widths."""
    frame = ref.random_frame(11)
    agg = duck.run(FrameSource(frame), NumericBins(column, lower, upper, bins))
    counts, below, above, missing = reference_bins(frame[column], lower, upper, bins)
    np.testing.assert_array_equal(agg.counts, counts)
    assert (agg.below, agg.above, agg.missing) == (below, above, missing)


def test_first_rows_keep_names_and_order(duck, tmp_path) -> None:
    frame = ref.random_frame(2, rows=50)[[ref.ODD, ref.WHO, ref.CODE]]
    frame = frame.assign(**{ref.ODD: frame[ref.ODD].replace([np.inf, -np.inf], [1.0, -1.0])})
    for name, source in {"frame": FrameSource(frame),
                         **_write_files(frame, tmp_path)}.items():
        if name == "folder":
            continue  # a folder's parts have no order between them
        got = duck.run(source, FirstRows(7, (ref.CODE, ref.ODD))).frame
        assert list(got.columns) == [ref.CODE, ref.ODD], name
        np.testing.assert_array_equal(got[ref.CODE].to_numpy(), frame[ref.CODE][:7], name)
        assert duck.run(source, FirstRows(3)).frame.shape == (3, 3)


def test_unknown_columns_are_engine_errors(duck) -> None:
    source = FrameSource(pd.DataFrame({"a": [1, 2]}))
    with pytest.raises(EngineError, match="'nope'"):
        duck.run(source, FirstRows(2, ("nope",)))
    # text is read row by row as the number it reads as: "x" is missing, "0.5" in a bin
    bins = duck.run(FrameSource(pd.DataFrame({"t": ["x", "0.5"]})), NumericBins("t", 0, 1, 2))
    assert bins.missing == 1 and int(np.sum(bins.counts)) == 1


def test_profile_of_files_equals_the_frame(duck, tmp_path) -> None:
    frame = ref.random_frame(4, rows=80)[[ref.ODD, ref.SEMI, ref.CODE]]
    frame = frame.assign(**{ref.ODD: frame[ref.ODD].replace([np.inf, -np.inf], [9.0, -9.0])})
    want = duck.run(FrameSource(frame), Profile())
    for name, source in _write_files(frame, tmp_path).items():
        got = duck.run(source, Profile())
        assert got.rows == want.rows, name
        for a, b in zip(got.columns, want.columns, strict=True):
            assert (a.missing, a.distinct) == (b.missing, b.distinct), (name, a.name)
            assert a.minimum == b.minimum or (a.minimum is None and b.minimum is None)
    assert isinstance(FileSource(tmp_path / "data.parquet", "parquet"), FileSource)
    assert math.isfinite(want.columns[0].maximum)


@pytest.mark.slow
def test_profile_of_hundreds_of_columns_fits_in_memory() -> None:
    """600 distinct counts in one statement ran out of a 1 GB limit even on 3 rows."""
    frame = pd.DataFrame(np.arange(3 * 600).reshape(3, 600) % 7,
                         columns=[f"c{i}" for i in range(600)])
    agg = DuckDBBackend(memory_limit="1GB").run(FrameSource(frame), Profile())
    assert [c.distinct for c in agg.columns] == [int(frame[c].nunique()) for c in frame]


def test_frames_never_spill_to_disk() -> None:
    """The engine the app builds answers frames on a DuckDB whose spilling is off."""
    from engine import engine_from_env

    engine = engine_from_env()
    assert engine.frames is not engine.backend
    assert engine.frames.temp_directory == ""
    cursor = engine.frames._cursor()
    assert cursor.execute("SELECT current_setting('temp_directory')").fetchall() == [("",)]
