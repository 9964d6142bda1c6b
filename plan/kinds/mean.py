"""The bounded mean: a noisy clamped sum over a noisy count (two additive parts sharing the
budget), the ratio post-processed into the bounds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from dpcore.contributions import mean_sensitivities
from engine.queries import BoundedSum
from plan.kinds.base import QueryKind, means_of
from plan.kinds.sum import clamping_rule
from plan.model import (
    Bounds,
    PlanQuery,
    PrivacyUnit,
    _column,
    _declared,
    _f,
    _Fields,
    _number,
    _probability,
)
from plan.parts import Built, contribution, contribution_bounds, split_parts, whole_sum
from plan.parts import field as at

__all__ = ["Mean", "KIND", "MEAN_RULE"]

MEAN_RULE = ("the mean is released as noisy sum / max(noisy count, 1), clamped to the bounds "
             "(post-processing)")


@dataclass(frozen=True)
class Mean:
    """The mean of ``column`` clamped to ``bounds``: a noisy sum over a noisy count, the sum
    getting ``sum_share`` of the budget (``dpcore.queries.NoisyMean``)."""

    column: str
    bounds: Bounds
    sum_share: float = 0.5
    kind: Literal["mean"] = field(default="mean", init=False)

    def check(self, path: str) -> None:
        _column(self.column, f"{path}.column")
        self.bounds.check(f"{path}.bounds")
        _number(self.sum_share, f"{path}.sum_share")
        _probability(self.sum_share, f"{path}.sum_share")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "bounds": self.bounds.to_dict(),
                "sum_share": _f(self.sum_share)}

    @staticmethod
    def from_fields(f: _Fields) -> Mean:
        share = f.number("sum_share", required=False)
        return Mean(f.text("column"), _declared(f, "bounds", Bounds),
                    0.5 if share is None else share)


class MeanKind(QueryKind):
    name = "mean"
    spec = Mean
    statistic = "mean"

    def declarations(self, spec):
        return [(f"bounds of {spec.column!r}", spec.bounds)]

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q = query.query
        whole = whole_sum(query.mechanism, q.bounds)
        engine = BoundedSum(q.column, q.bounds.lower, q.bounds.upper,
                            contribution(unit, grouped=False), whole=whole)
        with at(f"{path}.query.bounds"):
            sens = mean_sensitivities(contribution_bounds(unit, grouped=False),
                                      lower=q.bounds.lower, upper=q.bounds.upper)
        parts = split_parts(query.mechanism, q.sum_share, sens, f"{path}.mechanism",
                            f"{path}.query", whole=whole)
        return Built(query, unit, (engine,), parts, sens[0])

    def part_values(self, built, aggs):
        """(the clamped sum, the number of values summed)."""
        return aggs[0].total, aggs[0].rows

    def combine(self, built, noisy):
        q = built.query.query
        return means_of(*noisy, q.bounds.lower, q.bounds.upper)

    def rules(self, query):
        q = query.query
        return [clamping_rule(query, q.column, q.bounds), MEAN_RULE]

    def program_record(self, spec):
        return {"column": spec.column, "lower": spec.bounds.lower, "upper": spec.bounds.upper}

    def spark_reason(self, spec):
        return ""


KIND = MeanKind()
