"""The mean of a numeric column clamped to bounds on the pages (also per group): a noisy sum
over a noisy count, its budget split by the page's share."""

from __future__ import annotations

from dashboard.kinds.base import PartsPage


class MeanPage(PartsPage):
    name = "mean"
    label = "Mean of a column"
    group_label = "Mean per group"
    made_of = "a noisy sum divided by a noisy count"
    error_note = ("A noisy mean divides two noisy numbers and has no closed-form distribution: "
                  "only the simulation is shown, and ±α is its quantile.")


PAGE = MeanPage()
