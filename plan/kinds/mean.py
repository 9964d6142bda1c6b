"""The bounded mean: a noisy clamped sum over a noisy count (two additive parts sharing the
budget), the ratio post-processed into the bounds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dpcore.contributions import mean_sensitivities
from dpcore.intervals import mean_interval
from plan.fields import Bounds, PrivacyUnit, _declared, _f, _Fields, _number, _probability
from plan.kinds.base import drawn_mechanism, means_of
from plan.kinds.bounded import BoundedColumn, BoundedColumnKind
from plan.parts import Built, split_parts, whole_sum

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Mean", "KIND", "MEAN_RULE"]

MEAN_RULE = ("the mean is released as noisy sum / max(noisy count, 1), clamped to the bounds "
             "(post-processing)")


@dataclass(frozen=True)
class Mean(BoundedColumn):
    """The mean of ``column`` clamped to ``bounds``: a noisy sum over a noisy count, the sum
    getting ``sum_share`` of the budget (``tests/queries_reference.NoisyMean``)."""

    sum_share: float = 0.5
    kind: Literal["mean"] = field(default="mean", init=False)

    def check(self, path: str) -> None:
        super().check(path)
        _number(self.sum_share, f"{path}.sum_share")
        _probability(self.sum_share, f"{path}.sum_share")

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "sum_share": _f(self.sum_share)}

    @classmethod
    def from_fields(cls, f: _Fields) -> Mean:
        share = f.number("sum_share", required=False)   # read first: named before the column
        return cls(f.text("column"), _declared(f, "bounds", Bounds),
                   0.5 if share is None else share)


class MeanKind(BoundedColumnKind):
    name = "mean"
    spec = Mean
    statistic = "mean"
    made_of_parts = True
    relative_error = True
    split_by_share = True
    clamps_to_bounds = True
    release_rules = (MEAN_RULE,)

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q = query.query
        whole = whole_sum(query.mechanism, q.bounds)
        engine = self.clamped_sum(query, unit, whole=whole)
        sens = self.clamped_sensitivity(mean_sensitivities, query, unit, path)
        parts = split_parts(query.mechanism, q.sum_share, sens, f"{path}.mechanism",
                            f"{path}.query", whole=whole)
        return Built(query, unit, (engine,), parts, sens[0], kind=self)

    def part_values(self, built, aggs):
        """(the clamped sum, the number of values summed)."""
        return aggs[0].total, aggs[0].rows

    def combine(self, built, noisy):
        q = built.query.query
        return means_of(*noisy, q.bounds.lower, q.bounds.upper)

    def release(self, built, certified, aggs, keys, alpha):
        noisy = self.draw_parts(built, certified, aggs)
        mean = float(self.combine(built, noisy))
        q = built.query.query
        # from the noisy sum and count, which are the mechanism's own output (post-processing)
        low, high = mean_interval(drawn_mechanism(certified[0]), noisy[0],
                                  drawn_mechanism(certified[1]), noisy[1],
                                  lower=q.bounds.lower, upper=q.bounds.upper, alpha=alpha)
        return self.statistic, (((), mean),), ((float(low), float(high)),)

    def interval_method(self, spec):
        return "mean"


KIND = MeanKind()
