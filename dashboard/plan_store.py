"""The session's release plan: the queries added from the pages, one plan per dataset.

Kept in the session (never in the URL: a plan holds categories and bounds, which for an upload
may be read off the data). Each query also keeps, in the session only, what the budget split
needs from the data to judge its target (a selection's true counts): the plan file never
holds it. A plan keeps the privacy unit it was built under (the session's unit when its first
query was added, an imported plan's own): the plan page shows and releases the plan under it,
never under whatever unit the session holds later, and the versions of the dataset's
declarations it was built on (``built_on``: the plan page marks it stale when they changed
since). Every edit is also saved server-side (``dashboard.plan_library``, without the context,
with the unit): a new session opens the dataset's most recently saved plan. A save from a
version another tab saved over since is refused: the session keeps its plan, unsaved, and
:func:`conflict` says so until the user reloads the saved plan (:func:`reload_saved`) or saves
this session's as a copy (:func:`save_as_copy`); nothing is written over another tab's plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import streamlit as st

from dashboard import plan_library
from plan import model
from release import access

__all__ = ["Entry", "entries", "add", "remove", "update", "replace_all", "clear", "count",
           "unit", "set_unit", "declared", "set_declared", "same_query", "replace_query",
           "PLAN_PAGE", "max_rows_query", "set_max_rows", "sync", "current", "saved_plans",
           "library_error", "submit", "submitted_plans", "open_plan", "new_plan",
           "duplicate_plan", "delete_plan", "rename",
           "revision", "set_identity", "shown_count", "built_on", "bind", "Conflict", "conflict",
           "reload_saved", "save_as_copy", "open_first"]

_KEY = "release_plan_by_dataset"
_UNITS = "release_plan_unit_by_dataset"   # data key -> the unit the plan was built under
_DECLARED = "release_plan_schema_by_dataset"   # data key -> the schema (JSON) it was built on
_BUILT = "release_plan_built_on_by_dataset"    # data key -> (identity, BuiltOn) it was built on
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
    _attach(data_key)
    return tuple(_plans().get(data_key, ()))


def _units() -> dict[str, model.PrivacyUnit | None]:
    return st.session_state.setdefault(_UNITS, {})


def unit(data_key: str) -> model.PrivacyUnit | None:
    """The privacy unit the dataset's plan was built under; None while the plan is empty, or
    for a plan saved before plans kept their unit (the page then asks which one)."""
    _attach(data_key)
    return _units().get(data_key)


def set_unit(data_key: str, new: model.PrivacyUnit | None, *,
             built_on: tuple[str, model.BuiltOn] | None = None,
             schema_json: str | None = None) -> None:
    """The plan is built under ``new`` from now on (saved with it): a user's choice on the
    plan page ("Rebuild the plan under this dataset's unit"); with ``built_on`` (and the
    declared ``schema_json``), rebuilt under the dataset's current declarations too."""
    _refresh(data_key)
    _units()[data_key] = new
    if built_on is not None:
        _built()[data_key] = built_on
        if schema_json is not None:
            _declared()[data_key] = schema_json
    _save(data_key)


def _built() -> dict[str, tuple[str, model.BuiltOn] | None]:
    return st.session_state.setdefault(_BUILT, {})


def built_on(data_key: str) -> tuple[str, model.BuiltOn] | None:
    """The dataset's content identity and the versions of its declarations the plan was
    built on; None while the plan is empty, or for a plan saved before plans kept them."""
    _attach(data_key)
    return _built().get(data_key)


def bind(data_key: str, new: tuple[str, model.BuiltOn]) -> None:
    """The plan is bound to ``new`` from now on, as built (a steward's confirmation that it
    may be released on declarations that changed since it was built; ``new`` records it)."""
    _refresh(data_key)
    _built()[data_key] = new
    _save(data_key)


def _declared() -> dict[str, str | None]:
    return st.session_state.setdefault(_DECLARED, {})


def declared(data_key: str) -> str | None:
    """The declared schema (JSON) the dataset's plan was built on; None while the plan is
    empty, for an imported plan, or a plan saved before plans kept it."""
    _attach(data_key)
    return _declared().get(data_key)


def set_declared(data_key: str, schema_json: str | None) -> None:
    """The plan is built on ``schema_json`` from now on (saved with it)."""
    _refresh(data_key)
    _declared()[data_key] = schema_json
    _save(data_key)


