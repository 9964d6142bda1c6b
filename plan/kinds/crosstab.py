"""The table: counts of one column by another over declared categories of both; one
additive mechanism over the cells."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dpcore.contributions import count_sensitivity
from engine.queries import CategoryTable
from plan.fields import Categories, PrivacyUnit, _column, _declared, _Fields
from plan.kinds.base import QueryKind, additive_intervals, declared_rule
from plan.kinds.histogram import counts_draw
from plan.parts import Built, additive, contribution, contribution_bounds

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Crosstab", "KIND"]


@dataclass(frozen=True)
class Crosstab:
    """A table of counts of ``row`` by ``column`` over declared categories."""

    row: str
    column: str
    row_categories: Categories
    column_categories: Categories
    kind: Literal["crosstab"] = field(default="crosstab", init=False)

    def check(self, path: str) -> None:
        _column(self.row, f"{path}.row")
        _column(self.column, f"{path}.column")
        self.row_categories.check(f"{path}.row_categories")
        self.column_categories.check(f"{path}.column_categories")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "row": self.row, "column": self.column,
                "row_categories": self.row_categories.to_dict(),
                "column_categories": self.column_categories.to_dict()}

    @staticmethod
    def from_fields(f: _Fields) -> Crosstab:
        return Crosstab(f.text("row"), f.text("column"),
                        _declared(f, "row_categories", Categories),
                        _declared(f, "column_categories", Categories))


def _labels(spec: Crosstab) -> list[tuple[str, ...]]:
    return [(str(r), str(c)) for r in spec.row_categories.values
            for c in spec.column_categories.values]


class CrosstabKind(QueryKind):
    name = "crosstab"
    spec = Crosstab
    statistic = "crosstab"
    per_cell = True
    counts_rows = True

    def declarations(self, spec):
        return [(f"row categories of {spec.row!r}", spec.row_categories),
                (f"column categories of {spec.column!r}", spec.column_categories)]

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q = query.query
        sens = count_sensitivity(contribution_bounds(unit, grouped=True))
        engine = CategoryTable(q.row, q.column, q.row_categories.values,
                               q.column_categories.values, contribution(unit, grouped=True))
        part = additive(query.mechanism, sens, f"{path}.mechanism", size=len(_labels(q)),
                        integer=True)
        return Built(query, unit, (engine,), (part,), sens, kind=self)

    def draw(self, built, certified, aggs, keys):
        counts = list(aggs[0].counts.reshape(-1))
        return self.statistic, counts_draw(certified[0], counts, _labels(built.query.query))

    def intervals(self, built, certified, rows, alpha):
        return additive_intervals(certified[0], [v for _, v in rows], alpha)

    def interval_method(self, spec):
        return "per cell"

    def rules(self, query):
        q = query.query
        return [declared_rule(q.row, "the declared row categories"),
                declared_rule(q.column, "the declared column categories")]

    def program_record(self, spec):
        return {"row": spec.row, "column": spec.column,
                "row_categories": list(spec.row_categories.values),
                "column_categories": list(spec.column_categories.values)}

    def spark_reason(self, spec):
        return ""


KIND = CrosstabKind()
