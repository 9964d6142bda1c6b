"""The count: the number of rows (at most max rows per person), one additive mechanism."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dpcore.contributions import count_sensitivity
from engine.queries import CountRows
from plan.fields import PrivacyUnit, _Fields
from plan.kinds.base import QueryKind, additive_intervals, as_input, number
from plan.parts import Built, additive, contribution, contribution_bounds

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Count", "KIND"]


@dataclass(frozen=True)
class Count:
    """The number of rows (at most ``max_rows`` per person)."""

    kind: Literal["count"] = field(default="count", init=False)

    def check(self, path: str) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind}

    @staticmethod
    def from_fields(f: _Fields) -> Count:
        return Count()


class CountKind(QueryKind):
    name = "count"
    spec = Count
    statistic = "count"
    counts_rows = True

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        sens = count_sensitivity(contribution_bounds(unit, grouped=False))
        part = additive(query.mechanism, sens, f"{path}.mechanism", integer=True)
        return Built(query, unit, (CountRows(contribution(unit, grouped=False)),), (part,),
                     sens, kind=self)

    def draw(self, built, certified, aggs, keys):
        part = certified[0]
        return self.statistic, (((), number(part.draw(as_input(part, aggs[0].rows)))),)

    def intervals(self, built, certified, rows, alpha):
        return additive_intervals(certified[0], [v for _, v in rows], alpha)

    def interval_method(self, spec):
        return "exact"

    def rules(self, query):
        return ["every row is counted"]

    def spark_reason(self, spec):
        return ""


KIND = CountKind()
