"""The session's declarations kept on the server: a dataset's schema and privacy unit, written
through to ``release.declarations`` whenever the session changes them, and restored when the
same data (by its content identity, under any name) is opened again.

Three hooks in app.py: :func:`opened` when the sidebar has the dataset (before its shipped unit
is applied), :func:`notices` under the dataset's caption (writes what a callback changed, says
what was restored) and :func:`finish` after the page (writes what the page changed). The session's
declarations are the truth for the session: a store that cannot be written or data that
cannot be identified never lose them; the page says they were not saved and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from dashboard import person, plan_store, state
from dashboard.data import schema as sc
from dashboard.data_source import identity_of
from dashboard.text import plain
from engine import EngineError
from release import declarations as kept
from release.access import AccessDenied

__all__ = ["opened", "notices", "finish", "restored_sentence", "Opening"]

_OPENED = "declared_opened"   # data key -> Opening (what opening it found, said once)
_SYNCED = "declared_synced"   # data key -> (schema JSON, unit) the store holds, as last seen
_PROBLEM = "declared_problem"  # data key -> why the last change was not saved
_PATH = "declared_store_path"  # fixed for the session at its first use, like saved plans


@dataclass
class Opening:
    """What opening a dataset found: its content identity (None: not computed yet, or
    ``problem`` says why it cannot be), and the sentences to show until the session changes
    the dataset's declarations."""

    identity: str | None = None
    problem: str = ""
    said: list[tuple[str, str]] = field(default_factory=list)   # (kind, sentence)


def _store() -> kept.DeclarationStore:
    ss = st.session_state
    if _PATH not in ss:
        ss[_PATH] = str(kept.declarations_path())
    return kept.DeclarationStore(ss[_PATH])


def _identity(loaded, data_key: str, opening: Opening) -> str | None:
    """The data's content identity, computed once per data version (``identity_of`` caches
    it by the data key); a failure is kept, so the scan is not tried again on every run."""
    if opening.identity is None and not opening.problem:
        try:
            opening.identity = identity_of(loaded, data_key).content_hash
        except Exception as exc:  # noqa: BLE001 — never block a page: say it, keep the session's
            opening.problem = (f"This data could not be identified by its content "
                               f"({type(exc).__name__}): its schema and unit are kept for this "
                               "session only.")
    return opening.identity


def _names(loaded, data_key: str) -> list[str]:
    """The names the data goes by: what the pages call it, its file's name, its data key (an
    upload's key names a session's file id, not the data: left out)."""
    names = [loaded.name]
    if loaded.file is not None:
        names.append(getattr(loaded.file.path, "name", str(loaded.file.path)))
    if not data_key.startswith("upload:"):
        names.append(data_key)
    return list(dict.fromkeys(n for n in names if n))


def _plans_word(n: int) -> str:
    return f"{n} saved plan" + ("" if n == 1 else "s")


def restored_sentence(events: list[kept.DeclarationEvent], saved_plans: int) -> str:
    """"Schema and unit restored from 2026-11-28 (3 saved plans)." (the later date)."""
    what = " and ".join(e.what for e in events)
    return (f"{what[0].upper()}{what[1:]} restored from {max(e.date for e in events)} "
            f"({_plans_word(saved_plans)}).")


def _refused(event: kept.DeclarationEvent, why: str) -> str:
    return (f"The {event.what} saved on {event.date} (version {event.version}) was not "
            f"restored: {why} The data's own {event.what} is used; declare it again on the "
            "Data page.")


