"""Exports: formula-looking text is escaped, numbers stay numbers, files read back intact."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest

from dashboard.exports import (
    FORMULA_TRIGGERS,
    SIMULATION_CELL,
    SIMULATION_COLUMN,
    csv_bytes,
    escape_cell,
    noise_stream,
    parameters_json,
    with_simulation_column,
)


@pytest.mark.parametrize("trigger", FORMULA_TRIGGERS)
def test_every_trigger_is_escaped(trigger):
    assert escape_cell(trigger + "1+1") == "'" + trigger + "1+1"


def test_harmless_text_and_numbers_untouched():
    assert escape_cell("Bachelors") == "Bachelors"
    assert escape_cell(-3.5) == -3.5
    assert escape_cell("a=b") == "a=b"


def test_csv_reads_back_escaped_and_numeric():
    frame = pd.DataFrame({
        "=cmd|' /C calc'!A0": ["=HYPERLINK(\"x\")", "+1", "-2", "@SUM(A1)", "\tx", "\rz"],
        "noisy count": [-1.5, 2.0, -0.25, 1e6, 0.0, 3.0],
        "category": pd.Categorical(["a", "=b", "c", "d", "e", "f"]),
    })
    data = csv_bytes(frame)
    assert data.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))
    header, body = rows[0], rows[1:]
    assert header[0] == "'=cmd|' /C calc'!A0"
    assert [r[0] for r in body] == ["'=HYPERLINK(\"x\")", "'+1", "'-2", "'@SUM(A1)", "'\tx",
                                    "'\rz"]
    # No text cell of the written file starts with a trigger.
    for row in rows:
        for cell in row:
            if not _is_number(cell):
                assert not cell.startswith(FORMULA_TRIGGERS), cell
    # Numbers stay numbers, negative ones included.
    back = pd.read_csv(io.BytesIO(data), encoding="utf-8-sig")
    assert back["noisy count"].dtype.kind == "f"
    np.testing.assert_array_equal(back["noisy count"], frame["noisy count"])
    assert back["category"].tolist()[1] == "'=b"


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_parameters_json_round_trip():
    params = {"dataset": "Adult", "epsilon": np.float64(1.0), "delta": None,
              "scale": np.float32(2.5), "seed": np.int64(7), "bounds": np.array([17, 90]),
              "alpha": float("inf")}
    back = json.loads(parameters_json(params))
    assert back == {"dataset": "Adult", "epsilon": 1.0, "delta": None, "scale": 2.5, "seed": 7,
                    "bounds": [17, 90], "alpha": None}


def test_simulation_column_never_replaces_a_users_column():
    frame = pd.DataFrame({SIMULATION_COLUMN: ["=x", "y"], "Noisy count": [1.5, -2.0]})
    marked = with_simulation_column(frame)
    assert marked.columns.tolist() == [SIMULATION_COLUMN, "Noisy count",
                                       SIMULATION_COLUMN + " (note)"]
    assert marked[SIMULATION_COLUMN].tolist() == ["=x", "y"]
    assert set(marked[SIMULATION_COLUMN + " (note)"]) == {SIMULATION_CELL}
    assert not SIMULATION_CELL.startswith(FORMULA_TRIGGERS)   # spreadsheet-safe as it is
    assert frame.columns.tolist() == [SIMULATION_COLUMN, "Noisy count"]   # not changed


def test_noise_stream_tells_datasets_and_queries_apart_and_ignores_values():
    adult = noise_stream("builtin:Adult:48842", pd.DataFrame(), "count")
    assert adult == noise_stream("builtin:Adult:48842", pd.DataFrame({"a": [1]}), "count")
    assert adult != noise_stream("builtin:Iris:150", pd.DataFrame(), "count")
    assert adult != noise_stream("builtin:Adult:48842", pd.DataFrame(), "sum", "age")
    # An upload is known by its shape and column names, not by the session's random file id
    # nor by its values: the same file uploaded again draws the same noise.
    first = pd.DataFrame({"salary": [1.0, 2.0]})
    same_shape = pd.DataFrame({"salary": [5.0, 9.0]})
    assert noise_stream("upload:abc", first, "count") == noise_stream("upload:xyz",
                                                                      same_shape, "count")
    assert noise_stream("upload:abc", first, "count") != noise_stream(
        "upload:abc", pd.DataFrame({"wage": [1.0, 2.0]}), "count")
    assert 0 <= adult < 2**32
