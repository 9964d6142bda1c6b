"""The variance of a numeric column clamped to bounds on the pages: a count and the sums of
deviations and of their squares, on real-number noise."""

from __future__ import annotations

from dashboard.kinds.base import PartsPage


class VariancePage(PartsPage):
    name = "variance"
    label = "Variance of a column"
    whole_number_noise = False   # squared deviations are not whole numbers
    error_note = ("A noisy variance is made of three noisy parts and has no closed-form "
                  "distribution: only the simulation is shown, and ±α is its quantile. "
                  "Releases below 0 are raised to 0 (a spike at the left end when the noise "
                  "is large).")


PAGE = VariancePage()