def _write(data_key: str, new: tuple[Entry, ...]) -> None:
    """The plan becomes ``new``, in the session and in the saved plan."""
    _attach(data_key)
    _plans()[data_key] = new
    _save(data_key)


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


def add(data_key: str, query: model.PlanQuery, context: Mapping[str, Any] | None = None, *,
        unit: model.PrivacyUnit | None = None, schema_json: str | None = None,
        built_on: tuple[str, model.BuiltOn] | None = None) -> model.PlanQuery:
    """Append ``query`` to the dataset's plan under a fresh id (from its label). ``unit``,
    ``schema_json`` and ``built_on``: the unit, the declared schema and the declarations'
    versions the page built it under; the first query of an empty plan sets the plan's, a
    later one joins the plan under the plan's own (never changes them)."""
    _refresh(data_key)
    current = entries(data_key)
    query = replace(query, id=_fresh_id(query.label, {e.query.id for e in current}))
    if not current:
        _units()[data_key] = unit
    if all(isinstance(e.query.query, model.MaxRows) for e in current):   # the first query
        _declared()[data_key] = schema_json
        _built()[data_key] = built_on
    _write(data_key, (*current, Entry(query, dict(context or {}))))
    return query


def same_query(data_key: str, query: model.PlanQuery) -> model.PlanQuery | None:
    """The plan's query that computes the same statistic as ``query`` (the same query with the
    same declarations, whatever its mechanism, budget, label or target), if there is one:
    adding ``query`` as well would publish that statistic twice, and spend its budget twice."""
    return next((e.query for e in entries(data_key) if e.query.query == query.query), None)


def replace_query(data_key: str, query_id: str, query: model.PlanQuery,
                  context: Mapping[str, Any] | None = None) -> model.PlanQuery | None:
    """The plan's query ``query_id`` becomes ``query`` (keeping its id and place); None when
    the plan no longer holds it (removed in another tab: nothing is changed)."""
    _refresh(data_key)
    current = entries(data_key)
    if not any(e.query.id == query_id for e in current):
        return None
    query = replace(query, id=query_id)
    _write(data_key, tuple(Entry(query, dict(context or {})) if e.query.id == query_id else e
                           for e in current))
    return query


def remove(data_key: str, query_id: str) -> None:
    _refresh(data_key)
    _write(data_key, tuple(e for e in entries(data_key) if e.query.id != query_id))


def update(data_key: str, queries: tuple[model.PlanQuery, ...]) -> None:
    """Replace the plan's queries by these (same ids), keeping each one's context."""
    contexts = {e.query.id: e.context for e in entries(data_key)}
    _write(data_key, tuple(Entry(q, contexts.get(q.id, {})) for q in queries))


def max_rows_query(data_key: str) -> model.PlanQuery | None:
    """The plan's max rows query (max rows drawn for real), if it has one."""
    return next((e.query for e in entries(data_key)
                 if isinstance(e.query.query, model.MaxRows)), None)


def set_max_rows(data_key: str, query: model.PlanQuery,
                 unit: model.PrivacyUnit | None = None) -> None:
    """The plan's max rows query becomes ``query`` (first in the plan; one at most), and the
    plan's unit ``unit`` (max rows drawn for the release), when given."""
    _refresh(data_key)
    rest = tuple(e for e in entries(data_key) if not isinstance(e.query.query, model.MaxRows))
    if unit is not None:
        _units()[data_key] = unit
    _write(data_key, (Entry(query), *rest))


def replace_all(data_key: str, queries: tuple[model.PlanQuery, ...],
                unit: model.PrivacyUnit | None = None,
                built_on: tuple[str, model.BuiltOn] | None = None) -> None:
    """The plan becomes these queries under ``unit`` (an imported plan: no context), built on
    ``built_on`` (the file's own versions, if it has them)."""
    _attach(data_key)
    _units()[data_key] = unit
    _declared()[data_key] = None   # a plan file holds no schema: its queries' declarations
    _built()[data_key] = built_on
    _write(data_key, tuple(Entry(q) for q in queries))


def clear(data_key: str) -> None:
    _attach(data_key)
    _units()[data_key] = _declared()[data_key] = _built()[data_key] = None
    _write(data_key, ())


# -- saved plans (dashboard.plan_library) ------------------------------------------------------

