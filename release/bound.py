"""A plan bound to the declarations it was built on: is it stale, and what changed since?

A plan records the versions of its dataset's declared schema and privacy unit it was built on
(``plan.model.BuiltOn``; the numbered events of ``release.declarations``). When the store
holds a later version of either, the plan is stale: it is not released until it is rebuilt
under the current declarations or a steward confirms it as built (which binds it to the
current versions and records that it was confirmed). A plan that records no versions (written
before plans kept them) is not stale: nothing is known to compare. Everything here reads
declarations only (public or typed facts, and the steward's choices), never the data.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

from plan.model import BuiltOn, Plan, PrivacyUnit
from release.declarations import SCHEMA, UNIT, DeclarationEvent, Declarations, DeclarationStore

__all__ = ["is_stale", "changes", "stale_reason", "confirmed", "checked_plan"]

#: The parts of a column's declaration whose change makes a plan stale, in words.
_ASPECTS = (("role", ("role",)), ("bounds", ("lower", "upper", "integer")),
            ("categories", ("categories",)), ("bins", ("bins",)))
_SHOWN = 5   # columns named per aspect before "and N more"


def is_stale(recorded: BuiltOn | None, now: Declarations | None, *,
             store: DeclarationStore | None = None, dataset: str = "",
             plan_unit: PrivacyUnit | None = None) -> bool:
    """Whether the store holds a later schema or unit than the plan was built on (a plan
    that records nothing is not stale). Given the ``store`` and ``dataset``, a later version
    that declares what the plan was built on again is no change: a schema whose columns'
    declarations are the same, a unit equal to the one it was built on or to the plan's own
    ``plan_unit`` (a unit the plan page itself gave the dataset, e.g. max rows drawn for the
    plan, is the plan's already)."""
    if recorded is None:
        return False
    current = {SCHEMA: 0, UNIT: 0} if now is None else now.versions
    newer = [what for what in (SCHEMA, UNIT) if current[what] > getattr(recorded, what)]
    if store is None or not newer:
        return bool(newer)
    return any(not _same(store, dataset, what, getattr(recorded, what),
                         now.schema if what == SCHEMA else now.unit, plan_unit)
               for what in newer)


def _same(store: DeclarationStore, dataset: str, what: str, since: int,
          event: DeclarationEvent, plan_unit: PrivacyUnit | None) -> bool:
    """Whether ``event`` declares what version ``since`` declared (0: nothing declared)."""
    before = store.event(dataset, what, since) if since else None
    if what == UNIT:
        current = event.unit() or PrivacyUnit()
        return current in {(before.unit() if before else None) or PrivacyUnit(), plan_unit}
    return _columns(before) == _columns(event)


def confirmed(recorded: BuiltOn, now: Declarations | None) -> BuiltOn:
    """What a plan confirmed as built on ``recorded`` is bound to: the current versions, with
    the ones it was built on kept as a record of the confirmation."""
    current = {SCHEMA: 0, UNIT: 0} if now is None else now.versions
    return BuiltOn(current[SCHEMA], current[UNIT], (recorded.schema, recorded.unit))


def _unit_words(event: DeclarationEvent | None) -> str:
    unit = None if event is None else event.unit()
    return (unit or PrivacyUnit()).describe().replace("; ", ", ")   # one clause in a sentence


def _columns(event: DeclarationEvent | None) -> dict:
    if event is None or event.text is None:
        return {}
    columns = json.loads(event.text).get("columns", {})
    return columns if isinstance(columns, dict) else {}


def _names(columns: list[str]) -> str:
    shown = ", ".join(columns[:_SHOWN])
    return shown + (f" and {len(columns) - _SHOWN} more" if len(columns) > _SHOWN else "")


def _schema_words(before: DeclarationEvent | None, after: DeclarationEvent | None) -> str:
    old, new = _columns(before), _columns(after)
    said = []
    added = sorted(c for c in new.keys() - old.keys() if new[c].get("role") != "ignore")
    removed = sorted(old.keys() - new.keys())
    if added:
        said.append(f"{_names(added)} {'was' if len(added) == 1 else 'were'} declared")
    if removed:
        said.append(f"{_names(removed)} {'is' if len(removed) == 1 else 'are'} no longer "
                    "declared")
    for aspect, keys in _ASPECTS:
        changed = sorted(c for c in old.keys() & new.keys()
                         if any(old[c].get(k) != new[c].get(k) for k in keys)
                         and (aspect == "role" or old[c].get("role") == new[c].get("role")))
        if changed:
            said.append(f"the {aspect} of {_names(changed)} changed")
    if not said:
        return "the schema was declared again (no role, bounds, categories or bins changed)"
    return "; ".join(said)


def changes(store: DeclarationStore, dataset: str, recorded: BuiltOn,
            now: Declarations | None) -> str:
    """One sentence of what changed between the declarations the plan was built on and the
    current ones: "The privacy unit changed on 2026-11-28 from one row = one person to …;
    the bounds of wage changed." (column names and declared facts only)."""
    parts = []
    unit_now = None if now is None else now.unit
    if unit_now is not None and unit_now.version > recorded.unit:
        before = (store.event(dataset, UNIT, recorded.unit) if recorded.unit else None)
        was, becomes = _unit_words(before), _unit_words(unit_now)
        parts.append(f"the privacy unit changed on {unit_now.date} from {was} to {becomes}"
                     if was != becomes else
                     f"the privacy unit was declared again on {unit_now.date} (as it was)")
    schema_now = None if now is None else now.schema
    if schema_now is not None and schema_now.version > recorded.schema:
        before = (store.event(dataset, SCHEMA, recorded.schema) if recorded.schema else None)
        words = _schema_words(before, schema_now)
        parts.append(f"the schema changed on {schema_now.date}: {words}")
    if not parts:
        return ""
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def stale_reason(store: DeclarationStore, dataset: str, recorded: BuiltOn | None,
                 plan_unit: PrivacyUnit | None = None) -> str:
    """Why a plan built on ``recorded`` (released under ``plan_unit``) must not be released
    on ``dataset`` as it is ("" if it may): the dataset's declarations changed since
    (:func:`is_stale`). ``StoreError`` if the store cannot be read."""
    if recorded is None:
        return ""
    now = store.latest(dataset)
    if not is_stale(recorded, now, store=store, dataset=dataset, plan_unit=plan_unit):
        return ""
    return (f"the plan was built on schema v{recorded.schema} and unit v{recorded.unit} of "
            "this dataset's declarations, which changed since. "
            f"{changes(store, dataset, recorded, now)} Rebuild the plan under the current "
            "declarations, or confirm it as built")


def checked_plan(plan: Plan, dataset: str, path: str | os.PathLike | None, *,
                 confirm: bool = False) -> tuple[Plan, str]:
    """The command line's check of a plan file on data of content identity ``dataset``
    against the declarations file at ``path`` (None: its default): ``(plan, "")`` when it is
    not stale (or records nothing, or the file does not exist: nothing was declared);
    ``(plan, why)`` when it is; with ``confirm``, the plan confirmed as built (bound to the
    current versions, the confirmation recorded in it) and "". ``StoreError`` if the file
    cannot be read."""
    recorded = plan.dataset.declarations
    if recorded is None:
        return plan, ""
    store = DeclarationStore(path)
    if not store.path.exists():   # never created: nothing was ever declared there
        return plan, ""
    why = stale_reason(store, dataset, recorded, plan.privacy_unit)
    if not why or not confirm:
        return plan, why
    bound = confirmed(recorded, store.latest(dataset))
    return replace(plan, dataset=replace(plan.dataset, declarations=bound)), ""
