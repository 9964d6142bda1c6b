"""The query kinds a plan can hold, each in one file, looked up by name.

A kind's file holds its plan dataclass and JSON, the engine queries it needs, its
sensitivity under the privacy unit and the parts it builds (``plan.parts``), how a release
draws it from those parts, how the card words the way it reads the data, and what the
programs read. Everything else looks a kind up here: a new kind is one file and one line
below (and its tests).
"""

from __future__ import annotations

from typing import Any

from plan.kinds import (
    count,
    crosstab,
    group_by,
    histogram,
    max_rows,
    mean,
    quantiles,
    selection,
    sum,
    synthetic,
    variance,
)
from plan.kinds.base import QueryKind

__all__ = ["KINDS", "QueryKind", "kind_of", "SPECS"]

#: Every kind by its name in the plan's JSON.
KINDS: dict[str, QueryKind] = {k.name: k for k in (
    count.KIND, sum.KIND, mean.KIND, histogram.KIND, crosstab.KIND, group_by.KIND,
    quantiles.KIND, selection.KIND, max_rows.KIND, variance.KIND, synthetic.KIND,
)}
#: The plan dataclass of every kind, by name (what ``plan.model`` re-exports).
SPECS: dict[str, type] = {k.spec.__name__: k.spec for k in KINDS.values()}


def kind_of(spec: Any) -> QueryKind:
    """The kind of a plan query's spec; TypeError for anything that is not one."""
    kind = KINDS.get(getattr(spec, "kind", None))
    if kind is None or not isinstance(spec, kind.spec):
        raise TypeError(f"not a query of the plan: {type(spec).__name__}")
    return kind
