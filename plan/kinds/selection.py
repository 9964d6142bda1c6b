"""Selection: the k most frequent of the declared candidates of a column, by report noisy max
(or top-k) over the counts, which are monotonic scores."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dpcore.contributions import count_sensitivity
from dpcore.rank_intervals import top_k_shortfalls
from engine.queries import CategoryCounts
from plan.fields import Categories, PlanError, PrivacyUnit, _column, _declared, _Fields
from plan.kinds.base import QueryKind, declared_rule
from plan.parts import Built, Loss, Part, contribution, contribution_bounds, noisy_max

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Selection", "KIND"]


@dataclass(frozen=True)
class Selection:
    """The ``k`` most frequent of the declared ``candidates`` of ``column`` (scores: how many
    rows hold each candidate, at most ``max_rows`` per person in each)."""

    column: str
    candidates: Categories
    k: int = 1
    kind: Literal["selection"] = field(default="selection", init=False)

    def check(self, path: str) -> None:
        _column(self.column, f"{path}.column")
        self.candidates.check(f"{path}.candidates")
        if isinstance(self.k, bool) or not isinstance(self.k, numbers.Integral) or not (
                1 <= self.k <= len(self.candidates.values)):
            raise PlanError(f"{path}.k", f"must be a whole number from 1 to the number of "
                            f"candidates ({len(self.candidates.values)}), got {self.k!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column,
                "candidates": self.candidates.to_dict(), "k": self.k}

    @staticmethod
    def from_fields(f: _Fields) -> Selection:
        k = f.integer("k", required=False)
        return Selection(f.text("column"), _declared(f, "candidates", Categories),
                         1 if k is None else k)


class SelectionKind(QueryKind):
    name = "selection"
    spec = Selection
    families = ("selection",)
    statistic = "selection"
    target = "selection"

    def declarations(self, spec):
        return [(f"candidates of {spec.column!r}", spec.candidates)]

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q, noise = query.query, query.mechanism
        sens = count_sensitivity(contribution_bounds(unit, grouped=True))
        mechanism = noisy_max(noise, sensitivity=sens.linf, monotonic=True, k=q.k,
                              negate=False, epsilon=noise.epsilon, rho=noise.rho,
                              path=f"{path}.mechanism")
        engine = CategoryCounts(q.column, q.candidates.values, contribution(unit, grouped=True))
        loss = Loss.of(mechanism.privacy, read_at=noise.delta)
        part = Part("choice", mechanism, sens.linf, loss, size=len(q.candidates.values),
                    integer=True)
        return Built(query, unit, (engine,), (part,), sens, kind=self)

    def draw(self, built, certified, aggs, keys):
        q = built.query.query
        chosen = certified[0].draw([int(c) for c in aggs[0].counts])
        chosen = chosen if isinstance(chosen, list) else [chosen]
        values = q.candidates.values
        return self.statistic, tuple(((f"rank {i + 1}",), values[int(c)])
                                     for i, c in enumerate(chosen))

    def intervals(self, built, certified, rows, alpha):
        """Each rank's shortfall from the top count among the candidates left, [0, E_r]:
        from the noise's law, the scale drawn with and the number of candidates (public)."""
        part = certified[0]
        shortfalls = top_k_shortfalls(part.part.mechanism.noise, part.opendp_scale,
                                      len(built.query.query.candidates.values), len(rows),
                                      alpha)
        return tuple((0.0, float(e)) for e in shortfalls)

    def interval_method(self, spec):
        return "shortfall"

    def rules(self, query):
        return [declared_rule(query.query.column, "the candidates")]

    def program_record(self, spec):
        return {"column": spec.column, "candidates": list(spec.candidates.values),
                "k": spec.k}


KIND = SelectionKind()
