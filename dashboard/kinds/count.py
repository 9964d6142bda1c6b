"""The count of rows on the pages: offered always, on Noisy statistics and per group."""

from __future__ import annotations

from dashboard.kinds.base import RowsPage


class CountPage(RowsPage):
    name = "count"
    label = "Count of rows"
    group_label = "Count per group"


PAGE = CountPage()
