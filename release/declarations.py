"""What a steward declared about a dataset, kept on the server: its schema and its privacy
unit, each as a dated, numbered history of changes.

A dataset is known by its content identity (``plan.identity.content_digest``: the same data
uploaded again, read from the data folder or given to the command line is the same dataset)
and by every name it had (a file name, a data key). Each declaration is an event: the schema
(the JSON of ``dashboard.data.schema.to_json``, roles, categories, bounds and bins with their
origins) or the unit (``PrivacyUnit.to_dict``) as declared at that time, with a version that
counts that dataset's changes of it. Events are never changed or removed (triggers refuse
it): a plan or a release names the versions it was built on, and they keep meaning that.

Only declarations are stored: public or typed facts and the steward's choices, never a value
read off the data beyond what the schema itself records (a schema records the origin of each
declaration, "data" included, exactly as its JSON file does).

Path: ``EPSILON_LAB_DECLARATIONS``, else ``declarations.sqlite`` beside the ledger.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from dpcore.contributions import PrivacyUnit
from release import roles
from release.access import AccessDenied, Action
from release.store import SqliteStore, StoreError, store_path

__all__ = ["DECLARATIONS_ENV", "DeclarationsError", "DeclarationEvent", "Declarations",
           "DeclarationStore", "DeclarationsDenied", "declarations_path", "on_record", "KEEP",
           "SCHEMA", "UNIT"]

#: The environment variable naming the declarations file.
DECLARATIONS_ENV = "EPSILON_LAB_DECLARATIONS"
SCHEMA, UNIT = "schema", "unit"
#: ``declare``'s default: leave that declaration as it is.
KEEP = object()
DeclarationsError = StoreError


class DeclarationsDenied(StoreError, AccessDenied):
    """The person acting may not write this declaration (the message says who may); nothing
    was saved."""


def declarations_path(path: str | os.PathLike | None = None):
    """``path``, else ``EPSILON_LAB_DECLARATIONS``, else ``declarations.sqlite`` beside the
    ledger."""
    return store_path(path, DECLARATIONS_ENV, "declarations.sqlite", "Dataset declarations")


@dataclass(frozen=True)
class DeclarationEvent:
    """One change of a dataset's schema or unit: ``text`` is the declaration's JSON as of
    ``time`` (None: declared back to what the data comes with)."""

    id: int
    dataset: str
    what: str
    version: int
    time: str
    text: str | None
    reason: str = ""
    who: str = ""

    @property
    def date(self) -> str:
        return self.time[:10]

    def unit(self) -> PrivacyUnit | None:
        """The privacy unit of a unit event (None: one row is one person, as shipped)."""
        return None if self.text is None else PrivacyUnit.from_dict(json.loads(self.text))


@dataclass(frozen=True)
class Declarations:
    """A dataset's declarations as they stand: its names and the latest schema and unit
    events (None: never declared)."""

    dataset: str
    names: tuple[str, ...]
    schema: DeclarationEvent | None
    unit: DeclarationEvent | None

    @property
    def schema_json(self) -> str | None:
        return None if self.schema is None else self.schema.text

    @property
    def privacy_unit(self) -> PrivacyUnit | None:
        return None if self.unit is None else self.unit.unit()

    @property
    def versions(self) -> dict[str, int]:
        """The versions a plan built now is built on (0: never declared)."""
        return {SCHEMA: 0 if self.schema is None else self.schema.version,
                UNIT: 0 if self.unit is None else self.unit.version}

    @property
    def empty(self) -> bool:
        return self.schema is None and self.unit is None

    def restored_words(self) -> str:
        """"schema and unit restored from 2026-11-28" (the later of the two dates)."""
        kept = [e for e in (self.schema, self.unit) if e is not None and e.text is not None]
        if not kept:
            return ""
        what = " and ".join(e.what for e in kept)
        return f"{what} restored from {max(e.date for e in kept)}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _canonical(text: str | None) -> str | None:
    """One spelling of a declaration's JSON (key order and spacing do not make a change)."""
    if text is None:
        return None
    return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))


_EVENT_COLUMNS = "id, dataset, what, version, time, text, reason, who"


