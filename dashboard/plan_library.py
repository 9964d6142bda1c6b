"""Saved release plans: one SQLite store per server, plans named per dataset, each with a
version counter: a save from a version that is no longer the stored one is refused
(:class:`PlanConflict`), never written over another window's.

Path: ``EPSILON_LAB_PLANS``, else ``plans.sqlite`` in the ledger's folder. A saved plan holds
the published form of its queries only (no target computed from the data, none of the
session-only context), the privacy unit it was built under (a plan is released under its
own unit, never the session's) and the schema declared then (public and typed declarations
only): no true value is ever written here. A plan also keeps what it was built on: the
dataset's content identity and the versions of its declarations (``release.declarations``),
which the plan page compares with the store's to find a stale plan. Plans saved before any of
this was kept read as not recording it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from plan import model
from release import roles
from release.access import AccessDenied, Action
from release.ledger import LedgerError, ledger_path

__all__ = ["PLANS_ENV", "PlanLibraryError", "PlanConflict", "SavedPlan", "PlanLibrary",
           "plans_path", "queries_json", "queries_from_json", "unit_from_json", "keep_drawn",
           "what_changed"]

#: The environment variable naming the plans file.
PLANS_ENV = "EPSILON_LAB_PLANS"
_FORMAT = "epsilon-lab-plans"
_PLAN_FORMAT = "epsilon-lab-saved-plan"
_REPOSITORY = Path(__file__).resolve().parent.parent
_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS plans_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # AUTOINCREMENT: an id is never reused, so a tab holding a deleted plan's id never
    # mistakes another plan for its own
    """CREATE TABLE IF NOT EXISTS plans (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset TEXT NOT NULL,
        name TEXT NOT NULL,
        plan_json TEXT NOT NULL,
        version INTEGER NOT NULL,
        updated TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS plans_by_dataset ON plans (dataset, updated)",
]
_checked: set[Path] = set()   # files whose integrity and format were checked once


class PlanLibraryError(RuntimeError):
    """The plans file cannot be used (corrupt, locked, not writable, not a plans file); the
    message says what is wrong. The session's plan is kept."""


class PlanLibraryDenied(PlanLibraryError, AccessDenied):
    """The person acting may not change saved plans (a viewer, or nobody signed in); the
    message says who may. Nothing was written."""


def _may_write() -> str:
    """Who is writing (as the ``saved_by`` column names them), if they may save plans."""
    return roles.who(roles.check(Action.SAVE_PLAN, PlanLibraryDenied))


#: Columns added since the first layout: who saved the plan last, and who submitted it for a
#: steward to release (and when; "" while it is not submitted). Added in place to older files.
_ADDED_COLUMNS = {"saved_by": "TEXT NOT NULL DEFAULT ''",
                  "submitted_by": "TEXT NOT NULL DEFAULT ''",
                  "submitted": "TEXT NOT NULL DEFAULT ''"}


class PlanConflict(Exception):
    """A save refused: the plan was saved from another window since the version this one
    started from. ``stored``: the plan as it stands (nothing was written)."""

    def __init__(self, stored: SavedPlan) -> None:
        self.stored = stored
        super().__init__(f"the plan {stored.name!r} was changed in another window at "
                         f"{stored.updated_hhmm} (version {stored.version})")


