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

    def sensitivity_words(self, plan, neighbours):
        total, why = self.clamped_sum_words(plan, neighbours)
        one = neighbours.one
        return f"sum {total}, count {one}", why + f", and the count by at most {one}"

    def parts_explanation(self, plan, sensitivity, why, fmt):
        sum_mech, count_mech = plan.parts
        scale = f"sum {fmt(sum_mech.scale)}, count {fmt(count_mech.scale)}"
        return scale, (
            f"Sensitivity {sensitivity}: {why}. The {self.name} is {self.made_of}; "
            f"budget split: {plan.sum_share:.0%} to the sum ({sum_mech.privacy.describe()}, "
            f"scale {fmt(sum_mech.scale)}) and {1 - plan.sum_share:.0%} to the count "
            f"({count_mech.privacy.describe()}, scale {fmt(count_mech.scale)}); together "
            f"{plan.release.privacy.describe()} by sequential composition.")


PAGE = MeanPage()