_SAVED = "release_plan_saved"        # data key -> the saved plan this session edits
_ATTACHED = "release_plan_attached"  # data keys whose saved plan was looked up
_IDENTITY = "release_plan_identity"  # data key -> the dataset key plans are saved under
_NOTICES = "release_plan_notices"    # data key -> what to tell on the next run
_ERROR = "release_plan_library_error"
_PATH = "release_plan_library_path"  # fixed for the session at its first use
_SHOWN = "release_plan_shown"        # how many times another saved version was shown
_CONFLICT = "release_plan_conflict"  # data key -> the saved plan another tab saved since
DEFAULT_NAME = "Untitled plan"


#: Between an upload's content identity and its uploader, in the stores' keys (sign-in on).
UPLOADER = "|uploader:"


def scoped(identity: str) -> str:
    """An upload's key in the plans and names stores: its content identity, followed while
    sign-in is on by the uploader's issuer and subject, so that another user who uploads the
    same content sees none of their plans or names (issue 33 item 6). A file kept on the
    server, and a built-in, are shared: their keys are not scoped."""
    if not access.sign_in_on():
        return identity
    person = access.current()
    if person is None or person.issuer in (access.LOCAL.issuer, access.OPERATOR.issuer):
        return identity
    return f"{identity}{UPLOADER}{person.issuer} {person.subject}"


def _library() -> plan_library.PlanLibrary:
    ss = st.session_state
    if _PATH not in ss:
        ss[_PATH] = str(plan_library.plans_path())
    return plan_library.PlanLibrary(ss[_PATH])


def _dataset(data_key: str) -> str:
    return st.session_state.get(_IDENTITY, {}).get(data_key, data_key)


def set_identity(data_key: str, dataset: str) -> None:
    """Plans of ``data_key`` are saved under ``dataset`` (an upload: its content)."""
    st.session_state.setdefault(_IDENTITY, {})[data_key] = dataset


def _failed(exc: plan_library.PlanLibraryError) -> None:
    st.session_state[_ERROR] = str(exc)


def library_error() -> str | None:
    """Why plans are not being saved (None: they are)."""
    return st.session_state.get(_ERROR)


def _remember(data_key: str, saved: plan_library.SavedPlan) -> None:
    st.session_state.setdefault(_SAVED, {})[data_key] = saved
    st.session_state.setdefault(_CONFLICT, {}).pop(data_key, None)
    st.session_state.pop(_ERROR, None)


def current(data_key: str) -> plan_library.SavedPlan | None:
    """The saved plan this session edits for ``data_key`` (None: not saved yet)."""
    _attach(data_key)
    return st.session_state.get(_SAVED, {}).get(data_key)


def shown_count() -> int:
    """Grows whenever the session shows a plan it did not edit itself (opened, duplicated,
    new, deleted, or changed in another tab): a page draws its editors afresh."""
    return st.session_state.get(_SHOWN, 0)


def _shown() -> None:
    st.session_state[_SHOWN] = shown_count() + 1


def revision(data_key: str) -> str:
    """Changes whenever the saved plan shown changes (for widget keys)."""
    saved = current(data_key)
    return "new" if saved is None else f"{saved.id}-{saved.version}"


def _show(data_key: str, saved: plan_library.SavedPlan) -> None:
    """The session shows ``saved``: its queries (each keeps its context if unchanged) under
    its own unit."""
    try:
        queries = saved.queries()
        built_under = saved.unit()
        declared_on = saved.declared()
        bound = saved.built_on()
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    contexts = {e.query.id: e for e in _plans().get(data_key, ())}
    _plans()[data_key] = tuple(
        Entry(q, contexts[q.id].context if q.id in contexts and contexts[q.id].query.query
              == q.query else {}) for q in queries)
    _units()[data_key] = built_under
    _declared()[data_key] = declared_on
    _built()[data_key] = bound
    _remember(data_key, saved)
    _shown()


def _attach(data_key: str) -> None:
    """On the session's first look at a dataset's plan: open its most recently saved one."""
    attached = st.session_state.setdefault(_ATTACHED, set())
    if data_key in attached:
        return
    attached.add(data_key)
    try:
        latest = _library().latest(_dataset(data_key))
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    if latest is not None and not _plans().get(data_key):
        _show(data_key, latest)


def _notify(data_key: str, text: str) -> None:
    st.session_state.setdefault(_NOTICES, {}).setdefault(data_key, []).append(text)