@dataclass(frozen=True)
class SavedPlan:
    """One saved plan: its id, dataset key, name, queries (JSON), version and last save."""

    id: int
    dataset: str
    name: str
    plan_json: str
    version: int
    updated: str
    saved_by: str = ""       # who saved it last ("" for a plan saved before this was kept)
    submitted_by: str = ""   # who submitted it for a steward to release ("" while not)
    submitted: str = ""      # when (a later save withdraws it: what is released is what was)

    def queries(self) -> tuple[model.PlanQuery, ...]:
        return queries_from_json(self.plan_json)

    def unit(self) -> model.PrivacyUnit | None:
        """The privacy unit the plan was built under; None for a plan saved before plans
        kept it (or an empty one)."""
        return unit_from_json(self.plan_json)

    def declared(self) -> str | None:
        """The declared schema (JSON) the plan was built on; None if not recorded."""
        raw = json.loads(self.plan_json).get("declared_schema")
        return None if raw is None else json.dumps(raw, ensure_ascii=False)

    def built_on(self) -> tuple[str, model.BuiltOn] | None:
        """The dataset's content identity and the versions of its declarations the plan was
        built on; None for a plan saved before plans kept them (or an empty one)."""
        return built_on_from_json(self.plan_json)

    @property
    def size(self) -> int:
        return len(json.loads(self.plan_json).get("queries", []))

    @property
    def updated_hhmm(self) -> str:
        return datetime.fromisoformat(self.updated).strftime("%H:%M UTC")


def plans_path(path: str | os.PathLike | None = None) -> Path:
    """``path``, else ``EPSILON_LAB_PLANS``, else ``plans.sqlite`` beside the ledger; never
    inside the repository."""
    if path is None and os.environ.get(PLANS_ENV, "").strip():
        path = os.environ[PLANS_ENV]
    if path is None:
        try:
            path = ledger_path().parent / "plans.sqlite"
        except LedgerError as exc:
            raise PlanLibraryError(f"Plans are not saved: {exc}") from None
    resolved = Path(path).expanduser().absolute()
    try:
        resolved.resolve().relative_to(_REPOSITORY)
    except ValueError:
        return resolved
    raise PlanLibraryError(f"The plans file {str(resolved)!r} would be inside the repository: "
                           f"put it elsewhere (set {PLANS_ENV}).")


def _published(query: model.PlanQuery) -> model.PlanQuery:
    if query.target is not None and query.target.origin == "data":
        return replace(query, target=None)
    return query


def queries_json(queries: tuple[model.PlanQuery, ...],
                 unit: model.PrivacyUnit | None = None, declared: str | None = None,
                 built_on: tuple[str, model.BuiltOn] | None = None) -> str:
    """The queries as a saved plan holds them: published (a target read off the data is
    dropped), in order; with the privacy unit they were built under, the declared schema
    (JSON, ``dashboard.plan_unit_panel.declared_schema``) and the dataset's identity and
    declaration versions they were built on, when known."""
    data: dict = {"format": _PLAN_FORMAT}
    if unit is not None:
        data["privacy_unit"] = unit.to_dict()
    if declared is not None:
        data["declared_schema"] = json.loads(declared)
    if built_on is not None:
        data["built_on"] = {"dataset": built_on[0], **built_on[1].to_dict()}
    data["queries"] = [_published(q).to_dict() for q in queries]
    return json.dumps(data, ensure_ascii=False, allow_nan=False)


def unit_from_json(text: str) -> model.PrivacyUnit | None:
    """The privacy unit of a saved plan's text (None: not recorded); ``PlanLibraryError`` if
    it is there and not a unit."""
    try:
        raw = json.loads(text).get("privacy_unit")
        return None if raw is None else model.PrivacyUnit.from_dict(raw)
    except (ValueError, TypeError, AttributeError) as exc:
        raise PlanLibraryError(f"A saved plan's privacy unit cannot be read: {exc}") from None


def built_on_from_json(text: str) -> tuple[str, model.BuiltOn] | None:
    """The identity and declaration versions of a saved plan's text (None: not recorded);
    ``PlanLibraryError`` if they are there and unreadable."""
    try:
        raw = json.loads(text).get("built_on")
        if raw is None:
            return None
        fields = model._Fields(raw, "built_on")
        identity = fields.text("dataset")
        return identity, model.BuiltOn.from_fields(fields)
    except (ValueError, TypeError, AttributeError) as exc:
        raise PlanLibraryError(f"What a saved plan was built on cannot be read: {exc}") \
            from None


def _max_rows(queries: tuple[model.PlanQuery, ...]) -> model.PlanQuery | None:
    return next((q for q in queries if isinstance(q.query, model.MaxRows)), None)