def opened(loaded, data_key: str) -> None:
    """On the session's first look at ``data_key``: restore the latest stored schema and unit
    of the same data (unless the session declared its own), and record its new names."""
    ss = st.session_state
    openings = ss.setdefault(_OPENED, {})
    if data_key in openings:
        return
    opening = openings[data_key] = Opening()
    try:
        if not _store().path.exists():   # nothing kept yet: no scan, no file made
            return
        identity = _identity(loaded, data_key, opening)
        if identity is None:
            opening.said.append(("warning", opening.problem))
            return
        latest = _store().latest(identity)
        if latest is None or latest.empty:
            return
        _store().declare(identity, names=_names(loaded, data_key))
    except kept.DeclarationsError as exc:
        opening.said.append(("warning", f"The schema and unit kept on the server could not "
                                        f"be read: {exc}"))
        return
    try:
        columns = list(loaded.relation.columns)
    except EngineError:   # the caption below says why the data cannot be read
        return
    restored = []
    schema_event, unit_event = latest.schema, latest.unit
    if schema_event is not None and schema_event.text is not None \
            and state.declared_schema(data_key) is None:
        try:
            state.declare_schema(data_key, sc.from_json(schema_event.text, columns))
            restored.append(schema_event)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # SchemaError included
            opening.said.append(("warning", _refused(schema_event, str(exc) if isinstance(
                exc, sc.SchemaError) else "it could not be read as a schema.")))
    if unit_event is not None and unit_event.text is not None \
            and data_key not in ss.get(state.UNITS, {}):
        try:
            unit = unit_event.unit()
        except (ValueError, TypeError, KeyError, AttributeError):
            unit = None
        if unit is None:
            opening.said.append(("warning", _refused(unit_event, "it could not be read as a "
                                                                 "privacy unit.")))
        elif unit.person_column is not None and unit.person_column not in columns:
            opening.said.append(("warning", _refused(unit_event, (
                f"its person-id column {unit.person_column!r} is not in the data."))))
        else:
            person.set_unit(data_key, unit)
            restored.append(unit_event)
    if restored:
        if data_key.startswith("upload:"):   # its plans are saved under its content
            plan_store.set_identity(data_key, "content:" + plan_store.scoped(identity))
        opening.said.insert(0, ("info", restored_sentence(
            restored, len(plan_store.saved_plans(data_key)))))


def _now(data_key: str) -> tuple[str | None, person.PrivacyUnit | None]:
    declared = state.declared_schema(data_key)
    return (None if declared is None else sc.to_json(declared),
            st.session_state.get(state.UNITS, {}).get(data_key))


def _sync() -> None:
    """Write what the session changed since the store was last seen to hold (one event per
    changed part); on failure keep it in the session, say why, and try again next run."""
    ss = st.session_state
    data_key = state.dataset_key()
    now, synced = _now(data_key), ss.setdefault(_SYNCED, {})
    if data_key not in synced:   # what opening left (restored, or as shipped): the baseline
        synced[data_key] = now
        return
    if synced[data_key] == now:
        return
    loaded = ss[state.DATASET]
    opening = ss.setdefault(_OPENED, {}).setdefault(data_key, Opening())
    opening.said = []   # restored, refused: no longer what the session holds
    before = synced[data_key]
    changed = {}
    if now[0] != before[0]:
        changed[kept.SCHEMA] = now[0]
    if now[1] != before[1]:
        changed[kept.UNIT] = now[1]
    identity = _identity(loaded, data_key, opening)
    if identity is None:   # kept for this session only, and said
        opening.said = [("warning", opening.problem)]
        synced[data_key] = now
        return
    try:
        _store().declare(identity, names=_names(loaded, data_key), reason="declared in the app",
                         **changed)
    except AccessDenied as exc:   # not the role's to save: this session's only, said once
        ss.setdefault(_PROBLEM, {})[data_key] = (
            f"The {' and '.join(changed)} you declared {'are' if len(changed) > 1 else 'is'} "
            f"used in this session only, not saved on the server: {exc}")
        synced[data_key] = now
        return
    except kept.DeclarationsError as exc:
        ss.setdefault(_PROBLEM, {})[data_key] = (
            f"The {' and '.join(changed)} you declared {'are' if len(changed) > 1 else 'is'} "
            f"used in this session but not saved on the server: {exc} It is saved as soon as "
            "the store can be written again.")
        return
    ss.get(_PROBLEM, {}).pop(data_key, None)
    synced[data_key] = now


def notices() -> None:
    """In the sidebar, under the dataset's caption: write what a callback changed, and say
    what opening the data found (until the session changes its declarations) and why a
    change was not saved."""
    ss = st.session_state
    _sync()
    data_key = state.dataset_key()
    opening = ss.get(_OPENED, {}).get(data_key)
    for kind, sentence in () if opening is None else opening.said:
        getattr(st, kind)(plain(sentence, limit=600), icon=(
            ":material/restore:" if kind == "info" else ":material/report:"))
    problem = ss.get(_PROBLEM, {}).get(data_key)
    if problem:
        st.warning(plain(problem, limit=600), icon=":material/cloud_off:")


def finish() -> None:
    """After the page: write what it changed; if that failed, say so below it (and in the
    sidebar from the next run on)."""
    ss = st.session_state
    before = ss.get(_PROBLEM, {}).get(state.dataset_key())
    _sync()
    problem = ss.get(_PROBLEM, {}).get(state.dataset_key())
    if problem and problem != before:
        st.warning(plain(problem, limit=600), icon=":material/cloud_off:")
