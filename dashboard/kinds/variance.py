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

    def answer_unit(self, column_unit: str) -> str:
        return f"{column_unit}²" if column_unit else "the column's units, squared"

    def sensitivity_words(self, plan, neighbours):
        """The count, the sum of deviations and the sum of squared deviations."""
        answer, one, rows = plan.answer, neighbours.one, neighbours.rows
        half = (answer.upper - answer.lower) / 2
        mid = (answer.upper + answer.lower) / 2
        dev, sq = (neighbours.fmt(p.sensitivity) for p in plan.built_parts[1:])
        why = (f"values are clamped to [{answer.lower:g}, {answer.upper:g}], each lies within "
               f"h = {half:g} of the midpoint {mid:g}, so {neighbours.who} changes the count "
               f"by at most {one}, the sum of deviations by at most {rows}h = {dev} and the "
               f"sum of squared deviations by at most {rows}h² = {sq}")
        return f"count {one}, deviations {dev}, squares {sq}", why

    def parts_explanation(self, plan, sensitivity, why, fmt):
        names, parts = plan.part_names, plan.parts
        scale = ", ".join(f"{n} {fmt(m.scale)}" for n, m in zip(names, parts, strict=True))
        each = "; ".join(f"{n} ({m.privacy.describe()}, scale {fmt(m.scale)})"
                         for n, m in zip(names, parts, strict=True))
        return scale, (
            f"Sensitivity {sensitivity}: {why}. The variance is S₂/n − (S₁/n)², made of three "
            f"noisy parts, the count n, the sum of deviations S₁ and the sum of squared "
            f"deviations S₂ from the bounds' midpoint, a third of the budget each: {each}; "
            f"together {plan.release.privacy.describe()} by sequential composition. The "
            f"noisy count is floored at 1 and the result kept within [0, h²] "
            f"(post-processing, as a release does).")


PAGE = VariancePage()