def keep_drawn(kept: tuple[model.PlanQuery, ...], dropped: tuple[model.PlanQuery, ...]
               ) -> tuple[model.PlanQuery, ...]:
    """``kept``, still charging every max rows draw ``dropped`` saw (a version set aside:
    another window's, or this window's unsaved one). The planner saw those draws, so they
    stay in the plan to be charged (``plan.kinds.max_rows``): ``dropped``'s max rows query
    goes first when ``kept`` has none; when both have one, ``kept``'s keeps its drawn value
    and also charges the draws of ``dropped``'s past their common first ones (charging a
    draw twice is safe, leaving one out is not)."""
    theirs = _max_rows(dropped)
    if theirs is None:
        return kept
    mine = _max_rows(kept)
    if mine is None:
        return (theirs, *kept)
    a, b = mine.query.epsilons, theirs.query.epsilons
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                  min(len(a), len(b)))
    if common == len(b):   # every draw dropped saw is charged here already
        return kept
    merged = replace(mine, query=replace(mine.query, epsilons=(*a, *b[common:])))
    return tuple(merged if q is mine else q for q in kept)


def what_changed(before: tuple[model.PlanQuery, ...], after: tuple[model.PlanQuery, ...]
                 ) -> str:
    """What turned ``before`` into ``after``, in words: "added Count of rows; removed Mean of
    age" (queries by their id and label; a query of the same id that differs is "changed")."""
    old, new = {q.id: q for q in before}, {q.id: q for q in after}

    def labels(ids) -> str:
        names = [(new.get(i) or old[i]).label for i in ids]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4
                                        else "")
        return shown
    parts = []
    for verb, ids in (("added", [i for i in new if i not in old]),
                      ("removed", [i for i in old if i not in new]),
                      ("changed", [i for i in new if i in old and new[i] != old[i]])):
        if ids:
            parts.append(f"{verb} {labels(ids)}")
    return "; ".join(parts)