class DeclarationStore(SqliteStore):
    """The declarations file at ``path`` (default :func:`declarations_path`)."""

    FORMAT = "epsilon-lab-declarations"
    ENV = DECLARATIONS_ENV
    WHAT = "The dataset declarations file"
    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS names (
            dataset TEXT NOT NULL, name TEXT NOT NULL, seen TEXT NOT NULL,
            PRIMARY KEY (dataset, name))""",
        """CREATE TABLE IF NOT EXISTS events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            dataset TEXT NOT NULL,
            what TEXT NOT NULL CHECK (what IN ('schema', 'unit')),
            version INTEGER NOT NULL,
            time TEXT NOT NULL,
            text TEXT,
            reason TEXT NOT NULL DEFAULT '',
            who TEXT NOT NULL DEFAULT '',
            UNIQUE (dataset, what, version))""",
        "CREATE INDEX IF NOT EXISTS names_by_name ON names (name)",
        # history is never rewritten: a plan or release names the versions it was built on
        """CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
            BEGIN SELECT RAISE(ABORT, 'declaration events are never changed'); END""",
        """CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
            BEGIN SELECT RAISE(ABORT, 'declaration events are never removed'); END""",
    )

    def __init__(self, path: str | os.PathLike | None = None, *, timeout: float = 5.0) -> None:
        super().__init__(declarations_path(path), timeout=timeout)

    @staticmethod
    def _event(row: tuple) -> DeclarationEvent:
        return DeclarationEvent(*row)

    def _latest(self, c, dataset: str, what: str) -> DeclarationEvent | None:
        row = c.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE dataset = ? AND what = ? "
                        "ORDER BY version DESC LIMIT 1", (dataset, what)).fetchone()
        return None if row is None else self._event(row)

    def _state(self, c, dataset: str) -> Declarations | None:
        names = tuple(r[0] for r in c.execute(
            "SELECT name FROM names WHERE dataset = ? ORDER BY seen, name", (dataset,)))
        schema, unit = self._latest(c, dataset, SCHEMA), self._latest(c, dataset, UNIT)
        if not names and schema is None and unit is None:
            return None
        return Declarations(dataset, names, schema, unit)

    def latest(self, dataset: str) -> Declarations | None:
        """The dataset's declarations as they stand (None: the dataset is not known)."""
        with self.connection("reading a dataset's declarations") as c:
            return self._state(c, dataset)

    def find(self, name: str) -> list[str]:
        """The datasets (content identities) known by ``name``, the most recently seen
        first."""
        return [r[0] for r in self.read("looking a dataset up by name",
                                        "SELECT dataset FROM names WHERE name = ? "
                                        "ORDER BY seen DESC", (name,))]

    def history(self, dataset: str) -> list[DeclarationEvent]:
        """Every change of the dataset's declarations, oldest first."""
        return self.read("reading a dataset's history",
                         f"SELECT {_EVENT_COLUMNS} FROM events WHERE dataset = ? ORDER BY id",
                         (dataset,), self._event)

    def event(self, dataset: str, what: str, version: int) -> DeclarationEvent | None:
        """Version ``version`` of the dataset's schema or unit (what a plan was built on)."""
        found = self.read("reading a declaration",
                          f"SELECT {_EVENT_COLUMNS} FROM events WHERE dataset = ? AND "
                          "what = ? AND version = ?", (dataset, what, int(version)),
                          self._event)
        return found[0] if found else None

    def declare(self, dataset: str, *, names: Iterable[str] = (), schema: object = KEEP,
                unit: object = KEEP, reason: str = "", who: str = "") -> Declarations:
        """Record the dataset's names, and its schema (JSON text, or None: back to what the
        data comes with) and unit (a PrivacyUnit, or None: one row is one person) where they
        differ from what stands: one dated event each, in one transaction. Returns what
        stands after.

        A schema or a unit is a steward's to declare; recording the names data was opened
        under is anyone's who may load data (both refused with :class:`DeclarationsDenied`).
        ``who`` defaults to the person acting (:func:`release.roles.who`)."""
        if not dataset:
            raise ValueError("a dataset's declarations need its content identity")
        person = roles.check(Action.DECLARE if (schema is not KEEP or unit is not KEEP)
                             else Action.EXPLORE, DeclarationsDenied)
        who = who or roles.who(person)
        now = _now()
        wanted = {}
        if schema is not KEEP:
            if schema is not None and not isinstance(schema, str):
                raise TypeError("schema must be JSON text or None")
            wanted[SCHEMA] = _canonical(schema)
        if unit is not KEEP:
            if unit is not None and not isinstance(unit, PrivacyUnit):
                raise TypeError("unit must be a PrivacyUnit or None")
            wanted[UNIT] = None if unit is None else _canonical(json.dumps(unit.to_dict()))
        with self.connection("saving a dataset's declarations", write=True) as c:
            for name in names:
                if name:
                    c.execute("INSERT OR IGNORE INTO names VALUES (?, ?, ?)",
                              (dataset, str(name), now))
            for what, text in wanted.items():
                before = self._latest(c, dataset, what)
                if (before is None and text is None) or (
                        before is not None and _canonical(before.text) == text):
                    continue
                c.execute("INSERT INTO events (dataset, what, version, time, text, reason, "
                          "who) VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (dataset, what, 1 if before is None else before.version + 1, now,
                           text, reason[:300], who))
            return self._state(c, dataset)


def on_record(store: DeclarationStore, dataset: str, names: Iterable[str]) -> str:
    """Record ``names`` for the data whose content identity is ``dataset``, and say in one
    line which of its declarations are on record (versions and dates), or that none are."""
    try:
        state = store.declare(dataset, names=names)
    except StoreError as exc:
        return f"declarations: not read or recorded ({' '.join(str(exc).split())})"
    kept = [e for e in (state.schema, state.unit) if e is not None]
    said = " and ".join(f"{e.what} version {e.version} of {e.date}"
                        + (" (back to the data's own)" if e.text is None else "")
                        for e in kept)
    return (f"declarations: {said or 'none'} on record for this data ({dataset[:19]}…) in "
            f"{store.path}; a release uses the plan's own schema and unit")
