"""The histogram: counts of a column over declared categories, or over bins between declared
edges (values outside counted apart or clamped into the end bins); one additive mechanism
over the cells."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dpcore.contributions import count_sensitivity
from dpcore.quantiles import bin_labels
from engine.queries import Binned, CategoryCounts
from plan.fields import (
    OUTSIDE,
    Categories,
    Grid,
    PrivacyUnit,
    _check_cells,
    _choice,
    _column,
    _declared,
    _Fields,
)
from plan.kinds.base import QueryKind, additive_intervals, as_input, declared_rule, number
from plan.parts import Built, additive, contribution, contribution_bounds

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Histogram", "KIND", "counts_draw"]


@dataclass(frozen=True)
class Histogram:
    """Counts of ``column`` over declared ``categories``, or over bins between ``edges``
    (values outside the edges counted apart, or clamped into the end bins)."""

    column: str
    categories: Categories | None = None
    edges: Grid | None = None
    outside: str = "separate"
    kind: Literal["histogram"] = field(default="histogram", init=False)

    def check(self, path: str) -> None:
        _column(self.column, f"{path}.column")
        _check_cells(self.categories, self.edges, path)
        if self.edges is not None:
            _choice(self.outside, OUTSIDE, f"{path}.outside")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "column": self.column}
        if self.categories is not None:
            out["categories"] = self.categories.to_dict()
        else:
            out["edges"] = self.edges.to_dict()
            out["outside"] = self.outside
        return out

    @staticmethod
    def from_fields(f: _Fields) -> Histogram:
        return Histogram(f.text("column"),
                         _declared(f, "categories", Categories, required=False),
                         _declared(f, "edges", Grid, required=False),
                         f.choice("outside", OUTSIDE, required=False, default="separate"))


def cell_labels(spec: Histogram) -> list[tuple[str, ...]]:
    if spec.categories is not None:
        return [(str(c),) for c in spec.categories.values]
    return [(label,) for label in bin_labels(list(spec.edges.values), outside=spec.outside)]


def counts_draw(part: Any, counts: Any, labels: list[tuple[str, ...]]) -> tuple:
    """Released rows of a vector of counts drawn by one part over public cells."""
    noisy = part.draw(as_input(part, [int(c) for c in counts]))
    return tuple((g, number(v)) for g, v in zip(labels, noisy, strict=True))


class HistogramKind(QueryKind):
    name = "histogram"
    spec = Histogram
    statistic = "histogram"
    per_cell = True
    counts_rows = True

    def declarations(self, spec):
        if spec.categories is not None:
            return [(f"categories of {spec.column!r}", spec.categories)]
        return [(f"bin edges of {spec.column!r}", spec.edges)]

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q = query.query
        sens = count_sensitivity(contribution_bounds(unit, grouped=True))
        bounded = contribution(unit, grouped=True)
        if q.categories is not None:
            engine: Any = CategoryCounts(q.column, q.categories.values, bounded)
        else:
            engine = Binned(q.column, q.edges.values, "bins", q.outside, bounded)
        size = len(cell_labels(q))
        part = additive(query.mechanism, sens, f"{path}.mechanism", size=size, integer=True)
        return Built(query, unit, (engine,), (part,), sens, kind=self)

    def draw(self, built, certified, aggs, keys):
        q = built.query.query
        return self.statistic, counts_draw(certified[0], aggs[0].counts, cell_labels(q))

    def intervals(self, built, certified, rows, alpha):
        return additive_intervals(certified[0], [v for _, v in rows], alpha)

    def interval_method(self, spec):
        return "per cell"

    def rules(self, query):
        q = query.query
        if q.categories is not None:
            return [declared_rule(q.column)]
        return [f"values of {q.column!r} outside the bin edges are "
                + ("counted in a cell below and a cell above" if q.outside == "separate"
                   else "counted in the first and last bins")
                + "; missing or non-numeric values are not counted"]

    def program_record(self, spec):
        out: dict[str, Any] = {"column": spec.column}
        if spec.categories is not None:
            out["categories"] = list(spec.categories.values)
        else:
            out |= {"edges": list(spec.edges.values), "outside": spec.outside}
        return out

    def spark_reason(self, spec):
        return ""


KIND = HistogramKind()