def queries_from_json(text: str) -> tuple[model.PlanQuery, ...]:
    """The queries of a saved plan; ``PlanLibraryError`` if the text is not one."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != _PLAN_FORMAT:
            raise model.PlanError("format", f"must be {_PLAN_FORMAT!r}")
        out = []
        for i, raw in enumerate(data.get("queries", [])):
            query = model.PlanQuery.from_fields(model._Fields(raw, f"queries[{i}]"))
            query.check(f"queries[{i}]")
            out.append(query)
        return tuple(out)
    except (ValueError, TypeError) as exc:
        raise PlanLibraryError(f"A saved plan cannot be read: {exc}") from None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class PlanLibrary:
    """The plans file at ``path`` (default :func:`plans_path`), created with its table."""

    def __init__(self, path: str | os.PathLike | None = None, *, timeout: float = 5.0) -> None:
        self.path = plans_path(path)
        self.timeout = float(timeout)

    def _fail(self, exc: BaseException, doing: str) -> PlanLibraryError:
        text, where = str(exc), repr(str(self.path))
        if "locked" in text:
            return PlanLibraryError(f"The plans file {where} is locked by another process "
                                    f"(waited {self.timeout:g} s while {doing}).")
        if isinstance(exc, sqlite3.OperationalError) and ("readonly" in text
                                                          or "unable to open" in text):
            return PlanLibraryError(f"The plans file {where} cannot be written or opened "
                                    f"({text}) while {doing}: make it and its folder "
                                    f"writable, or set {PLANS_ENV} elsewhere.")
        if isinstance(exc, sqlite3.DatabaseError):
            return PlanLibraryError(f"The plans file {where} is damaged or is not a SQLite "
                                    f"file ({text}) while {doing}. It was left untouched: "
                                    f"restore it, or set {PLANS_ENV} to another file.")
        return PlanLibraryError(f"The plans file {where} cannot be reached ({exc}) while "
                                f"{doing}.")

    @contextmanager
    def _connection(self, doing: str, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        if not self.path.exists():   # removed since it was checked: created afresh
            _checked.discard(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(self.path), timeout=self.timeout,
                                         isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise self._fail(exc, doing) from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if self.path not in _checked:
                self._check(connection)
            if write:
                connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            if connection.in_transaction:
                connection.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._fail(exc, doing) from None
        finally:
            connection.close()

    def _check(self, connection: sqlite3.Connection) -> None:
        result = connection.execute("PRAGMA quick_check").fetchall()
        if result != [("ok",)]:
            raise PlanLibraryError(f"The plans file {str(self.path)!r} fails SQLite's "
                                   "integrity check: restore it, or set "
                                   f"{PLANS_ENV} to another file.")
        names = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        names.discard("sqlite_sequence")
        if names and not {"plans", "plans_meta"} <= names:
            raise PlanLibraryError(f"{str(self.path)!r} is a SQLite database of something "
                                   "else, not Epsilon Lab's plans: set "
                                   f"{PLANS_ENV} to another file.")
        if not names:
            connection.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                connection.execute(statement)
            connection.execute("INSERT OR IGNORE INTO plans_meta VALUES ('format', ?)",
                               (_FORMAT,))
            connection.execute("COMMIT")
        # older files: the columns added since, in place (their plans: nobody recorded)
        def missing() -> list[str]:
            have = {row[1] for row in connection.execute("PRAGMA table_info(plans)")}
            return [column for column in _ADDED_COLUMNS if column not in have]

        if missing():
            connection.execute("BEGIN IMMEDIATE")
            for column in missing():   # read again under the lock: another may have added
                connection.execute(f"ALTER TABLE plans ADD COLUMN {column} "
                                   f"{_ADDED_COLUMNS[column]}")
            connection.execute("COMMIT")
        _checked.add(self.path)

    @staticmethod
    def _row(row) -> SavedPlan | None:
        return None if row is None else SavedPlan(*row)

    _COLUMNS = "id, dataset, name, plan_json, version, updated, saved_by, submitted_by, submitted"

    def get(self, plan_id: int) -> SavedPlan | None:
        with self._connection("reading a plan") as c:
            return self._row(c.execute(f"SELECT {self._COLUMNS} FROM plans WHERE id = ?",
                                       (int(plan_id),)).fetchone())

    def plans(self, dataset: str) -> list[SavedPlan]:
        """The dataset's plans, the most recently saved first."""
        with self._connection("listing plans") as c:
            rows = c.execute(f"SELECT {self._COLUMNS} FROM plans WHERE dataset = ? "
                             "ORDER BY updated DESC, id DESC", (dataset,)).fetchall()
        return [SavedPlan(*row) for row in rows]

    def latest(self, dataset: str) -> SavedPlan | None:
        found = self.plans(dataset)
        return found[0] if found else None

    def create(self, dataset: str, name: str, queries: tuple[model.PlanQuery, ...],
               unit: model.PrivacyUnit | None = None, declared: str | None = None,
               built_on: tuple[str, model.BuiltOn] | None = None) -> SavedPlan:
        who = _may_write()
        text, now = queries_json(queries, unit, declared, built_on), _now()
        with self._connection("saving a new plan", write=True) as c:
            cursor = c.execute("INSERT INTO plans (dataset, name, plan_json, version, updated, "
                               "saved_by) VALUES (?, ?, ?, 1, ?, ?)",
                               (dataset, name, text, now, who))
            return SavedPlan(cursor.lastrowid, dataset, name, text, 1, now, who)

    def save(self, plan_id: int, queries: tuple[model.PlanQuery, ...], *, dataset: str,
             name: str, expected_version: int, unit: model.PrivacyUnit | None = None,
             declared: str | None = None, built_on: tuple[str, model.BuiltOn] | None = None
             ) -> SavedPlan:
        """Save ``queries`` as the plan's next version, if the stored one is still
        ``expected_version`` (the one this window started from). Otherwise another window
        saved it since: nothing is written and :class:`PlanConflict` gives the stored plan
        (the caller offers to reload it or to save its own as a copy; :func:`keep_drawn`
        keeps the max rows draws of whichever version is set aside). A plan deleted
        meanwhile is saved anew. The check and the write are one transaction."""
        who = _may_write()
        now = _now()
        text = queries_json(queries, unit, declared, built_on)
        with self._connection("saving the plan", write=True) as c:
            before = self._row(c.execute(f"SELECT {self._COLUMNS} FROM plans WHERE id = ?",
                                         (int(plan_id),)).fetchone())
            if before is None:
                cursor = c.execute("INSERT INTO plans (dataset, name, plan_json, version, "
                                   "updated, saved_by) VALUES (?, ?, ?, 1, ?, ?)",
                                   (dataset, name, text, now, who))
                return SavedPlan(cursor.lastrowid, dataset, name, text, 1, now, who)
            if before.version != expected_version:
                raise PlanConflict(before)
            # a changed plan is no longer the one submitted: it is submitted again if meant
            c.execute("UPDATE plans SET plan_json = ?, name = ?, version = ?, updated = ?, "
                      "saved_by = ?, submitted_by = '', submitted = '' WHERE id = ?",
                      (text, name, before.version + 1, now, who, before.id))
            return replace(before, plan_json=text, name=name, version=before.version + 1,
                           updated=now, saved_by=who, submitted_by="", submitted="")

    def rename(self, plan_id: int, name: str) -> SavedPlan | None:
        who = _may_write()
        now = _now()
        with self._connection("renaming the plan", write=True) as c:
            c.execute("UPDATE plans SET name = ?, version = version + 1, updated = ?, "
                      "saved_by = ? WHERE id = ?", (name, now, who, int(plan_id)))
            return self._row(c.execute(f"SELECT {self._COLUMNS} FROM plans WHERE id = ?",
                                       (int(plan_id),)).fetchone())

    def duplicate(self, plan_id: int, name: str | None = None) -> SavedPlan | None:
        _may_write()
        original = self.get(plan_id)
        if original is None:
            return None
        return self.create(original.dataset, name or f"{original.name} (copy)",
                           queries_from_json(original.plan_json), original.unit(),
                           original.declared(), original.built_on())

    def move(self, dataset: str, to: str) -> int:
        """Key every plan of ``dataset`` under ``to`` instead (an upload's own plans, once a
        steward keeps it on the server, become the kept file's: shared); how many moved.
        Part of keeping data on the server: a steward's."""
        roles.check(Action.KEEP_DATA, PlanLibraryDenied)
        with self._connection("moving plans", write=True) as c:
            return c.execute("UPDATE plans SET dataset = ? WHERE dataset = ?",
                             (to, dataset)).rowcount

    def submit(self, plan_id: int) -> SavedPlan | None:
        """Mark the plan, as it stands, as submitted for a steward to release (an analyst's
        way to release beyond their allotment); a later save withdraws it."""
        person = roles.check(Action.SUBMIT_PLAN, PlanLibraryDenied)
        with self._connection("submitting the plan", write=True) as c:
            c.execute("UPDATE plans SET submitted_by = ?, submitted = ? WHERE id = ?",
                      (roles.who(person), _now(), int(plan_id)))
            return self._row(c.execute(f"SELECT {self._COLUMNS} FROM plans WHERE id = ?",
                                       (int(plan_id),)).fetchone())

    def submitted(self, dataset: str) -> list[SavedPlan]:
        """The dataset's plans submitted for a steward to release, the oldest first."""
        with self._connection("listing submitted plans") as c:
            rows = c.execute(f"SELECT {self._COLUMNS} FROM plans WHERE dataset = ? AND "
                             "submitted != '' ORDER BY submitted, id", (dataset,)).fetchall()
        return [SavedPlan(*row) for row in rows]

    def delete(self, plan_id: int) -> None:
        _may_write()
        with self._connection("deleting the plan", write=True) as c:
            c.execute("DELETE FROM plans WHERE id = ?", (int(plan_id),))