def _mine(data_key: str) -> tuple[tuple[model.PlanQuery, ...], dict]:
    """The session's plan: its queries, and what it is saved with."""
    return (tuple(e.query for e in _plans().get(data_key, ())),
            {"unit": _units().get(data_key), "declared": _declared().get(data_key),
             "built_on": _built().get(data_key)})


def _save(data_key: str) -> None:
    saved = st.session_state.get(_SAVED, {}).get(data_key)
    queries, kept_with = _mine(data_key)
    try:
        if saved is None:
            if not queries:
                return
            _remember(data_key, _library().create(_dataset(data_key), DEFAULT_NAME, queries,
                                                  **kept_with))
            return
        new = _library().save(saved.id, queries, dataset=saved.dataset, name=saved.name,
                              expected_version=saved.version, **kept_with)
    except plan_library.PlanConflict as exc:   # never written over: the user chooses
        st.session_state.setdefault(_CONFLICT, {})[data_key] = exc.stored
        return
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    _remember(data_key, new)


def _refresh(data_key: str) -> None:
    """If another tab saved this session's plan since, show that version (and say so)."""
    _attach(data_key)
    saved = st.session_state.get(_SAVED, {}).get(data_key)
    if saved is None:
        return
    try:
        stored = _library().get(saved.id)
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    if stored is None:
        st.session_state[_SAVED].pop(data_key)
        _notify(data_key, f"The plan '{saved.name}' was deleted in another tab or window; "
                          "this tab keeps it and saves it anew on your next change.")
    elif stored.version > saved.version:   # shown only if the user says so (conflict)
        st.session_state.setdefault(_CONFLICT, {})[data_key] = stored


def sync(data_key: str) -> list[str]:
    """At the start of a run: find whether another tab saved or deleted this plan since
    (:func:`conflict` then says so); return what the session is to be told (once)."""
    _refresh(data_key)
    return st.session_state.get(_NOTICES, {}).pop(data_key, [])


@dataclass(frozen=True)
class Conflict:
    """Another tab saved this session's plan since the version the session started from.

    ``stored``: the plan as saved there; ``theirs``: what that tab changed, in words ("added
    Count of rows; removed Mean of age", "" when only its name or settings changed);
    ``unsaved``: this session's plan differs from the version it started from (its change
    is not saved)."""

    stored: plan_library.SavedPlan
    theirs: str
    unsaved: bool


def conflict(data_key: str) -> Conflict | None:
    """The conflict of the session's plan with the saved one, if there is one."""
    stored = st.session_state.get(_CONFLICT, {}).get(data_key)
    saved = st.session_state.get(_SAVED, {}).get(data_key)
    if stored is None or saved is None:
        return None
    queries, kept_with = _mine(data_key)
    try:
        theirs = plan_library.what_changed(saved.queries(), stored.queries())
    except plan_library.PlanLibraryError:
        theirs = ""
    mine = plan_library.queries_json(queries, **kept_with)
    return Conflict(stored, theirs, mine != saved.plan_json)


def _set_queries(data_key: str, queries: tuple[model.PlanQuery, ...]) -> None:
    """The session's plan becomes ``queries``, each unchanged one keeping its context."""
    current = _plans().get(data_key, ())
    _plans()[data_key] = tuple(next((e for e in current if e.query == q), Entry(q))
                               for q in queries)


def reload_saved(data_key: str) -> None:
    """Show the saved plan, dropping this session's unsaved change; max rows drawn in this
    session stay in it, to be charged (``plan_library.keep_drawn``: saved at once)."""
    stored = st.session_state.get(_CONFLICT, {}).get(data_key)
    if stored is None:
        return
    mine, _ = _mine(data_key)
    try:
        stored = _library().get(stored.id) or stored
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    _plans()[data_key] = ()
    _show(data_key, stored)
    try:
        theirs = stored.queries()
    except plan_library.PlanLibraryError:
        return
    kept = plan_library.keep_drawn(theirs, mine)
    if kept != theirs:
        _set_queries(data_key, kept)
        _save(data_key)
        _notify(data_key, "The max rows drawn in this tab stay in the plan: every draw seen "
                          "is charged when the plan is released.")


