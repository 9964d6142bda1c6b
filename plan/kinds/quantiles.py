"""Quantiles: each level's released value is a candidate of a declared grid, chosen by a
noisy arg-min of OpenDP's rank-error scores (report noisy max, negated); the budget split
equally between the levels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dpcore.contributions import Sensitivity
from dpcore.quantiles import (
    quantile_fraction,
    quantile_scores,
    quantile_sensitivity,
    split_quantile_budget,
)
from dpcore.rank_intervals import selection_shortfall
from engine.queries import Binned
from plan.fields import Grid, PlanError, PrivacyUnit, _column, _declared, _Fields, _number
from plan.kinds.base import QueryKind
from plan.parts import Built, Loss, Part, contribution, noisy_max, share_down
from plan.parts import field as at

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Quantiles", "KIND", "rank_counts"]


@dataclass(frozen=True)
class Quantiles:
    """The ``levels`` quantiles of ``column``, each a candidate of the declared grid chosen by
    a noisy arg-min of its rank error; the budget split equally between the levels."""

    column: str
    levels: tuple[float, ...]
    candidates: Grid
    kind: Literal["quantiles"] = field(default="quantiles", init=False)

    def check(self, path: str) -> None:
        _column(self.column, f"{path}.column")
        if not isinstance(self.levels, tuple) or not self.levels:
            raise PlanError(f"{path}.levels", "must hold at least one level (0.5: median)")
        if len(self.levels) > 1000:
            raise PlanError(f"{path}.levels", "must hold at most 1,000 levels")
        for i, q in enumerate(self.levels):
            _number(q, f"{path}.levels[{i}]")
            if not 0 <= q <= 1:
                raise PlanError(f"{path}.levels[{i}]", f"must lie in [0, 1], got {q}")
        self.candidates.check(f"{path}.candidates", minimum=2)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column,
                "levels": [float(q) for q in self.levels],
                "candidates": self.candidates.to_dict()}

    @staticmethod
    def from_fields(f: _Fields) -> Quantiles:
        levels = f.array("levels")
        return Quantiles(f.text("column"),
                         tuple(_number(q, f"{f.at('levels')}[{i}]")
                               for i, q in enumerate(levels or [])),
                         _declared(f, "candidates", Grid))


def rank_counts(counts: Any, candidates: int) -> tuple[list[int], list[int], int]:
    """(#{x < c}, #{x = c}, n) for each of the ``candidates`` from the engine's rank cells
    (``Binned(cells="ranks")``: the values below the first candidate, equal to it, between
    it and the next, …, above the last): what a release scores (and the page's law reads)."""
    cells = np.asarray(counts, dtype=np.int64)
    cumulative = np.cumsum(cells)
    below = cumulative[0::2][:candidates]
    return [int(v) for v in below], [int(v) for v in cells[1::2]], int(cumulative[-1])


class QuantilesKind(QueryKind):
    name = "quantiles"
    spec = Quantiles
    families = ("selection",)
    statistic = "quantiles"
    target = "rank"

    def declarations(self, spec):
        return [(f"candidates of {spec.column!r}", spec.candidates)]

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q, noise = query.query, query.mechanism
        mp = f"{path}.mechanism"
        m = len(q.levels)
        with at(mp):
            if noise.measure == "pure":
                each_eps, each_rho = split_quantile_budget(noise.epsilon, m), None
            else:
                each_eps, each_rho = None, share_down(noise.rho, m)
        read_at = None if noise.delta is None else share_down(noise.delta, m)
        parts = []
        for level in q.levels:
            with at(f"{path}.query.levels"):
                sens = quantile_sensitivity(level, max_rows=unit.max_rows)
            mechanism = noisy_max(noise, sensitivity=sens, monotonic=False, k=1, negate=True,
                                  epsilon=each_eps, rho=each_rho, path=mp)
            parts.append(Part(f"q={level:g}", mechanism, sens,
                              Loss.of(mechanism.privacy, read_at=read_at), integer=True,
                              quantile=level, score_rows=unit.max_rows))
        engine = Binned(q.column, q.candidates.values, "ranks", "separate",
                        contribution(unit, grouped=False))
        top = quantile_sensitivity(max(q.levels, key=lambda v: abs(v - 0.5)),
                                   max_rows=unit.max_rows)
        return Built(query, unit, (engine,), tuple(parts), Sensitivity(top, top, top), kind=self)

    def draw(self, built, certified, aggs, keys):
        q = built.query.query
        below, equal, total = rank_counts(aggs[0].counts, len(q.candidates.values))
        rows = []
        for level, part in zip(q.levels, certified, strict=True):
            scores = [int(s) for s in quantile_scores(below, equal, total, level)]
            rows.append(((f"q={level:g}",), q.candidates.values[int(part.draw(scores))]))
        return self.statistic, tuple(rows)

    def intervals(self, built, certified, rows, alpha):
        """Each level's excess rank error over the grid's best candidate, [0, E], in rows:
        from the noise's law, the scale drawn with (OpenDP's, in its scores' units: den
        times the rank error's) and the number of candidates (public)."""
        q = built.query.query
        m = len(q.candidates.values)
        return tuple(
            (0.0, selection_shortfall(part.part.mechanism.noise, part.opendp_scale, m, alpha)
             / quantile_fraction(level)[1])
            for level, part in zip(q.levels, certified, strict=True))

    def interval_method(self, spec):
        return "rank"

    def rules(self, query):
        return [f"values of {query.query.column!r} are ranked against the candidates (values "
                "outside the grid rank below or above them all); missing or non-numeric "
                "values are not counted"]

    def program_record(self, spec):
        return {"column": spec.column, "levels": list(spec.levels),
                "candidates": list(spec.candidates.values)}


KIND = QuantilesKind()
