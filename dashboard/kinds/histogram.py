"""The histogram on the pages: a count per category of a categorical column."""

from __future__ import annotations

from dashboard.kinds.base import CellsPage


class HistogramPage(CellsPage):
    name = "histogram"
    label = "Histogram: count per category"
    noun = "count"
    answer_noun = "counts"


PAGE = HistogramPage()
