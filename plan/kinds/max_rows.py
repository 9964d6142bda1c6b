"""Max rows chosen privately: the privacy unit's max rows drawn, before the release, as a DP
quantile of rows per person (report noisy max with exponential noise over candidates
1..largest, the scores tilted towards fewer rows: ``dpcore.quantiles.max_rows_scores``);
every draw the planner saw is charged, and the release publishes the value."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from dpcore.contributions import Sensitivity
from dpcore.quantiles import quantile_sensitivity
from plan.fields import (
    PlanError,
    PrivacyUnit,
    SelectionNoise,
    _bounded_int,
    _f,
    _Fields,
    _number,
    _positive,
    _probability,
)
from plan.kinds.base import QueryKind
from plan.parts import Built, Loss, Part, noisy_max
from plan.parts import field as at

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["MaxRows", "KIND", "max_rows_draw"]


@dataclass(frozen=True)
class MaxRows:
    """The privacy unit's max rows, chosen by a DP ``level``-quantile of rows per person:
    report noisy max with exponential noise (ε-DP, permute-and-flip's law) over candidates
    1..``largest`` (a public cap), each person adding one value (their number of rows).

    It was drawn before the release, on the data, with OpenDP's sampler and fresh entropy:
    ``drawn`` is the value the plan's unit uses, and ``epsilons`` the ε of every draw the
    planner saw (each one is charged: choosing among several draws is post-processing of
    all of them). A release publishes ``drawn`` and spends the sum of ``epsilons``.
    """

    level: float
    largest: int
    drawn: int
    epsilons: tuple[float, ...]
    kind: Literal["max_rows"] = field(default="max_rows", init=False)

    def check(self, path: str) -> None:
        _probability(_number(self.level, f"{path}.level"), f"{path}.level")
        for name in ("largest", "drawn"):
            _bounded_int(getattr(self, name), f"{path}.{name}")
        if self.drawn > self.largest:
            raise PlanError(f"{path}.drawn", f"must be at most largest = {self.largest}, got "
                            f"{self.drawn}")
        if not isinstance(self.epsilons, tuple) or not self.epsilons:
            raise PlanError(f"{path}.epsilons", "must hold the ε of every draw (at least one)")
        for i, eps in enumerate(self.epsilons):
            _positive(_number(eps, f"{path}.epsilons[{i}]"), f"{path}.epsilons[{i}]")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "level": _f(self.level), "largest": self.largest,
                "drawn": self.drawn, "epsilons": [float(e) for e in self.epsilons]}

    @staticmethod
    def from_fields(f: _Fields) -> MaxRows:
        epsilons = f.array("epsilons")
        return MaxRows(f.number("level"), f.integer("largest"), f.integer("drawn"),
                       tuple(_number(e, f"{f.at('epsilons')}[{i}]")
                             for i, e in enumerate(epsilons or [])))


def max_rows_draw(level: float, epsilon: float, *, path: str = "query") -> Part:
    """One draw of a DP quantile of rows per person: report noisy max with exponential
    noise (ε-DP) over the candidates' rank errors, each person adding one value (their number
    of rows), so the sensitivity is max(q, 1 − q) whatever the bounds."""
    with at(f"{path}.query.level"):
        sens = quantile_sensitivity(level, max_rows=1)
    mechanism = noisy_max(SelectionNoise("exponential", "pure", epsilon=epsilon),
                          sensitivity=sens, monotonic=False, k=1, negate=True,
                          epsilon=epsilon, rho=None, path=f"{path}.query.epsilons")
    return Part("draw", mechanism, sens, Loss.of(mechanism.privacy), integer=True,
                quantile=level, score_rows=1)


class MaxRowsKind(QueryKind):
    name = "max_rows"
    spec = MaxRows
    families = ()
    statistic = "max rows per person"
    target = None
    unique = True

    def columns(self, spec):
        return ()

    def check_unit(self, query, unit, path):
        q = query.query
        if unit.person_column is None:
            raise PlanError(path, "a max rows query needs a person-id column in the privacy "
                            "unit")
        if (unit.max_rows, unit.bounds_origin) != (q.drawn, "private"):
            raise PlanError("privacy_unit.max_rows", f"the max rows query drew {q.drawn}, "
                            f"but the unit has max rows {unit.max_rows} "
                            f"({unit.bounds_origin}): use the drawn value (origin private), "
                            "or remove the max rows query")

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        """Every draw the planner saw, each a part with its ε; nothing is computed at release
        (the value was drawn before, and is the unit's max rows)."""
        q = query.query
        parts = []
        for i, eps in enumerate(q.epsilons):
            parts.append(replace(max_rows_draw(q.level, eps, path=path), name=f"draw {i + 1}"))
        top = parts[0].sensitivity
        return Built(query, unit, (), tuple(parts), Sensitivity(top, top, top), kind=self)

    def draw(self, built, certified, aggs, keys):
        return self.statistic, ((("max rows",), built.query.query.drawn),)

    def rules(self, query):
        q = query.query
        return [f"max rows per person ({q.drawn:,}) was drawn before the release as a DP "
                f"{q.level:g}-quantile of rows per person over 1..{q.largest:,}, tilted "
                f"towards fewer rows (OpenDP, fresh entropy); {len(q.epsilons)} draw(s) were "
                "seen, and each is charged in this release"]

    def spark_reason(self, spec):
        return ""


KIND = MaxRowsKind()
