"""Which columns hold cells that are not numbers (the one reading, ``engine.cells`` rule 4):
a numeric column's cells set to missing, and a text column that is mostly numbers — which a
declaration "numeric" makes a column of numbers, those cells missing. No widgets here.

For the data owner's eyes (the Data page): the cells are listed there, never in a message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.data.model import ColumnDomain, LoadedDataset, declared_numeric
from dashboard.data.schema import Schema, with_origin
from engine.cells import cell_numbers, not_numbers

#: A text column is offered the declaration "numeric" when at least this share of its
#: non-missing cells are numbers (a column of codes with a few words, "unknown", "12,500").
MOSTLY_NUMBERS = 0.5
#: The source of bounds read off the data when a column is declared numeric from here.
DECLARED_HERE = ("bounds read off the data when the column was declared numeric on the Data "
                 "page: type public bounds")


@dataclass(frozen=True)
class NumberCells:
    """A column's cells as numbers: how many are numbers, and the others (text → count)."""

    column: str
    numbers: int
    others: pd.Series
    declared: bool                   # declared numeric, or numbers by its type already
    lowest: float | None             # the smallest and largest number (read off the data)
    highest: float | None

    @property
    def not_numbers(self) -> int:
        return int(self.others.sum())


def _cells(loaded: LoadedDataset, column: str) -> pd.Series | None:
    """A column's cells as a release reads them (an upload's texts), else the frame's."""
    if loaded.cells is not None and column in loaded.cells.columns:
        return loaded.cells[column]
    if loaded.frame is not None and column in loaded.frame.columns:
        return loaded.frame[column]
    return None


def number_cells(loaded: LoadedDataset) -> list[NumberCells]:
    """Every column (not hidden, not declared categorical) with a cell that is not a number
    and that is either declared numeric, typed as numbers, or mostly numbers. Columns of a
    data-folder file are not read here (its cells are never held in memory)."""
    numeric = declared_numeric(loaded)
    out = []
    for column in (loaded.frame.columns if loaded.frame is not None else ()):
        domain = loaded.domains.get(column)
        if column in loaded.hidden or (domain is not None and domain.kind == "categorical"):
            continue
        cells = _cells(loaded, column)
        if cells is None or (pd.api.types.is_numeric_dtype(cells)
                             and not pd.api.types.is_bool_dtype(cells)):
            continue   # typed numbers: nothing in it is a non-number
        values = cell_numbers(cells)
        others = not_numbers(cells)
        # every cell is missing, a number or not a number (rule 3, rule 4)
        n_numbers = int(np.count_nonzero(~np.isnan(values)))
        n_present = n_numbers + int(others.sum())
        declared = column in numeric or pd.api.types.is_numeric_dtype(loaded.frame[column])
        if others.empty or not (declared or n_numbers >= MOSTLY_NUMBERS * n_present):
            continue
        finite = values[np.isfinite(values)]
        out.append(NumberCells(str(column), n_numbers, others, declared,
                               float(finite.min()) if finite.size else None,
                               float(finite.max()) if finite.size else None))
    return out


def declared_numeric_schema(current: Schema, found: NumberCells) -> Schema:
    """``current`` with ``found``'s column declared numeric: bounds from its smallest and
    largest number, rounded out to whole numbers and flagged as read off the data (the
    owner is asked to type public ones)."""
    low = math.floor(found.lowest) if found.lowest is not None else 0.0
    high = math.ceil(found.highest) if found.highest is not None else 1.0
    if not high > low:
        high = low + 1.0
    domain = with_origin(ColumnDomain("numeric", float(low), float(high)), "data",
                         DECLARED_HERE)
    return Schema({**current.domains, found.column: domain}, current.ignored - {found.column},
                  current.unit, current.source)
