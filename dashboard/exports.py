"""Downloads of noisy results: a CSV of the values and a JSON of the parameters behind them.

Spreadsheet-safe: text cells and headers that a spreadsheet would run as a formula are escaped.
A simulated release says so in its file names, in a column of the CSV and in the JSON.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

#: A cell starting with one of these is run as a formula by Excel, LibreOffice and Sheets.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")

#: The parameters of a simulated release carry this key (see :func:`simulation_fields`).
SIMULATION = "simulation"
#: Simulated files are named with this prefix ...
SIMULATED_PREFIX = "simulated-"
#: ... and their CSV ends with this column, the same text in every row.
SIMULATION_COLUMN = "Simulation"
SIMULATION_CELL = "simulated, not a private release: the seed removes the noise"
#: The note of a row drawn on the dashboard with fresh noise (not from the seed).
UNSEEDED_CELL = "drawn on the dashboard, not a release: recorded nowhere, never publish"
#: What the page says next to the download buttons of a simulated release.
SIMULATION_WARNING = (
    "**Simulated, not a private release.** The noise comes from the sidebar's seed: anyone "
    "with the seed and the parameters file can draw the same noise and remove it, which gives "
    "back the true values. Use these files to study the noise; never publish them.")


def simulation_fields(random_stream: str) -> dict[str, Any]:
    """The block a simulated release's parameters carry under :data:`SIMULATION`."""
    return {
        "simulated": True,
        "private_release": False,
        "warning": ("Not a private release: the noise was drawn from numpy's generator "
                    "seeded with the seed below, so anyone with these parameters can draw the "
                    "same noise and subtract it from the noisy values, recovering the true "
                    "values exactly. Use it to study the noise; never publish it."),
        "random_stream": random_stream,
    }


def noise_stream(dataset_key: str, frame: pd.DataFrame, *release: object) -> int:
    """A number that sets a simulated release's noise apart from every other's at one seed.

    Mixed into the random stream with the seed, so the same seed draws different noise for
    another dataset or another query: otherwise two simulated releases at one seed share
    their noise, and the difference of their noisy values is the exact difference of their
    true values. Reproducible: a built-in dataset is known by its name and size, an upload
    by its shape and column names (never its values, nor the session's random file id).
    """
    if dataset_key.startswith("builtin:"):
        identity = dataset_key
    else:
        identity = f"upload:{frame.shape}:{[str(c) for c in frame.columns]}"
    text = "\x1f".join([identity, *(str(part) for part in release)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big")


def with_simulation_column(frame: pd.DataFrame, note: str = SIMULATION_CELL) -> pd.DataFrame:
    """``frame`` with a last column saying, in every row, that the values are simulated."""
    name = SIMULATION_COLUMN
    while name in frame.columns:  # a user's column may be called "Simulation"
        name += " (note)"
    return frame.assign(**{name: note})


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
