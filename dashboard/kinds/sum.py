"""The sum of a numeric column clamped to bounds on the pages (also per group)."""

from __future__ import annotations

from dashboard.kinds.base import ClampedPage


class SumPage(ClampedPage):
    name = "sum"
    label = "Sum of a column"
    group_label = "Sum per group"


PAGE = SumPage()
