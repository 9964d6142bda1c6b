"""The dataset model: what is declared about a column (ColumnDomain), a dataset ready for
the pages (LoadedDataset, whose engine relation answers every query). Which columns the
queries can use: ``dashboard.data.columns``.

Pure pandas and the engine (no widgets). ``profile`` is the pandas reference of the engine's
column profile (``dashboard.data.column_facts``), kept for the tests.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from dashboard.data.relation import Relation
from dpcore.contributions import PrivacyUnit
from engine.errors import EngineError  # noqa: F401 — what a page catches from the data

#: A text column with more distinct values than this stays text: not offered for
#: categorical queries (a histogram over thousands of near-unique values is mostly noise).
MAX_CATEGORIES = 1000


# --------------------------------------------------------------------------------------------
# Public types


@dataclass(frozen=True)
class ColumnDomain:
    """What is declared about a column: its range or its categories, with their source.

    Mechanisms clamp to these bounds and histograms use these categories, so they should come
    from documentation or general knowledge; a bound computed from the data itself leaks. One
    that is (no documented bound exists) says so in ``from_data``, and every page and export
    that uses it flags it.

    Parameters
    ----------
    kind : {"numeric", "categorical"}
    lower, upper : float, optional
        Public bounds of a numeric column (both required, finite, ``lower < upper``).
    categories : tuple of str, optional
        Every declared category of a categorical column, including ones with no rows.
    integer : bool
        Whether a numeric column holds whole numbers only.
    unit : str
        Unit of a numeric column, e.g. ``"years"``, ``"USD"``, ``"cm"``.
    source : str
        Where the bound or the category list comes from.
    from_data : bool
        Whether a bound was read off the data itself rather than documented.
    bins : tuple of float, optional
        Public bin edges of a numeric column (at least two, increasing, finite): the cells of
        its binned histogram.
    """

    kind: Literal["numeric", "categorical"]
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] | None = None
    integer: bool = False
    unit: str = ""
    source: str = ""
    from_data: bool = False
    bins: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.bins is not None:
            edges = np.asarray(self.bins, dtype=np.float64)
            if self.kind != "numeric" or edges.ndim != 1 or edges.size < 2 or not (
                    np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)):
                raise ValueError("bins must be at least two increasing finite edges of a "
                                 "numeric domain")
        if self.kind == "numeric":
            lo, hi = self.lower, self.upper
            if lo is None or hi is None or not (-np.inf < lo < hi < np.inf):
                raise ValueError(
                    f"a numeric domain needs finite bounds with lower < upper, got [{lo}, {hi}]"
                )
            if self.categories is not None:
                raise ValueError("a numeric domain has no categories")
        elif self.kind == "categorical":
            cats = self.categories
            if not cats or not all(isinstance(c, str) for c in cats) or len(set(cats)) != len(cats):
                raise ValueError("a categorical domain needs a non-empty tuple of distinct strings")
            if self.lower is not None or self.upper is not None:
                raise ValueError("a categorical domain has no bounds")
        else:
            raise ValueError(f"kind must be 'numeric' or 'categorical', got {self.kind!r}")


@dataclass
class LoadedDataset:
    """A dataset ready for the pages.

    Attributes
    ----------
    name : str
        What the UI calls it (a built-in name, or the uploaded file's name).
    frame : pandas.DataFrame or None
        One row per person (None for a data-folder file). Numeric columns are int64 or
        float64 (NaN = missing);
        categorical columns are pandas Categorical; text columns with more than
        ``MAX_CATEGORIES`` distinct values are plain strings.
    domains : dict of str to ColumnDomain
        Public domains of built-in columns; empty for uploads (the user declares bounds).
    warnings : list of str
        What was dropped or changed on load, in plain language (may quote column names).
    source : str
        Provenance and licence, or ``"Uploaded file <name>"``.
    key : str
        What identifies the data in caches (``builtin:<name>:<rows>``, ``file:<name>:<version>``;
        empty for an upload, which the session keys by its file id).
    file : engine.FileSource, optional
        A data-folder file: then ``frame`` is None (the file is never loaded whole).
    hidden : frozenset of str
        Columns no query offers: declared "ignore", or the person id (``dashboard.data.schema``).
    declared_unit : dpcore.contributions.PrivacyUnit, optional
        The privacy unit the data comes with (a built-in's or a schema file's): the session
        starts from it.
    cells : pandas.DataFrame, optional
        An upload's cells, which its release (``dashboard.release_panel.source_of``) and its
        true answers on the pages (``relation``) read: every column and every record of the
        file, each cell its own text as written (None when missing), so that no cell's value
        depends on the column's guessed type, which every cell of it decides. ``frame``
        holds the same rows, each cell typed by the same rule (``engine.cells``).
    """

    name: str
    frame: pd.DataFrame | None
    domains: dict[str, ColumnDomain]
    warnings: list[str]
    source: str
    key: str = ""
    file: Any = None
    hidden: frozenset[str] = frozenset()
    declared_unit: PrivacyUnit | None = None
    cells: pd.DataFrame | None = field(default=None, repr=False)

    @functools.cached_property
    def relation(self) -> Any:
        """The engine relation every true answer and column fact comes from
        (``dashboard.data.relation.Relation``): the frame, registered in DuckDB and scanned
        in place, or the data-folder file, scanned out of core. An upload's true answers
        read its cells, as its release does (``FrameSource.cells``: each cell by the one
        rule of ``engine.cells``); its typed frame says only what the columns are."""
        if self.file is not None:
            return Relation(self.file, self.key)
        cells = None
        if self.cells is not None:
            cells = self.cells[list(self.frame.columns)]   # the frame drops empty columns
        return Relation.of_frame(self.frame, self.name, key=self.key or None, cells=cells)




class DatasetError(ValueError):
    """A file that cannot be loaded; the message says what is wrong and how to fix it."""



# --------------------------------------------------------------------------------------------
# Profiles


def _frame_of(ds: LoadedDataset | pd.DataFrame) -> pd.DataFrame:
    if isinstance(ds, LoadedDataset):
        return ds.frame
    if isinstance(ds, pd.DataFrame):
        return ds
    raise TypeError(f"expected a LoadedDataset or a DataFrame, got {type(ds).__name__}")


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def profile(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per column: its type, missing and distinct counts, and min/max if numeric.

    This describes the data itself, for the data owner's eyes: min and max are not public
    bounds and must not be used as clamping bounds.

    Returns
    -------
    pandas.DataFrame
        Columns ``column`` (str), ``type`` ("numeric" or "categorical"), ``missing`` and
        ``distinct`` (int64, distinct non-missing values), ``min`` and ``max`` (float64,
        NaN for categorical or all-missing columns).
    """
    frame = _frame_of(frame)
    rows = []
    for name in frame.columns:
        col = frame[name]
        numeric = _is_numeric(col)
        values = col.to_numpy(dtype=np.float64, na_value=np.nan) if numeric else None
        has_values = values is not None and not np.all(np.isnan(values))
        rows.append({
            "column": str(name),
            "type": "numeric" if numeric else "categorical",
            "missing": int(col.isna().sum()),
            "distinct": int(col.nunique(dropna=True)),
            "min": float(np.nanmin(values)) if has_values else np.nan,
            "max": float(np.nanmax(values)) if has_values else np.nan,
        })
    out = pd.DataFrame(rows, columns=["column", "type", "missing", "distinct", "min", "max"])
    return out.astype({"missing": np.int64, "distinct": np.int64, "min": np.float64,
                       "max": np.float64})


def declared_numeric(ds: LoadedDataset) -> set[str]:
    """The columns the dataset's declarations say are numeric (role numeric, with bounds)."""
    return {c for c, d in ds.domains.items() if d.kind == "numeric"}
