"""What the kinds over one column clamped to declared bounds share (sum, mean, variance): the
plan dataclass's column and bounds with their checks and JSON, the engine's clamped sum under
the privacy unit, the card's clamping rule and what the programs read.

Not a kind itself (it is in no registry): each of those kinds' files keeps only what is its
own — its further fields, its parts, how it combines them and how the card words it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from engine.queries import BoundedSum
from plan.fields import Bounds, PrivacyUnit, _column, _declared, _Fields
from plan.kinds.base import QueryKind
from plan.parts import contribution, contribution_bounds, whole_sum
from plan.parts import field as at

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["BoundedColumn", "BoundedColumnKind", "clamping_rule"]


@dataclass(frozen=True)
class BoundedColumn:
    """The fields every bounded-column query starts with: ``column`` clamped to ``bounds``.

    A subclass is a frozen dataclass that declares its own fields, then its ``kind`` (a
    field with ``init=False``: last among the fields, though the JSON writes it first)."""

    column: str
    bounds: Bounds

    def check(self, path: str) -> None:
        _column(self.column, f"{path}.column")
        self.bounds.check(f"{path}.bounds")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column,  # type: ignore[attr-defined]
                "bounds": self.bounds.to_dict()}

    @classmethod
    def from_fields(cls, f: _Fields) -> Self:
        return cls(f.text("column"), _declared(f, "bounds", Bounds))


def clamping_rule(query: PlanQuery, column: str, bounds: Bounds) -> str:
    """The card's rule for a clamped column (rounded when the noise is whole-number)."""
    rounded = (" and rounded to whole numbers (ties to even), as the whole-number noise "
               "needs") if whole_sum(query.mechanism, bounds) else ""
    return (f"values of {column!r} are clamped to [{bounds.lower:g}, {bounds.upper:g}]"
            f"{rounded}; missing or non-numeric values are not counted")


class BoundedColumnKind(QueryKind):
    """A kind over a :class:`BoundedColumn`: its bounds are its one declaration, the card
    states the clamping then the kind's own :attr:`release_rules`, the programs read the
    column and its bounds, and both programs release it."""

    #: how the statistic is released from its parts, after the clamping rule (the card)
    release_rules: ClassVar[tuple[str, ...]] = ()

    def declarations(self, spec):
        return [(f"bounds of {spec.column!r}", spec.bounds)]

    def clamped_sum(self, query: PlanQuery, unit: PrivacyUnit, **how: Any) -> BoundedSum:
        """The engine's sum of the clamped column, each person's rows truncated to the unit
        (``how``: ``whole``, ``centre``, ``squared`` of :class:`engine.queries.BoundedSum`)."""
        q = query.query
        return BoundedSum(q.column, q.bounds.lower, q.bounds.upper,
                          contribution(unit, grouped=False), **how)

    def clamped_sensitivity(self, of: Callable[..., Any], query: PlanQuery,
                            unit: PrivacyUnit, path: str) -> Any:
        """``of`` (a ``dpcore.contributions`` sensitivity over values in ``[lower, upper]``)
        for the query's bounds under the unit; a bound it refuses is named at the bounds."""
        bounds = query.query.bounds
        with at(f"{path}.query.bounds"):
            return of(contribution_bounds(unit, grouped=False), lower=bounds.lower,
                      upper=bounds.upper)

    def rules(self, query):
        q = query.query
        return [clamping_rule(query, q.column, q.bounds), *self.release_rules]

    def program_record(self, spec):
        return {"column": spec.column, "lower": spec.bounds.lower, "upper": spec.bounds.upper}

    def spark_reason(self, spec):
        return ""
