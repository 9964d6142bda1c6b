"""The session's release plan: the queries added from the pages, one plan per dataset.

Kept in the session (never in the URL: a plan holds categories and bounds, which for an upload
may be read off the data). Each query also keeps, in the session only, what the budget split
needs from the data to judge its target (a selection's true counts): the plan file never
holds it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import streamlit as st

from plan import model

__all__ = ["Entry", "entries", "add", "remove", "update", "replace_all", "clear", "count",
           "PLAN_PAGE", "max_rows_query", "set_max_rows"]

_KEY = "release_plan_by_dataset"
#: The plan page (the "Add to plan" panels link to it).
PLAN_PAGE = "app_pages/plan.py"


@dataclass(frozen=True)
class Entry:
    """One query of the plan and what the split needs to judge its target (session only)."""

    query: model.PlanQuery
    context: Mapping[str, Any] = field(default_factory=dict)


def _plans() -> dict[str, tuple[Entry, ...]]:
    return st.session_state.setdefault(_KEY, {})


def entries(data_key: str) -> tuple[Entry, ...]:
    """The plan's queries for the dataset ``data_key``, in the order they were added."""
    return tuple(_plans().get(data_key, ()))


def count(data_key: str) -> int:
    return len(entries(data_key))


def _fresh_id(label: str, taken: set[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-").lower()[:40] or "query"
    if not stem[0].isalnum():
        stem = "q" + stem
    candidate, n = stem, 2
    while candidate in taken:
        candidate, n = f"{stem}-{n}", n + 1
    return candidate


def add(data_key: str, query: model.PlanQuery, context: Mapping[str, Any] | None = None
        ) -> model.PlanQuery:
    """Append ``query`` to the dataset's plan under a fresh id (from its label)."""
    current = entries(data_key)
    query = replace(query, id=_fresh_id(query.label, {e.query.id for e in current}))
    _plans()[data_key] = (*current, Entry(query, dict(context or {})))
    return query


def remove(data_key: str, query_id: str) -> None:
    _plans()[data_key] = tuple(e for e in entries(data_key) if e.query.id != query_id)


def update(data_key: str, queries: tuple[model.PlanQuery, ...]) -> None:
    """Replace the plan's queries by these (same ids), keeping each one's context."""
    contexts = {e.query.id: e.context for e in entries(data_key)}
    _plans()[data_key] = tuple(Entry(q, contexts.get(q.id, {})) for q in queries)


def max_rows_query(data_key: str) -> model.PlanQuery | None:
    """The plan's max rows query (max rows drawn for real), if it has one."""
    return next((e.query for e in entries(data_key)
                 if isinstance(e.query.query, model.MaxRows)), None)


def set_max_rows(data_key: str, query: model.PlanQuery) -> None:
    """The plan's max rows query becomes ``query`` (first in the plan; one at most)."""
    rest = tuple(e for e in entries(data_key) if not isinstance(e.query.query, model.MaxRows))
    _plans()[data_key] = (Entry(query), *rest)


def replace_all(data_key: str, queries: tuple[model.PlanQuery, ...]) -> None:
    """The plan becomes these queries (an imported plan: no context)."""
    _plans()[data_key] = tuple(Entry(q) for q in queries)


def clear(data_key: str) -> None:
    _plans().pop(data_key, None)
