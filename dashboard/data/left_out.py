"""How many rows a column's declared categories leave out, and the sentence the pages say.

A row whose value is not among the declared categories is dropped by every query over those
categories (a histogram, the groups, a table, a selection): a category missing from the list,
or one split in two at a comma, silently loses its rows. The figures are exact, read off the
data, for the data owner's eyes on the page only (never in a plan, a release or a URL). No
widgets here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dashboard.data import column_facts
from dashboard.data.model import LoadedDataset
from dashboard.data.relation import Relation
from dashboard.text import plain
from engine import CategoryCounts, EngineError
from engine.cells import cell_key

#: Share of the rows left out from which the pages say so (below it: a rare value nobody
#: declared, which a steward may well leave out on purpose).
LEFT_OUT_SHARE = 0.01


@dataclass(frozen=True)
class LeftOut:
    """Rows of ``column`` whose (present) value is outside its declared categories, of all
    ``rows`` of the data (missing values are neither: no category holds them)."""

    column: str
    outside: int
    rows: int

    @property
    def share(self) -> float:
        return self.outside / self.rows if self.rows else 0.0

    @property
    def many(self) -> bool:
        return self.outside > 0 and self.share >= LEFT_OUT_SHARE

    def sentence(self) -> str:
        """What the page says (markdown, the column name escaped)."""
        # rounded, but never to 100 % while some rows are kept, nor to 0 %
        percent = 100 if self.outside == self.rows else min(max(round(100 * self.share), 1),
                                                             99)
        column = plain(self.column)
        return (f"The declared categories of **{column}** leave out {self.outside:,} of "
                f"{self.rows:,} rows ({percent} %): they are dropped from every query over "
                f"{column} (histograms, groups, tables, selections). Declare the missing "
                "categories on the Data page (declared schema); a category that holds a comma "
                'is typed in double quotes ("a, b").')


def rows_left_out(relation: Relation, column: str,
                  categories: Sequence[object]) -> LeftOut | None:
    """The rows ``categories`` leave out of ``column`` (None when the engine cannot count the
    column by them: the pages say why elsewhere). One engine count, cached by data version."""
    try:
        cats = column_facts.plan_categories(categories)
        agg = relation.answer(CategoryCounts(column, cats))
    except (EngineError, TypeError, ValueError):
        return None
    rows = int(np.asarray(agg.counts).sum()) + int(agg.outside) + int(agg.missing)
    return LeftOut(column, int(agg.outside), rows)


def left_out_note(loaded: LoadedDataset, column: str | None) -> str | None:
    """The sentence for ``column`` when its declared categories leave many rows out
    (``LEFT_OUT_SHARE``), else None (no declared categories: nothing is left out)."""
    domain = loaded.domains.get(column) if column is not None else None
    if domain is None or domain.kind != "categorical" or not domain.categories:
        return None
    found = rows_left_out(loaded.relation, column, domain.categories)
    return found.sentence() if found is not None and found.many else None


def same_key_note(column: str, categories: Sequence[object]) -> str | None:
    """The sentence when two or more of ``column``'s declared categories are one key as every
    path reads a cell (``engine.cells.cell_key``: ``012`` and ``12`` are both 12), else None.
    Every row of that key matches the first of them; the others count nothing."""
    keys: dict[str | None, list[object]] = {}
    for category in categories:
        keys.setdefault(cell_key(category), []).append(category)
    clashes = [same for key, same in keys.items() if key is not None and len(same) > 1]
    if not clashes:
        return None
    shown = "; ".join(" and ".join(plain(str(c), limit=40) for c in same)
                      for same in clashes[:3]) + ("; …" if len(clashes) > 3 else "")
    return (f"Some declared categories of {plain(column)} are one key as the data is read "
            f"({shown}): a whole number is one key however it is written, so every row of "
            "that key counts for the first of them and the others stay at 0. Keep one of each.")
