"""Exports: formula-looking text is escaped, numbers stay numbers, files read back intact."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest

from dashboard.exports import FORMULA_TRIGGERS, csv_bytes, escape_cell, parameters_json


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
