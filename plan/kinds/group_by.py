"""The group-by: a count, sum or mean of a column per value of a key. The groups are declared
keys (public; every key released, zeros kept), or found privately by partition selection
(a key is released only if its noisy count clears a threshold set by the budget and δ)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dpcore.contributions import count_sensitivity, mean_sensitivities, sum_sensitivity
from dpcore.intervals import mean_interval
from engine.queries import CategoryCounts, DistinctValues, GroupedSum
from plan.fields import (
    GROUP_STATISTICS,
    Bounds,
    Categories,
    PlanError,
    PrivacyUnit,
    _choice,
    _column,
    _declared,
    _drop_none,
    _f,
    _Fields,
    _number,
    _probability,
)
from plan.kinds.base import (
    QueryKind,
    additive_intervals,
    as_input,
    declared_rule,
    draw_threshold,
    drawn_mechanism,
    mean_of,
    number,
    threshold_intervals,
)
from plan.kinds.bounded import clamping_rule
from plan.kinds.mean import MEAN_RULE
from plan.parts import (
    Built,
    Part,
    additive,
    contribution,
    contribution_bounds,
    split_parts,
    threshold,
    whole_sum,
)
from plan.parts import field as at

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["GroupBy", "KIND"]


@dataclass(frozen=True)
class GroupBy:
    """A count, sum or mean of ``column`` per value of ``key``.

    The groups are declared ``keys`` (public), or found privately by partition selection
    (``keys`` None, then the query's ``threshold`` says how): only groups whose noisy count
    clears the threshold are released.
    """

    key: str
    statistic: str = "count"
    column: str | None = None
    bounds: Bounds | None = None
    keys: Categories | None = None
    sum_share: float = 0.5
    kind: Literal["group_by"] = field(default="group_by", init=False)

    def check(self, path: str) -> None:
        _column(self.key, f"{path}.key")
        _choice(self.statistic, GROUP_STATISTICS, f"{path}.statistic")
        if self.statistic == "count":
            if self.column is not None or self.bounds is not None:
                raise PlanError(f"{path}.column", "a count by group takes no column or bounds")
        else:
            if self.column is None:
                raise PlanError(f"{path}.column", f"a {self.statistic} by group needs a column")
            _column(self.column, f"{path}.column")
            if self.bounds is None:
                raise PlanError(f"{path}.bounds", f"a {self.statistic} by group needs bounds")
            self.bounds.check(f"{path}.bounds")
        if self.keys is not None:
            self.keys.check(f"{path}.keys")
        _number(self.sum_share, f"{path}.sum_share")
        _probability(self.sum_share, f"{path}.sum_share")

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({
            "kind": self.kind, "key": self.key, "statistic": self.statistic,
            "column": self.column,
            "bounds": None if self.bounds is None else self.bounds.to_dict(),
            "keys": None if self.keys is None else self.keys.to_dict(),
            "sum_share": _f(self.sum_share) if self.statistic == "mean" else None})

    @staticmethod
    def from_fields(f: _Fields) -> GroupBy:
        share = f.number("sum_share", required=False)
        return GroupBy(f.text("key"), f.choice("statistic", GROUP_STATISTICS),
                       f.raw("column", required=False),
                       _declared(f, "bounds", Bounds, required=False),
                       _declared(f, "keys", Categories, required=False),
                       0.5 if share is None else share)


class GroupByKind(QueryKind):
    name = "group_by"
    spec = GroupBy

    def statistic_of(self, spec):
        return f"{spec.statistic} by {spec.key}"

    def splits_by_share(self, spec):
        return spec.statistic == "mean"

    def declarations(self, spec):
        out = []
        if spec.bounds is not None:
            out.append((f"bounds of {spec.column!r}", spec.bounds))
        if spec.keys is not None:
            out.append((f"group keys of {spec.key!r}", spec.keys))
        return out

    def finds_groups(self, spec):
        return spec.keys is None

    def needs_mechanism(self, spec):
        # a count by group found privately releases the threshold's noisy counts
        return not (spec.keys is None and spec.statistic == "count")

    def check_query(self, query, path):
        if self.finds_groups(query.query):
            if query.threshold is None:
                raise PlanError(f"{path}.threshold", "a group-by without declared keys finds "
                                "its groups by partition selection: give the threshold's "
                                "noise, budget and delta (or declare the keys)")
            query.threshold.check(f"{path}.threshold")
        elif query.threshold is not None:
            raise PlanError(f"{path}.threshold", "applies only to a group-by without declared "
                            "keys")
        if not self.needs_mechanism(query.query) and query.mechanism is not None:
            raise PlanError(f"{path}.mechanism", "a count by group with partition selection "
                            "releases the threshold's noisy counts: no other mechanism")
        self._check_mechanism(query, path)

    def check_unit(self, query, unit, path):
        super().check_unit(query, unit, path)
        if (unit.person_column is not None and self.finds_groups(query.query)
                and unit.max_groups is None):
            raise PlanError("privacy_unit.max_groups", f"query {query.id!r} selects its "
                            "groups by partition selection: with a person column, declare "
                            "how many groups one person may keep rows in")

    def _value_parts(self, query: PlanQuery, unit: PrivacyUnit, path: str, size: int
                     ) -> tuple[list[Part], Any]:
        q = query.query
        grouped = contribution_bounds(unit, grouped=True)
        mp = f"{path}.mechanism"
        if q.statistic == "count":
            sens = count_sensitivity(grouped)
            if q.keys is None:   # the threshold's noisy counts are released
                return [], sens
            return [additive(query.mechanism, sens, mp, size=size, integer=True)], sens
        whole = whole_sum(query.mechanism, q.bounds)
        if q.statistic == "sum":
            with at(f"{path}.query.bounds"):
                sens = sum_sensitivity(grouped, lower=q.bounds.lower, upper=q.bounds.upper)
            return [additive(query.mechanism, sens, mp, name="sum", size=size,
                             integer=whole)], sens
        with at(f"{path}.query.bounds"):
            both = mean_sensitivities(grouped, lower=q.bounds.lower, upper=q.bounds.upper)
        return list(split_parts(query.mechanism, q.sum_share, both, mp, f"{path}.query",
                                size=size, whole=whole)), both[0]

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        q = query.query
        bounded = contribution(unit, grouped=True)
        parts: list[Part] = []
        if q.keys is None:
            parts.append(threshold(query.threshold, unit, f"{path}.threshold"))
            # Every key the data holds: how many there are is not public, so no cap can
            # refuse (a refusal would disclose it) or cut the list (one person's key would
            # push out another's). The threshold is drawn over chunks of keys.
            engine: tuple[Any, ...] = (DistinctValues(q.key, limit=None),)
            size = -1
        else:
            size = len(q.keys.values)
            engine = (self._queries(query, q.keys.values, bounded)[-1],)
        values, sens = self._value_parts(query, unit, path, size)
        return Built(query, unit, engine, (*parts, *values), sens, kind=self)

    def _queries(self, query: PlanQuery, keys: tuple, bounded: Any) -> tuple[Any, ...]:
        q = query.query
        counts = CategoryCounts(q.key, keys, bounded)
        if q.statistic == "count":
            return (counts,)
        return (counts, GroupedSum(q.key, keys, q.column, q.bounds.lower, q.bounds.upper,
                                   bounded, whole=whole_sum(query.mechanism, q.bounds)))

    def keyed_queries(self, built, keys):
        return self._queries(built.query, keys, contribution(built.unit, grouped=True))

    def draw(self, built, certified, aggs, keys):
        return self._drawn(built, certified, aggs, keys)[:2]

    def release(self, built, certified, aggs, keys, alpha):
        statistic, rows, noisy = self._drawn(built, certified, aggs, keys)
        q = built.query.query
        values = [v for _, v in rows]
        if q.keys is None and q.statistic == "count":   # the threshold's own noisy counts
            return statistic, rows, threshold_intervals(certified[0], values, alpha)
        parts = certified if q.keys is not None else certified[1:]
        if q.statistic != "mean":
            return statistic, rows, additive_intervals(parts[0], values, alpha)
        if not rows:
            return statistic, rows, ()
        low, high = mean_interval(drawn_mechanism(parts[0]), np.asarray(noisy[0], dtype=float),
                                  drawn_mechanism(parts[1]), np.asarray(noisy[1], dtype=float),
                                  lower=q.bounds.lower, upper=q.bounds.upper, alpha=alpha)
        return statistic, rows, tuple(zip(low.tolist(), high.tolist(), strict=True))

    def interval_method(self, spec):
        method = "mean" if spec.statistic == "mean" else "per cell"
        if spec.keys is not None:
            return method
        # a found group's count is the selection's own noisy count; a sum or a mean has
        # noise of its own, drawn apart from the selection's
        return f"{method}, conditional" if spec.statistic == "count" else f"{method}, kept"

    def _drawn(self, built, certified, aggs, keys):
        """(statistic, rows, the noisy sums and counts of a mean's groups or None)."""
        q = built.query.query
        statistic = self.statistic_of(q)
        if q.keys is not None:
            names = [str(k) for k in q.keys.values]
            chosen = list(range(len(names)))
            parts = list(certified)
        else:
            names = [str(k) for k in keys]
            if not keys:
                return statistic, (), None
            # Keys whose rows the contribution bounds all dropped are not in the bounded data.
            present = {n: int(c) for n, c in zip(names, aggs[0].counts, strict=True) if c > 0}
            gate = certified[0]
            kept = draw_threshold(gate, {n: as_input(gate, c) for n, c in present.items()})
            chosen = [i for i, n in enumerate(names) if n in kept]
            parts = list(certified[1:])
            if q.statistic == "count":
                return statistic, tuple(((names[i],), number(kept[names[i]]))
                                        for i in chosen), None
            aggs = aggs[1:]
        agg = aggs[0]
        if q.statistic == "count":
            noisy = parts[0].draw(as_input(parts[0], [int(agg.counts[i]) for i in chosen]))
            return statistic, tuple(((names[i],), number(v))
                                    for i, v in zip(chosen, noisy, strict=True)), None
        if not chosen:
            return statistic, (), None
        sums = parts[0].draw(as_input(parts[0], [float(agg.totals[i]) for i in chosen]))
        if q.statistic == "sum":
            return statistic, tuple(((names[i],), number(v))
                                    for i, v in zip(chosen, sums, strict=True)), None
        counts = parts[1].draw(as_input(parts[1], [int(agg.rows[i]) for i in chosen]))
        return statistic, tuple(((names[i],), mean_of(s, c, q.bounds.lower, q.bounds.upper))
                                for i, s, c in zip(chosen, sums, counts, strict=True)), (
            sums, counts)

    def rules(self, query):
        q = query.query
        rules = []
        if q.statistic != "count":
            rules.append(clamping_rule(query, q.column, q.bounds))
        if q.statistic == "mean":
            rules.append(MEAN_RULE)
        if q.keys is not None:
            rules.append(declared_rule(q.key, "the declared keys"))
        else:
            rules.append(f"the groups of {q.key!r} are found by partition selection: a group "
                         "is released only if its noisy count clears the threshold; rows "
                         "whose key is missing are not counted")
        return rules

    def program_record(self, spec):
        out = {"key": spec.key, "statistic": spec.statistic,
               "keys": None if spec.keys is None else list(spec.keys.values),
               "column": spec.column}
        if spec.bounds is not None:
            out |= {"lower": spec.bounds.lower, "upper": spec.bounds.upper}
        return out

    def spark_reason(self, spec):
        return "" if spec.keys is not None else (
            "the Spark program does not yet export a group-by whose groups are found by "
            "partition selection; declare the keys (public groups) or release this plan from "
            "the app or the command line")


KIND = GroupByKind()
