"""The variance of a numeric column clamped to bounds on the pages: a count and the sums of
deviations and of their squares, on real-number noise."""

from __future__ import annotations

from dashboard.kinds.base import PartsPage


class VariancePage(PartsPage):
    name = "variance"
    label = "Variance of a column"
    whole_number_noise = False   # squared deviations are not whole numbers


PAGE = VariancePage()
