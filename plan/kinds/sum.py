"""The bounded sum: the sum of a column clamped to declared bounds, one additive mechanism
(each clamped value rounded to a whole number when the noise is whole-number noise)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from dpcore.contributions import sum_sensitivity
from engine.queries import BoundedSum
from plan.kinds.base import QueryKind, as_input, number
from plan.model import Bounds, PlanQuery, PrivacyUnit, _column, _declared, _Fields
from plan.parts import Built, additive, contribution, contribution_bounds, whole_sum
from plan.parts import field as at

__all__ = ["Sum", "KIND", "clamping_rule"]


@dataclass(frozen=True)
class Sum:
    """The sum of ``column`` clamped to ``bounds``."""

    column: str
    bounds: Bounds
    kind: Literal["sum"] = field(default="sum", init=False)

    def check(self, path: str) -> None:
        _column(self.column, f"{path}.column")
        self.bounds.check(f"{path}.bounds")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "bounds": self.bounds.to_dict()}

    @staticmethod
    def from_fields(f: _Fields) -> Sum:
        return Sum(f.text("column"), _declared(f, "bounds", Bounds))


def clamping_rule(query: PlanQuery, column: str, bounds: Bounds) -> str:
    """The card's rule for a clamped column (rounded when the noise is whole-number)."""
    rounded = (" and rounded to whole numbers (ties to even), as the whole-number noise "
               "needs") if whole_sum(query.mechanism, bounds) else ""
    return (f"values of {column!r} are clamped to [{bounds.lower:g}, {bounds.upper:g}]"
            f"{rounded}; missing or non-numeric values are not counted")


class SumKind(QueryKind):
    name = "sum"
    spec = Sum
    statistic = "sum"

    def declarations(self, spec):
        return [(f"bounds of {spec.column!r}", spec.bounds)]

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q = query.query
        whole = whole_sum(query.mechanism, q.bounds)
        engine = BoundedSum(q.column, q.bounds.lower, q.bounds.upper,
                            contribution(unit, grouped=False), whole=whole)
        with at(f"{path}.query.bounds"):
            sens = sum_sensitivity(contribution_bounds(unit, grouped=False),
                                   lower=q.bounds.lower, upper=q.bounds.upper)
        part = additive(query.mechanism, sens, f"{path}.mechanism", integer=whole)
        return Built(query, unit, (engine,), (part,), sens)

    def draw(self, built, certified, aggs, keys):
        part = certified[0]
        return self.statistic, (((), number(part.draw(as_input(part, aggs[0].total)))),)

    def rules(self, query):
        return [clamping_rule(query, query.query.column, query.query.bounds)]

    def program_record(self, spec):
        return {"column": spec.column, "lower": spec.bounds.lower, "upper": spec.bounds.upper}

    def spark_reason(self, spec):
        return ""


KIND = SumKind()
