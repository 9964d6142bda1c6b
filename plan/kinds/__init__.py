"""The query kinds a plan can hold, each in one file, looked up by name.

A kind's file holds its plan dataclass and JSON, the engine queries it needs, its
sensitivity under the privacy unit and the parts it builds (``plan.parts``), how a release
draws it from those parts, how the card words the way it reads the data, and what the
programs read. Everything else looks a kind up here: a new kind is one file (and its
tests), found by :func:`found_in` after the kinds listed below.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
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

__all__ = ["KINDS", "QueryKind", "kind_of", "SPECS", "found_in"]


def found_in(package: str, paths: Iterable[str], attribute: str, of_type: type,
             known: Iterable[object]) -> tuple[Any, ...]:
    """The ``attribute`` (an ``of_type``) of each module of ``package`` (at ``paths``) that
    holds one not in ``known``, by module name: a kind added as a file of its own, found
    without a line naming it anywhere else (the listed ones keep their order before it)."""
    known = tuple(known)
    found = []
    for info in sorted(pkgutil.iter_modules(list(paths)), key=lambda m: m.name):
        module = importlib.import_module(f"{package}.{info.name}")
        value = getattr(module, attribute, None)
        if isinstance(value, of_type) and not any(value is k for k in known):
            found.append(value)
    return tuple(found)


_LISTED = (count.KIND, sum.KIND, mean.KIND, histogram.KIND, crosstab.KIND, group_by.KIND,
           quantiles.KIND, selection.KIND, max_rows.KIND, variance.KIND, synthetic.KIND)
#: Every kind by its name in the plan's JSON.
KINDS: dict[str, QueryKind] = {k.name: k for k in (
    *_LISTED, *found_in(__name__, __path__, "KIND", QueryKind, _LISTED))}
#: The plan dataclass of every kind, by name (what ``plan.model`` re-exports).
SPECS: dict[str, type] = {k.spec.__name__: k.spec for k in KINDS.values()}


def kind_of(spec: Any) -> QueryKind:
    """The kind of a plan query's spec; TypeError for anything that is not one."""
    kind = KINDS.get(getattr(spec, "kind", None))
    if kind is None or not isinstance(spec, kind.spec):
        raise TypeError(f"not a query of the plan: {type(spec).__name__}")
    return kind
