"""The bounded variance, as Tumult Analytics and diffprivlib offer it: three noisy parts — the
count, the sum of deviations from the bounds' midpoint and the sum of their squares — each
with a third of the budget, post-processed into the variance.

With each value clamped to [L, U], its deviation y = x − (L + U)/2 lies in [−h, h] with
h = (U − L)/2, so one person (at most r values) moves the count by r, the sum of deviations by
r·h and the sum of squares by r·h². The released variance is
S₂/n − (S₁/n)², n the noisy count floored at 1, clamped to [0, h²] (every variance of values
in [L, U] lies there): post-processing, no privacy spent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from dpcore.contributions import count_sensitivity, sum_sensitivity
from dpcore.intervals import variance_interval
from dpcore.measures import split_budget
from dpcore.mechanisms import CATALOGUE
from engine.queries import BoundedSum
from plan.fields import PlanError, PrivacyUnit
from plan.kinds.base import drawn_mechanism
from plan.kinds.bounded import BoundedColumn, BoundedColumnKind
from plan.parts import Built, Loss, Part, additive, contribution_bounds
from plan.parts import field as at

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Variance", "KIND", "variance_of", "PART_NAMES"]

#: The three parts, in the order they are built, computed and drawn.
PART_NAMES = ("count", "sum of deviations", "sum of squared deviations")


@dataclass(frozen=True)
class Variance(BoundedColumn):
    """The variance of ``column`` clamped to ``bounds`` (population variance of the values
    kept: missing values left out)."""

    kind: Literal["variance"] = field(default="variance", init=False)


def variance_of(count: Any, deviations: Any, squares: Any, half_width: float
                ) -> NDArray[np.float64]:
    """The variance from its (noisy) parts: S₂/n − (S₁/n)² with n floored at 1, clamped to
    [0, h²]. Vectorized over releases (any shape, broadcast)."""
    n = np.maximum(np.asarray(count, dtype=np.float64), 1.0)
    mean = np.asarray(deviations, dtype=np.float64) / n
    value = np.asarray(squares, dtype=np.float64) / n - mean * mean
    return np.clip(value, 0.0, half_width * half_width)


def _thirds(budget: dict[str, float]) -> list[dict[str, float]]:
    """Every budget keyword split in three parts that add up to at most it."""
    out: list[dict[str, float]] = [{}, {}, {}]
    for name, value in budget.items():
        first, rest = split_budget(value, 1 / 3)
        second, third = split_budget(rest, 0.5)
        for share, part in zip((first, second, third), out, strict=True):
            part[name] = share
    return out


class VarianceKind(BoundedColumnKind):
    name = "variance"
    spec = Variance
    statistic = "variance"
    made_of_parts = True
    relative_error = True
    centred = True
    release_rules = (
        "the variance is released as S₂/n − (S₁/n)² from the noisy count n (floored at 1), "
        "sum of deviations S₁ and sum of squared deviations S₂ from the bounds' midpoint, "
        "clamped to [0, ((upper − lower)/2)²] (post-processing)",)

    def engine_queries(self, query: PlanQuery, unit: PrivacyUnit) -> tuple[BoundedSum, ...]:
        bounds = query.query.bounds
        centre = (bounds.lower + bounds.upper) / 2
        return (self.clamped_sum(query, unit, centre=centre),
                self.clamped_sum(query, unit, centre=centre, squared=True))

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q, noise = query.query, query.mechanism
        mp = f"{path}.mechanism"
        if CATALOGUE[noise.kind].integer_only or CATALOGUE[noise.kind].needs_range:
            raise PlanError(f"{mp}.kind", f"a variance's parts take noise without an answer "
                            f"range on real numbers (laplace, gaussian), got {noise.kind}")
        half = (q.bounds.upper - q.bounds.lower) / 2
        bounds = contribution_bounds(unit, grouped=False)
        with at(f"{path}.query.bounds"):
            sensitivities = (count_sensitivity(bounds),
                             sum_sensitivity(bounds, lower=-half, upper=half),
                             sum_sensitivity(bounds, lower=0.0, upper=half * half))
        with at(mp):
            shares = _thirds(noise.budget())
        read_at = None if noise.measure != "zcdp" or noise.delta is None else (
            split_budget(noise.delta, 1 / 3)[0])
        parts = []
        for name, sens, share in zip(PART_NAMES, sensitivities, shares, strict=True):
            part = additive(noise, sens, mp, share, name=name, integer=name == "count")
            loss = part.loss if read_at is None else Loss.of(part.mechanism.privacy,
                                                             read_at=read_at)
            parts.append(Part(name, part.mechanism, part.sensitivity, loss,
                              integer=part.integer))
        return Built(query, unit, self.engine_queries(query, unit), tuple(parts),
                     sensitivities[2], kind=self)

    def part_values(self, built: Built, aggs: tuple) -> tuple[float, float, float]:
        """The true input of each part: (values kept, their sum of deviations, of squares)."""
        deviations, squares = aggs
        return float(deviations.rows), float(deviations.total), float(squares.total)

    def combine(self, built: Built, noisy: tuple[Any, Any, Any]) -> NDArray[np.float64]:
        q = built.query.query
        return variance_of(*noisy, (q.bounds.upper - q.bounds.lower) / 2)

    def release(self, built, certified, aggs, keys, alpha):
        noisy = self.draw_parts(built, certified, aggs)
        q = built.query.query
        # from the three noisy parts, the mechanism's own output (post-processing)
        count, deviations, squares = (drawn_mechanism(part) for part in certified)
        low, high = variance_interval(count, noisy[0], deviations, noisy[1], squares, noisy[2],
                                      half_width=(q.bounds.upper - q.bounds.lower) / 2,
                                      alpha=alpha)
        return (self.statistic, (((), float(self.combine(built, noisy))),),
                ((float(low), float(high)),))

    def interval_method(self, spec):
        return "variance"


KIND = VarianceKind()
