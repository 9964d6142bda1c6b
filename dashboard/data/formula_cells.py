"""The cells of a loaded file that could run as a formula in a spreadsheet (text starting
with =, +, - or @ that is not a number): listed on the Data page for the owner's eyes, where
the upload's warning points (the warning itself never quotes a cell). No widgets here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.data.model import LoadedDataset
from engine.cells import cell_number, is_missing, strip_text

#: What a spreadsheet may run as a formula at the start of a cell.
FORMULA_START = ("=", "+", "-", "@")


def formula_cells(loaded: LoadedDataset) -> dict[str, pd.Series]:
    """Per column of an upload (its cells as a release reads them), the formula-looking
    texts and how many cells hold each, most frequent first; columns with none left out."""
    out: dict[str, pd.Series] = {}
    if loaded.cells is None:
        return out
    for column in loaded.cells.columns:
        codes, uniques = pd.factorize(loaded.cells[column].astype(object),
                                      use_na_sentinel=True)
        texts = [None if is_missing(v) else strip_text(str(v)) for v in uniques]
        looks = np.array([t is not None and t.startswith(FORMULA_START)
                          and cell_number(t) is None for t in texts], dtype=bool)
        if not looks.any():
            continue
        counts = np.bincount(codes[codes >= 0], minlength=len(uniques))[looks]
        found = pd.Series(counts, index=pd.Index([t for t, f in zip(texts, looks, strict=True)
                                                  if f], dtype=object), dtype=np.int64)
        found = found.groupby(level=0, sort=False).sum()
        out[str(column)] = found.iloc[np.lexsort((found.index.astype(str),
                                                  -found.to_numpy()))]
    return out
