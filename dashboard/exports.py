"""Downloads of noisy results: a CSV of the values and a JSON of the parameters behind them.

Spreadsheet-safe: text cells and headers that a spreadsheet would run as a formula are escaped.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

#: A cell starting with one of these is run as a formula by Excel, LibreOffice and Sheets.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value: Any) -> Any:
    """Prefix a text value that a spreadsheet would treat as a formula with a single quote."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy with text cells and every header escaped; numeric columns are left numeric."""
    out = frame.copy()
    out.columns = [escape_cell(str(c)) for c in out.columns]
    for column in out.columns:
        series = out[column]
        if not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)):
            out[column] = series.astype(object).map(escape_cell)
    if not isinstance(out.index, pd.RangeIndex):
        out.index = out.index.map(lambda v: escape_cell(str(v)))
    return out


def csv_bytes(frame: pd.DataFrame, *, index: bool = False) -> bytes:
    """The frame as UTF-8 CSV (with BOM, so spreadsheets pick the encoding), formula-safe."""
    # Quote every text cell so a stray carriage return cannot split a row.
    text = safe_frame(frame).to_csv(index=index, lineterminator="\n",
                                    quoting=csv.QUOTE_NONNUMERIC)
    return text.encode("utf-8-sig")


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def parameters_json(parameters: Mapping[str, Any]) -> bytes:
    """The parameters of a release (dataset, query, mechanism, measure, ε/δ/ρ, sensitivity,
    scale, seed) as indented JSON; numpy values become plain numbers, non-finite ones null."""
    return json.dumps(_plain(parameters), indent=2, ensure_ascii=False).encode("utf-8")