def save_as_copy(data_key: str) -> None:
    """Save this session's plan as a new saved plan ("… (copy)") and edit that one; the one
    saved in the other tab stays as it is. Max rows drawn there stay in the copy too."""
    stored = st.session_state.get(_CONFLICT, {}).get(data_key)
    saved = st.session_state.get(_SAVED, {}).get(data_key)
    if stored is None or saved is None:
        return
    mine, kept_with = _mine(data_key)
    try:
        kept = plan_library.keep_drawn(mine, stored.queries())
        copy = _library().create(saved.dataset, f"{saved.name} (copy)", kept, **kept_with)
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    if kept != mine:
        _set_queries(data_key, kept)
        _notify(data_key, "The max rows drawn in the other tab stay in your copy: every "
                          "draw seen is charged when the plan is released.")
    _remember(data_key, copy)
    _shown()


def saved_plans(data_key: str) -> list[plan_library.SavedPlan]:
    """This dataset's saved plans, the most recently saved first ([] if unavailable)."""
    try:
        return _library().plans(_dataset(data_key))
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return []


def open_plan(data_key: str, plan_id: int) -> None:
    try:
        found = _library().get(plan_id)
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    if found is not None:
        _plans()[data_key] = ()
        _show(data_key, found)


def new_plan(data_key: str, name: str = "New plan") -> None:
    """An empty plan, saved, becomes the session's."""
    try:
        created = _library().create(_dataset(data_key), name, ())
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    _plans()[data_key] = ()
    _units()[data_key] = _declared()[data_key] = _built()[data_key] = None
    _remember(data_key, created)
    _shown()


def duplicate_plan(data_key: str, plan_id: int) -> None:
    """A copy of the plan, saved, becomes the session's."""
    try:
        copy = _library().duplicate(plan_id)
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    if copy is not None:
        _show(data_key, copy)


def delete_plan(data_key: str, plan_id: int) -> None:
    """Delete a saved plan; deleting the session's own leaves an empty, unsaved plan."""
    try:
        _library().delete(plan_id)
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    saved = st.session_state.get(_SAVED, {}).get(data_key)
    if saved is not None and saved.id == plan_id:
        st.session_state[_SAVED].pop(data_key)
        st.session_state.setdefault(_CONFLICT, {}).pop(data_key, None)
        _plans()[data_key] = ()
        _units()[data_key] = _declared()[data_key] = _built()[data_key] = None
        _shown()


def rename(data_key: str, name: str) -> None:
    """Rename the session's plan (saving it first if it was not yet saved)."""
    name = " ".join(str(name).split())[:120] or DEFAULT_NAME
    saved = current(data_key)
    try:
        if saved is None:
            queries, kept_with = _mine(data_key)
            _remember(data_key, _library().create(_dataset(data_key), name, queries,
                                                  **kept_with))
            return
        renamed = _library().rename(saved.id, name)
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    if renamed is None:
        return
    if renamed.version == saved.version + 1 and data_key not in st.session_state.get(
            _CONFLICT, {}):   # renamed from the version this session holds
        _remember(data_key, renamed)
    else:   # another tab saved it meanwhile: its version, renamed, stands
        st.session_state.setdefault(_CONFLICT, {})[data_key] = renamed


def submit(data_key: str) -> None:
    """Submit the session's plan, as saved, for a steward to release (saved first if it is
    not yet)."""
    if current(data_key) is None:
        _save(data_key)
    saved = current(data_key)
    if saved is None:
        return
    try:
        done = _library().submit(saved.id)
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return
    if done is not None and done.version == saved.version:
        _remember(data_key, done)


def submitted_plans(data_key: str) -> list[plan_library.SavedPlan]:
    """This dataset's plans submitted for a steward to release ([] if unavailable)."""
    try:
        return _library().submitted(_dataset(data_key))
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return []


def open_first(data_key: str, plan_id: int) -> bool:
    """On the session's first look at the dataset's plan, open the saved plan ``plan_id``
    (the one the URL of a reloaded page names, ``dashboard.workspace``) rather than the most
    recently saved one, if it is this dataset's; whether it did."""
    attached = st.session_state.setdefault(_ATTACHED, set())
    if data_key in attached:
        return False
    try:
        found = _library().get(int(plan_id))
    except plan_library.PlanLibraryError as exc:
        _failed(exc)
        return False
    if found is None or found.dataset != _dataset(data_key):
        return False
    attached.add(data_key)
    _plans()[data_key] = ()
    _show(data_key, found)
    return True
