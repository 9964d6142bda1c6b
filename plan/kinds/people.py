"""The number of people: how many distinct person ids the data holds under a person-id unit,
one additive mechanism at sensitivity 1 whatever the unit's max rows.

Its true answer is COUNT(DISTINCT person) over the rows that have a person id (the engine's
``RowsPerPerson``: the people it counts, each once). Before or after the unit's truncation it
is the same number: every person keeps at least one row (max rows ≥ 1), and a query of one
number takes no max-groups rule, so the truncation never removes a person. It depends on
each person's own rows only (whether they have one with an id), and adding or removing one
person, with all their rows, moves it by exactly 0 or 1: L1 = L2 = L∞ = 1. A row with no
person id is no one's and is not counted (as the unit's truncation leaves it out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dpcore.contributions import Sensitivity
from engine.queries import RowsPerPerson
from plan.fields import PlanError, PrivacyUnit, _Fields
from plan.kinds.base import QueryKind, additive_intervals, as_input, number
from plan.parts import Built, additive

if TYPE_CHECKING:
    from plan.model import PlanQuery

__all__ = ["People", "KIND"]

#: One person added or removed moves the number of people by at most 1, in every norm.
ONE_PERSON = Sensitivity(1.0, 1.0, 1.0)


@dataclass(frozen=True)
class People:
    """The number of distinct people (person ids) in the data."""

    kind: Literal["people"] = field(default="people", init=False)

    def check(self, path: str) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind}

    @staticmethod
    def from_fields(f: _Fields) -> People:
        return People()


class PeopleKind(QueryKind):
    name = "people"
    spec = People
    statistic = "people"
    counts_rows = True   # a whole number (of people): a page shows it whole

    def check_unit(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> None:
        if unit.person_column is None:
            raise PlanError(f"{path}.query.kind", "a number of people needs a person-id "
                            "column in the privacy unit (with one row per person, use a count "
                            "of rows)")

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        part = additive(query.mechanism, ONE_PERSON, f"{path}.mechanism", integer=True)
        return Built(query, unit, (RowsPerPerson(unit.person_column),), (part,), ONE_PERSON,
                     kind=self)

    def draw(self, built, certified, aggs, keys):
        part = certified[0]
        return self.statistic, (((), number(part.draw(as_input(part, aggs[0].total_people)))),)

    def intervals(self, built, certified, rows, alpha):
        return additive_intervals(certified[0], [v for _, v in rows], alpha)

    def interval_method(self, spec):
        return "exact"

    def rules(self, query):
        return ["each person id is counted once, whatever its number of rows (one person moves "
                "the answer by at most 1); a row without a person id is no one's and is not "
                "counted"]

    def spark_reason(self, spec):
        return ""


KIND = PeopleKind()
