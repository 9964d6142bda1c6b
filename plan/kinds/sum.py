"""The bounded sum: the sum of a column clamped to declared bounds, one additive mechanism
(each clamped value rounded to a whole number when the noise is whole-number noise)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from dpcore.contributions import sum_sensitivity
from plan.fields import PrivacyUnit
from plan.kinds.base import additive_intervals, as_input, number
from plan.kinds.bounded import BoundedColumn, BoundedColumnKind
from plan.parts import Built, additive, whole_sum

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Sum", "KIND"]


@dataclass(frozen=True)
class Sum(BoundedColumn):
    """The sum of ``column`` clamped to ``bounds``."""

    kind: Literal["sum"] = field(default="sum", init=False)


class SumKind(BoundedColumnKind):
    name = "sum"
    spec = Sum
    statistic = "sum"
    relative_error = True

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        whole = whole_sum(query.mechanism, query.query.bounds)
        engine = self.clamped_sum(query, unit, whole=whole)
        sens = self.clamped_sensitivity(sum_sensitivity, query, unit, path)
        part = additive(query.mechanism, sens, f"{path}.mechanism", integer=whole)
        return Built(query, unit, (engine,), (part,), sens, kind=self)

    def draw(self, built, certified, aggs, keys):
        part = certified[0]
        return self.statistic, (((), number(part.draw(as_input(part, aggs[0].total)))),)

    def intervals(self, built, certified, rows, alpha):
        return additive_intervals(certified[0], [v for _, v in rows], alpha)

    def interval_method(self, spec):
        return "exact"


KIND = SumKind()
