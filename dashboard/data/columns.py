"""Which columns of a dataset the pages' queries can use: numeric ones (sum, mean, …) and
categorical ones (histogram, crosstab), from the engine's column facts and the declarations.

Above ``dashboard.data.model`` (the dataset) and ``dashboard.data.column_facts`` (what the engine
computes about its columns), which it reads both.
"""

from __future__ import annotations

import pandas as pd

from dashboard.data import column_facts
from dashboard.data.model import (
    MAX_CATEGORIES,
    LoadedDataset,
    _frame_of,
    _is_numeric,
    declared_numeric,
)

__all__ = ["numeric_columns", "categorical_columns"]


def numeric_columns(ds: LoadedDataset | pd.DataFrame) -> list[str]:
    """Columns that numeric queries (sum, mean, …) can use: int or float dtype.

    For a LoadedDataset, the engine's column kinds (any dataset, files too), and every column
    declared numeric whatever its cells hold: each cell is read by the one rule
    (``engine.cells``, rule 4: a cell that is not a number is missing), as a release reads
    it; for a frame, its pandas dtypes (the tests' reference).
    """
    if isinstance(ds, LoadedDataset):
        numeric = set(column_facts.numeric_columns(ds.relation)) | declared_numeric(ds)
        return [c for c in ds.relation.columns if c in numeric and c not in ds.hidden]
    frame = _frame_of(ds)
    return [str(c) for c in frame.columns if _is_numeric(frame[c])]


def categorical_columns(ds: LoadedDataset | pd.DataFrame) -> list[str]:
    """Columns that categorical queries (histogram, crosstab) can use.

    Categorical dtype with at most ``MAX_CATEGORIES`` categories; text columns with more
    distinct values are left out. For a LoadedDataset, the engine's column kinds and distinct
    counts, and the declared categories (any dataset, files too); for a frame, its dtypes.
    """
    if isinstance(ds, LoadedDataset):
        declared = tuple(c for c, d in ds.domains.items() if d.kind == "categorical")
        numbers = declared_numeric(ds)   # a text column declared numeric is numbers now
        return [c for c in column_facts.categorical_columns(ds.relation, declared)
                if c not in ds.hidden and c not in numbers]
    frame = _frame_of(ds)
    return [str(c) for c in frame.columns
            if isinstance(frame[c].dtype, pd.CategoricalDtype)
            and len(frame[c].cat.categories) <= MAX_CATEGORIES]

