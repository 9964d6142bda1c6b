"""The ledger: every real release and every budget, in an append-only SQLite file.

Path: ``EPSILON_LAB_LEDGER``, else the user's data folder (``~/.local/share/epsilon-lab/
ledger.sqlite`` on Linux), never inside the repository. One transaction (``BEGIN IMMEDIATE``)
reads what a dataset has spent and records a release, so two releases started together from
two processes can never overspend together. Triggers refuse every UPDATE and DELETE; each
entry carries the hash of the one before it, so an edit made around the triggers shows.

If the process dies after the noise is drawn and before the transaction commits, SQLite rolls
the transaction back on the next open: nothing is recorded and nothing was shown or written
(values are returned and files written only after the commit). If it dies after the commit
and before the files are written, the release is recorded and its values are lost: the budget
is spent for nothing, which errs on the side of privacy. If drawing raises once noise has
been drawn (``release.errors.DrawFailed``), the release is recorded as spent with no values
(:data:`FAILED_DRAW`): the failure may depend on what was drawn.

The files a release publishes are kept in the same file (table ``release_files``, append-only
as the rest): stored byte for byte after the commit (:meth:`Ledger.store_files`, refused unless
its ``release.json`` carries the values recorded in the entry), read back by
:meth:`Ledger.release_files`. A release whose files could not be stored stays recorded.
Copying the ledger file copies every release with its files. A ledger of layout 1 (before
releases kept their files) gets the table in place on its first open, in one transaction;
its releases have no files (:data:`NOT_KEPT_BEFORE`).

Who may write it (issue 33): every write asks the role of the person acting
(:func:`release.access.current`): a steward sets budgets, gives allotments and releases; an
analyst releases within their allotment of a dataset's budget (charged against both in the
one transaction that records the release); a viewer writes nothing. Refusals are
:class:`LedgerDenied` (a LedgerError and a PermissionError). Layout 3 records who made each
entry (``by_subject``, ``by_email``, inside the entry's hash when set) and the allotments; an
older ledger gets both in place on its first open (its entries: nobody recorded).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from dpcore.safe_rounding import lower, upper
from plan.identity import DatasetIdentity
from release.access import (
    AccessDenied,
    AccessError,
    Action,
    Person,
    allowed,
    denied_message,
    recorded_as,
)
from release.access import current as acting_person
from release.accounting import total_up
from release.errors import OverBudget
from release.paths import LEDGER_ENV, LedgerError, default_path, ledger_path

__all__ = ["LEDGER_ENV", "LedgerError", "Ledger", "BudgetEvent", "BudgetChange",
           "ReleaseRecord", "DatasetStatus", "FAILED_DRAW", "default_path", "ledger_path",
           "SCHEMA_VERSION", "REASON_LIMIT", "budget_changes", "left_in_words", "standing",
           "values_sha256", "Allotment", "LedgerDenied", "NOT_KEPT_BEFORE", "NOT_KEPT_FAILED",
           "NOT_KEPT_LOST"]

#: The layout of the tables this code reads and writes (2: releases keep their files in
#: ``release_files``; 3: every entry records who made it, and analysts' allotments; older
#: ledgers are upgraded in place when they are opened).
SCHEMA_VERSION = 3
#: The values hash recorded for a release whose draw failed after noise was drawn: its budget
#: is spent, nothing was published.
FAILED_DRAW = "none: the draw failed, nothing was published"
#: Why a release has no kept files, in words (:meth:`Ledger.why_no_files`).
NOT_KEPT_BEFORE = "files not kept (recorded before releases kept their files)"
NOT_KEPT_FAILED = "no files: the draw failed, nothing was published"
NOT_KEPT_LOST = ("files not kept: storing them failed after the release was recorded (they "
                 "were offered or written once, then)")
#: The longest reason a budget event may carry (it is published on every later card).
REASON_LIMIT = 300
#: How long a release waits for another process's transaction before giving up (seconds).
DEFAULT_TIMEOUT = 30.0
_FORMAT = "epsilon-lab-ledger"
#: How datasets are identified (plan.identity.content_digest). A ledger without this entry
#: and with datasets was written with byte-level hashes: those are looked up as aliases.
_IDENTITY = "content-v1"
_GENESIS = "0" * 64


@dataclass(frozen=True)
class BudgetEvent:
    """A dataset's total budget as set at ``time`` (the latest one holds)."""

    id: int
    time: str
    epsilon: float
    delta: float | None
    reason: str
    by: str = ""   # who set it (email, else subject; "" for events from before layout 3)


@dataclass(frozen=True)
class ReleaseRecord:
    """One recorded release: what it spent and how to recognise its values."""

    id: int
    dataset: DatasetIdentity
    time: str
    epsilon: float
    delta: float
    accounting: str
    values_hash: str
    plan_json: str
    implementation: str
    entry_hash: str
    by: str = ""   # who released it (email, else subject; "" for releases from before)


@dataclass(frozen=True)
class BudgetChange:
    """One budget event as a change of what came before: ``change`` in words ("set", "ε
    raised", "ε lowered", "δ cap removed", …), with the ε and δ its dataset's releases had
    spent when it was made (so a budget set below what was spent shows as such). The
    steward's decisions, never a figure of the data: published on every later card."""

    entry: int
    time: str
    epsilon: float
    delta: float | None
    change: str
    reason: str
    spent_epsilon: float
    spent_delta: float
    by: str = ""   # who made it: shown on the pages, never published (not in to_dict)

    def to_dict(self) -> dict[str, Any]:
        return {"ledger_entry": self.entry, "time": self.time, "change": self.change,
                "epsilon": self.epsilon, "delta": self.delta, "reason": self.reason,
                "spent_epsilon_before": self.spent_epsilon,
                "spent_delta_before": self.spent_delta}


def _change_words(before: BudgetEvent | None, now: BudgetEvent) -> str:
    """What a budget event changed, in words (ε first, then the δ cap)."""
    if before is None:
        return "set" + ("" if now.delta is None else " (with a δ cap)")
    words = []
    if now.epsilon != before.epsilon:
        words.append("ε raised" if now.epsilon > before.epsilon else "ε lowered")
    if before.delta is not None and now.delta is None:
        words.append("δ cap removed")
    elif before.delta is None and now.delta is not None:
        words.append("δ cap set")
    elif before.delta is not None and now.delta is not None and now.delta != before.delta:
        words.append("δ cap raised" if now.delta > before.delta else "δ cap lowered")
    return ", ".join(words) or "set again, unchanged"


def budget_changes(events: list[BudgetEvent],
                   releases: list[tuple[int, float, float]]) -> tuple[BudgetChange, ...]:
    """Each budget event (oldest first) as a change of the one before, with what the
    ``releases`` ((entry id, ε, δ), any order) recorded before it had spent."""
    out, before = [], None
    for event in events:
        earlier = [(e, d) for entry, e, d in releases if entry < event.id]
        out.append(BudgetChange(event.id, event.time, event.epsilon, event.delta,
                                _change_words(before, event), event.reason,
                                total_up([e for e, _ in earlier] or [0.0]),
                                total_up([d for _, d in earlier] or [0.0]), event.by))
        before = event
    return tuple(out)


@dataclass(frozen=True)
class Allotment:
    """The part of a dataset's budget a steward gave an analyst (``analyst``: their email),
    as set at ``time`` (the latest one holds), and what the analyst's releases have spent."""

    id: int
    analyst: str
    time: str
    epsilon: float
    delta: float | None
    reason: str
    by: str
    spent_epsilon: float = 0.0
    spent_delta: float = 0.0

    @property
    def remaining_epsilon(self) -> float:
        return float(Fraction(self.epsilon) - Fraction(self.spent_epsilon))

    @property
    def remaining_delta(self) -> float | None:
        return None if self.delta is None else float(Fraction(self.delta)
                                                      - Fraction(self.spent_delta))


class LedgerDenied(LedgerError, AccessDenied):
    """The person acting may not write this to the ledger; the message says who may.
    Nothing was recorded."""


def _shown(subject: str, email: str) -> str:
    return email or subject


@dataclass(frozen=True)
class DatasetStatus:
    """A dataset's budget (None when none is set), what its releases spent (ε and δ added
    up: releases compose by basic composition) and how many there were; ``names`` every
    name the ledger knows this content by (one content, one budget, whatever its name);
    ``history`` every budget event of it, oldest first."""

    dataset: DatasetIdentity
    budget: BudgetEvent | None
    spent_epsilon: float
    spent_delta: float
    releases: int
    names: tuple[str, ...] = ()
    history: tuple[BudgetChange, ...] = ()

    @property
    def remaining_delta(self) -> float | None:
        """What is left of the δ cap (negative: over it; None: no cap)."""
        if self.budget is None or self.budget.delta is None:
            return None
        return float(Fraction(self.budget.delta) - Fraction(self.spent_delta))

    @property
    def remaining_epsilon(self) -> float | None:
        """What is left of the ε budget (negative: over it; None: no budget)."""
        if self.budget is None:
            return None
        return float(Fraction(self.budget.epsilon) - Fraction(self.spent_epsilon))


def left_in_words(left: float | None, symbol: str = "ε", *, digits: int = 6) -> str:
    """What is left of a budget for a person to read: "ε = 0.5 left" (rounded down), "over
    budget by ε = 3.36" when the budget was set below what was spent (rounded up: never
    less over than it is), "no limit" when there is none."""
    if left is None:
        return "no limit"
    if left < 0:
        return f"over budget by {symbol} = {upper(-left, digits)}"
    return f"{symbol} = {lower(left, digits)} left"


def standing(left: float, total: float, symbol: str = "ε", *, digits: int = 6) -> str:
    """A refusal's words for a dataset's standing: "has ε = 0.25 left of 1", or "is over
    budget by ε = 3.36 (its budget is 1)" when the budget was set below what was spent."""
    if left < 0:
        return f"is {left_in_words(left, symbol, digits=digits)} (its budget is {total:g})"
    return f"has {left_in_words(left, symbol, digits=digits)} of {total:g}"


def values_sha256(values: list[dict[str, Any]]) -> str:
    """SHA-256 of a release's values in canonical JSON (each query's ``{"id", "rows": [[group,
    value], …]}``): the hash the ledger records, and what a stored ``release.json`` is checked
    against."""
    text = json.dumps(values, sort_keys=True, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _values_of_release_json(data: bytes) -> tuple[Any, Any, str]:
    """(its ledger entry, its recorded values hash, the hash of the values it holds) of a
    release.json (``release.files.release_record``); ValueError when it is not one."""
    record = json.loads(data.decode("utf-8"))
    if not isinstance(record, dict) or record.get("format") != "epsilon-lab-release":
        raise ValueError("it is not an Epsilon Lab release record")
    values = [{"id": q["id"], "rows": [[v["group"], v["value"]] for v in q["values"]]}
              for q in record["queries"]]
    return record.get("ledger_entry"), record.get("values_sha256"), values_sha256(values)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _entry_hash(prev: str, kind: str, dataset: DatasetIdentity, time: str, epsilon: float,
                delta: float | None, body: str, by: tuple[str, str] = ("", "")) -> str:
    parts = [prev, kind, dataset.name, dataset.content_hash, time, repr(epsilon), repr(delta),
             body]
    if any(by):   # who made it is part of the chain; entries from before (no one) hash as then
        parts += list(by)
    text = "\x1f".join(parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS ledger_meta (
        key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS datasets (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        first_seen TEXT NOT NULL,
        UNIQUE (name, content_hash))""",
    """CREATE TABLE IF NOT EXISTS entries (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('budget', 'release')),
        dataset_id INTEGER NOT NULL REFERENCES datasets (id),
        time TEXT NOT NULL,
        epsilon REAL NOT NULL CHECK (epsilon >= 0),
        delta REAL CHECK (delta IS NULL OR (delta >= 0 AND delta < 1)),
        body TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        entry_hash TEXT NOT NULL UNIQUE)""",
    "CREATE INDEX IF NOT EXISTS entries_by_dataset ON entries (dataset_id, kind)",
]
#: Layout 2: each release's published files, byte for byte (rowid order: the order they
#: were built in). Added in place to a layout-1 ledger (:meth:`Ledger._upgrade`).
_FILES_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS release_files (
        release_id INTEGER NOT NULL REFERENCES entries (id),
        name TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        bytes BLOB NOT NULL,
        PRIMARY KEY (release_id, name))""",
]
_TABLES = ("ledger_meta", "datasets", "entries", "release_files", "allotments")


def _trigger(table: str, action: str) -> str:
    return (f"CREATE TRIGGER IF NOT EXISTS {table}_no_{action.lower()} BEFORE {action} ON "
            f"{table} BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: {table} "
            f"rows cannot be {'changed' if action == 'UPDATE' else 'deleted'}'); END")


_FILES_SCHEMA += [_trigger("release_files", a) for a in ("UPDATE", "DELETE")]
_SCHEMA += [_trigger(t, a) for t in _TABLES[:3] for a in ("UPDATE", "DELETE")] + _FILES_SCHEMA
#: Layout 3: who made each entry (the provider's subject and email; "local" while sign-in is
#: off; "command line (user@host)"; empty for entries from before), and the allotments
#: stewards give analysts of a dataset's budget (append-only events: the latest one per
#: dataset and analyst holds). Added in place to older ledgers (:meth:`Ledger._upgrade`).
_WHO_SCHEMA = [
    "ALTER TABLE entries ADD COLUMN by_subject TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE entries ADD COLUMN by_email TEXT NOT NULL DEFAULT ''",
    """CREATE TABLE IF NOT EXISTS allotments (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES datasets (id),
        analyst TEXT NOT NULL,
        time TEXT NOT NULL,
        epsilon REAL NOT NULL CHECK (epsilon >= 0),
        delta REAL CHECK (delta IS NULL OR (delta >= 0 AND delta < 1)),
        reason TEXT NOT NULL,
        by_subject TEXT NOT NULL,
        by_email TEXT NOT NULL)""",
] + [_trigger("allotments", a) for a in ("UPDATE", "DELETE")]
#: A stored file's name: a plain file name (fetch writes it into a folder as it is).
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


class Ledger:
    """A ledger file, opened (and created with its tables if new).

    Parameters
    ----------
    path : path-like, optional
        The SQLite file (default :func:`ledger_path`).
    timeout : float
        Seconds to wait for another process's transaction (SQLite's busy timeout).

    Raises
    ------
    LedgerError
        The file cannot be created or read, is not an Epsilon Lab ledger, fails SQLite's
        integrity check, or stays locked beyond ``timeout``.
    """

    def __init__(self, path: str | os.PathLike | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = ledger_path(path)
        self.timeout = float(timeout)
        self._connection = self._open()

    # -- opening ----------------------------------------------------------------------------

    def _fail(self, exc: BaseException, doing: str) -> LedgerError:
        text = str(exc)
        where = repr(str(self.path))
        if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
            return LedgerError(
                f"The ledger {where} is locked by another process (waited "
                f"{self.timeout:g} s while {doing}). Nothing was recorded: try again when the "
                "other release has finished, or find the process holding it.")
        if isinstance(exc, sqlite3.OperationalError) and ("readonly" in text
                                                          or "read-only" in text):
            return LedgerError(
                f"The ledger {where} cannot be written ({text}) while {doing}: its file or "
                "its folder is read-only (SQLite writes a journal file beside it). Nothing "
                "was recorded: make both writable, or set EPSILON_LAB_LEDGER elsewhere.")
        if isinstance(exc, sqlite3.OperationalError) and "unable to open" in text and (
                self.path.exists()):
            return LedgerError(
                f"The ledger {where} cannot be written ({text}) while {doing}: its folder is "
                "probably read-only (SQLite writes a journal file beside the ledger). Nothing "
                "was recorded: make the folder writable, or set EPSILON_LAB_LEDGER elsewhere.")
        if isinstance(exc, sqlite3.OperationalError) and "unable to open" in text:
            return LedgerError(
                f"The ledger {where} cannot be opened or created ({text}) while {doing}: "
                "check that its folder exists and is writable, or set EPSILON_LAB_LEDGER.")
        if isinstance(exc, sqlite3.DatabaseError):
            return LedgerError(
                f"The ledger {where} is damaged or is not a SQLite file ({text}) while "
                f"{doing}. It was left untouched and nothing was recorded: restore it from a "
                "backup, or point EPSILON_LAB_LEDGER to another file.")
        if isinstance(exc, OSError):
            return LedgerError(f"The ledger {where} cannot be reached ({exc.strerror or exc})"
                               f" while {doing}: check the path and its permissions.")
        return LedgerError(f"The ledger {where} failed while {doing}: {text}")

    def _open(self) -> sqlite3.Connection:
        existed = self.path.exists()
        if not existed:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._fail(exc, "creating its folder") from None
        try:
            connection = sqlite3.connect(str(self.path), timeout=self.timeout,
                                         isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._fail(exc, "opening it") from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA synchronous = FULL")
            self._check_file(connection)
            if not self._has_tables(connection):
                self._create(connection)
            self._upgrade(connection)
            self._check_meta(connection)
        except LedgerError:
            connection.close()
            raise
        except sqlite3.Error as exc:
            connection.close()
            raise self._fail(exc, "opening it") from None
        return connection

    def _check_file(self, connection: sqlite3.Connection) -> None:
        result = connection.execute("PRAGMA quick_check").fetchall()
        if result != [("ok",)]:
            problems = "; ".join(str(row[0]) for row in result[:3])
            raise LedgerError(
                f"The ledger {str(self.path)!r} fails SQLite's integrity check ({problems}). "
                "It was left untouched and nothing was recorded: restore it from a backup.")

    @staticmethod
    def _has_tables(connection: sqlite3.Connection) -> bool:
        names = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        return "ledger_meta" in names

    def _create(self, connection: sqlite3.Connection) -> None:
        names = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if names - set(_TABLES):
            raise LedgerError(f"{str(self.path)!r} is a SQLite database of something else "
                              f"(tables {', '.join(sorted(names))}), not an Epsilon Lab "
                              "ledger: choose another file.")
        with self._transaction(connection, "creating its tables"):
            for statement in _SCHEMA + _WHO_SCHEMA:
                connection.execute(statement)
            connection.execute("INSERT OR IGNORE INTO ledger_meta VALUES ('format', ?)",
                               (_FORMAT,))
            connection.execute("INSERT OR IGNORE INTO ledger_meta VALUES ('schema', ?)",
                               (str(SCHEMA_VERSION),))
            connection.execute("INSERT OR IGNORE INTO ledger_meta VALUES ('identity', ?)",
                               (_IDENTITY,))
            connection.execute("INSERT OR IGNORE INTO ledger_meta VALUES ('files_from', '1')")

    def _upgrade(self, connection: sqlite3.Connection) -> None:
        """Layout 1 or 2 → 3, in place and in one transaction: from 1, the ``release_files``
        table and its triggers and ``files_from`` (the first entry that can have files: the
        releases before it were recorded before releases kept their files); from both, who
        made each entry (two columns, empty for the rows there) and the ``allotments`` table;
        the layout recorded as 3. The meta row's trigger is dropped and made again inside the
        transaction, so the layout is the only row ever changed. Another process may have
        upgraded it meanwhile: the layout is read again once the write lock is held."""
        def layout() -> str | None:
            row = connection.execute("SELECT value FROM ledger_meta WHERE key = 'schema'"
                                     ).fetchone()
            return None if row is None else row[0]

        if layout() not in ("1", "2"):
            return
        with self._transaction(connection, "upgrading it to its current layout"):
            before = layout()
            if before not in ("1", "2"):
                return
            after = connection.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0]
            # 1 → 2: releases keep their files; 2 → 3: who made each entry, and allotments
            for statement in (_FILES_SCHEMA if before == "1" else []) + _WHO_SCHEMA:
                connection.execute(statement)
            connection.execute("DROP TRIGGER ledger_meta_no_update")
            connection.execute("UPDATE ledger_meta SET value = ? WHERE key = 'schema'",
                               (str(SCHEMA_VERSION),))
            connection.execute(_trigger("ledger_meta", "UPDATE"))
            if before == "1":
                connection.execute("INSERT OR IGNORE INTO ledger_meta VALUES ('files_from', ?)",
                                   (str(int(after) + 1),))

    def knows_legacy_identities(self) -> bool:
        """Whether this ledger holds datasets identified by the older byte-level hashes
        (then a release also looks its data up by that hash)."""
        return self._legacy

    def _check_meta(self, connection: sqlite3.Connection) -> None:
        meta = dict(connection.execute("SELECT key, value FROM ledger_meta").fetchall())
        self._legacy = False
        if meta.get("identity") is None and meta.get("format") == _FORMAT:
            if connection.execute("SELECT count(*) FROM datasets").fetchone()[0]:
                self._legacy = True
            else:  # nothing recorded yet: from now on it is a content-digest ledger
                with self._transaction(connection, "upgrading it"):
                    connection.execute("INSERT OR IGNORE INTO ledger_meta VALUES "
                                       "('identity', ?)", (_IDENTITY,))
        if meta.get("format") != _FORMAT:
            raise LedgerError(f"{str(self.path)!r} is not an Epsilon Lab ledger: choose "
                              "another file.")
        if meta.get("schema") != str(SCHEMA_VERSION):
            raise LedgerError(f"The ledger {str(self.path)!r} has layout {meta.get('schema')}"
                              f"; this Epsilon Lab reads layout {SCHEMA_VERSION}. Use the "
                              "Epsilon Lab that wrote it.")
        self._files_from = int(meta.get("files_from", "1"))

    @contextmanager
    def _transaction(self, connection: sqlite3.Connection | None = None,
                     doing: str = "recording") -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT: the write lock is taken before anything is read, so no
        other writer can slip in between a check and a record."""
        con = connection or self._connection
        try:
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._fail(exc, doing) from None
        try:
            yield con
        except sqlite3.Error as exc:
            _rollback(con)
            raise self._fail(exc, doing) from None
        except BaseException:
            _rollback(con)
            raise
        try:
            con.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(con)
            raise self._fail(exc, doing) from None

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------

    def _read(self, sql: str, params: tuple = ()) -> list[tuple]:
        try:
            return self._connection.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._fail(exc, "reading it") from None

    @staticmethod
    def _in(hashes: tuple[str, ...]) -> str:
        return "(" + ", ".join("?" for _ in hashes) + ")"

    def _dataset_rows(self, con: sqlite3.Connection, dataset: DatasetIdentity
                      ) -> list[tuple[int, str]]:
        """(id, name) of every row of the ledger holding this content (by its digest or an
        alias), oldest first: one content is one dataset, whatever it was called."""
        hashes = dataset.hashes
        return [(int(r[0]), r[1]) for r in con.execute(
            f"SELECT id, name FROM datasets WHERE content_hash IN {self._in(hashes)} "
            "ORDER BY id", hashes).fetchall()]

    def _ensure_dataset(self, con: sqlite3.Connection, dataset: DatasetIdentity) -> list[int]:
        rows = self._dataset_rows(con, dataset)
        if rows:
            return [i for i, _ in rows]
        cursor = con.execute("INSERT INTO datasets (name, content_hash, first_seen) "
                             "VALUES (?, ?, ?)", (dataset.name, dataset.content_hash, _now()))
        return [int(cursor.lastrowid)]

    def _budget(self, con: sqlite3.Connection, ids: list[int]) -> BudgetEvent | None:
        events = self._budget_events(con, ids, latest=True)
        return events[-1] if events else None

    def _budget_events(self, con: sqlite3.Connection, ids: list[int], *,
                       latest: bool = False) -> list[BudgetEvent]:
        """The dataset's budget events, oldest first (``latest``: the last one only). An
        event written without a reason (none ever was, but a body is JSON) reads ""."""
        rows = con.execute("SELECT id, time, epsilon, delta, body, by_subject, by_email "
                           "FROM entries WHERE "
                           f"dataset_id IN {self._in(tuple(ids))} AND kind = 'budget' "
                           "ORDER BY id DESC" + (" LIMIT 1" if latest else ""),
                           tuple(ids)).fetchall()
        return [BudgetEvent(int(r[0]), r[1], float(r[2]), None if r[3] is None else float(r[3]),
                            str(json.loads(r[4]).get("reason") or ""), _shown(r[5], r[6]))
                for r in reversed(rows)]

    def _spent(self, con: sqlite3.Connection, ids: list[int]
               ) -> tuple[list[float], list[float]]:
        rows = con.execute("SELECT epsilon, delta FROM entries WHERE dataset_id IN "
                           f"{self._in(tuple(ids))} AND kind = 'release'", tuple(ids)).fetchall()
        return [float(r[0]) for r in rows], [float(r[1]) for r in rows]

    def status(self, dataset: DatasetIdentity) -> DatasetStatus:
        """The dataset's budget, what it has spent and how many releases it had, over every
        name its content is known by."""
        try:
            rows = self._dataset_rows(self._connection, dataset)
            if not rows:
                return DatasetStatus(dataset, None, 0.0, 0.0, 0)
            ids = [i for i, _ in rows]
            events = self._budget_events(self._connection, ids)
            releases = self._connection.execute(
                f"SELECT id, epsilon, delta FROM entries WHERE dataset_id IN "
                f"{self._in(tuple(ids))} AND kind = 'release'", tuple(ids)).fetchall()
        except sqlite3.Error as exc:
            raise self._fail(exc, "reading it") from None
        spent = [(int(r[0]), float(r[1]), float(r[2])) for r in releases]
        names = tuple(dict.fromkeys(name for _, name in rows))
        return DatasetStatus(dataset, events[-1] if events else None,
                             total_up([e for _, e, _ in spent] or [0.0]),
                             total_up([d for _, _, d in spent] or [0.0]), len(spent), names,
                             budget_changes(events, spent))

    def datasets(self) -> list[DatasetStatus]:
        """Every dataset the ledger knows (one per content), with its status."""
        rows = self._read("SELECT name, content_hash FROM datasets ORDER BY id")
        seen: dict[str, str] = {}
        for name, digest in rows:
            seen.setdefault(digest, name)
        return [self.status(DatasetIdentity(name, digest)) for digest, name in seen.items()]

    def releases(self, dataset: DatasetIdentity | None = None) -> list[ReleaseRecord]:
        """Recorded releases, oldest first (of one dataset, or of all)."""
        sql = ("SELECT e.id, d.name, d.content_hash, e.time, e.epsilon, e.delta, e.body, "
               "e.entry_hash, e.by_subject, e.by_email FROM entries e JOIN datasets d "
               "ON d.id = e.dataset_id WHERE e.kind = 'release'")
        params: tuple = ()
        if dataset is not None:
            sql += f" AND d.content_hash IN {self._in(dataset.hashes)}"
            params = dataset.hashes
        out = []
        for row in self._read(sql + " ORDER BY e.id", params):
            body = json.loads(row[6])
            out.append(ReleaseRecord(int(row[0]), DatasetIdentity(body.get("name", row[1]),
                                                                  row[2]), row[3],
                                     float(row[4]), float(row[5]), body["accounting"],
                                     body["values_hash"], body["plan"],
                                     body["implementation"], row[7],
                                     _shown(row[8], row[9])))
        return out

    # -- the files of releases ------------------------------------------------------------

    def _release_values_hash(self, con: sqlite3.Connection, release_id: int) -> str | None:
        """The values hash recorded for entry ``release_id`` (None: no such release)."""
        row = con.execute("SELECT body FROM entries WHERE id = ? AND kind = 'release'",
                          (int(release_id),)).fetchone()
        return None if row is None else str(json.loads(row[0])["values_hash"])

    def store_files(self, release_id: int, files: dict[str, bytes]) -> None:
        """Keep the files release ``release_id`` published, byte for byte, in one transaction
        (all of them or none).

        Refused (LedgerError, nothing stored) when the entry is not a release, its draw
        failed (nothing was published), it has files already (they are kept once, never
        replaced), a name is not a plain file name, or ``release.json`` is missing or does
        not hold the values recorded in the entry (its entry number, its values hash and the
        hash of the values it lists must all agree with the ledger's).
        """
        if not isinstance(release_id, int) or isinstance(release_id, bool):
            raise TypeError(f"release_id must be an entry number, got {release_id!r}")
        bad = [n for n in files if not (isinstance(n, str) and _FILE_NAME.fullmatch(n))]
        if bad or not all(isinstance(d, bytes) for d in files.values()):
            raise ValueError("files must map plain file names (letters, digits, '.', '_', "
                             "'-') to bytes")
        self._acting(Action.RELEASE, Action.RELEASE_WITHIN_ALLOTMENT)
        where = f"release #{release_id}"
        if "release.json" not in files:
            raise LedgerError(f"{where}'s files were not kept: they hold no release.json, so "
                              "they cannot be checked against its values hash")
        try:
            entry, claimed, held = _values_of_release_json(files["release.json"])
        except (ValueError, KeyError, TypeError) as exc:
            raise LedgerError(f"{where}'s files were not kept: its release.json cannot be "
                              f"read as a release record ({type(exc).__name__})") from None
        with self._transaction(doing="keeping a release's files") as con:
            recorded = self._release_values_hash(con, release_id)
            if recorded is None:
                raise LedgerError(f"{where}'s files were not kept: the ledger has no release "
                                  f"#{release_id}")
            if recorded == FAILED_DRAW:
                raise LedgerError(f"{where}'s files were not kept: its draw failed, nothing "
                                  "was published")
            if entry != release_id or claimed != recorded or held != recorded:
                raise LedgerError(
                    f"{where}'s files were not kept: their release.json is not this "
                    f"release's (entry {entry!r}; values hash recorded {recorded}, claimed "
                    f"{claimed}, of its values {held})")
            if con.execute("SELECT 1 FROM release_files WHERE release_id = ? LIMIT 1",
                           (release_id,)).fetchone():
                raise LedgerError(f"{where}'s files were not kept again: the ledger holds "
                                  "them already (kept once, never replaced)")
            con.executemany(
                "INSERT INTO release_files (release_id, name, sha256, bytes) VALUES "
                "(?, ?, ?, ?)", [(release_id, name, hashlib.sha256(data).hexdigest(), data)
                                 for name, data in files.items()])

    def release_files(self, release_id: int) -> dict[str, bytes]:
        """The files kept for release ``release_id``, name → bytes, in the order they were
        built ({} when none were kept: :meth:`why_no_files` says why).

        Raises LedgerError when a stored file does not match its recorded SHA-256 (the file
        was changed around the triggers): nothing is returned then.
        """
        rows = self._read("SELECT name, sha256, bytes FROM release_files WHERE release_id = ? "
                          "ORDER BY rowid", (int(release_id),))
        damaged = [name for name, digest, data in rows
                   if hashlib.sha256(data).hexdigest() != digest]
        if damaged:
            raise LedgerError(f"The ledger {str(self.path)!r} holds release #{release_id}'s "
                              f"files, but {', '.join(damaged)} do(es) not match their "
                              "recorded SHA-256: they were changed outside this program. "
                              "Restore the ledger from a backup.")
        return {name: bytes(data) for name, _, data in rows}

    def file_names(self) -> dict[int, tuple[str, ...]]:
        """The names of the files kept for each release that has any (no bytes read)."""
        out: dict[int, list[str]] = {}
        for release_id, name in self._read("SELECT release_id, name FROM release_files "
                                           "ORDER BY rowid"):
            out.setdefault(int(release_id), []).append(name)
        return {k: tuple(v) for k, v in out.items()}

    def why_no_files(self, record: ReleaseRecord) -> str:
        """Why ``record`` has no kept files, in words: its draw failed, it was recorded
        before releases kept their files, or storing them failed after it was recorded.
        (Only meaningful for a release with no files.)"""
        if record.values_hash == FAILED_DRAW:
            return NOT_KEPT_FAILED
        if record.id < self._files_from:
            return NOT_KEPT_BEFORE
        return NOT_KEPT_LOST

    def verify(self) -> list[str]:
        """Problems found by replaying the hash chain and the budgets, and by checking each
        kept file against its SHA-256 and each kept release.json against its entry's values
        hash (empty: consistent)."""
        problems = []
        prev = _GENESIS
        rows = self._read("SELECT e.id, e.kind, d.name, d.content_hash, e.time, e.epsilon, "
                          "e.delta, e.body, e.prev_hash, e.entry_hash, e.by_subject, "
                          "e.by_email FROM entries e JOIN datasets d ON d.id = e.dataset_id "
                          "ORDER BY e.id")
        budgets: dict[str, Fraction | None] = {}
        spent: dict[str, Fraction] = {}
        for (entry, kind, name, digest, time, eps, delta, body, prev_hash,
             entry_hash, by_subject, by_email) in rows:
            if prev_hash != prev:
                problems.append(f"entry {entry}: its link to the entry before is broken")
            if _entry_hash(prev_hash, kind, DatasetIdentity(name, digest), time, eps, delta,
                           body, (by_subject, by_email)) != entry_hash:
                problems.append(f"entry {entry}: its content does not match its hash")
            prev = entry_hash
            if kind == "budget":
                budgets[digest] = Fraction(eps)
            else:
                spent[digest] = spent.get(digest, Fraction(0)) + Fraction(eps)
                cap = budgets.get(digest)
                if cap is not None and spent[digest] > cap:
                    problems.append(f"entry {entry}: the dataset {name!r} is over its budget")
        recorded = {int(r[0]): json.loads(r[7]).get("values_hash")
                    for r in rows if r[1] == "release"}
        try:
            files = self._connection.execute("SELECT release_id, name, sha256, bytes FROM "
                                             "release_files ORDER BY rowid")
            for release_id, name, sha, data in files:
                if hashlib.sha256(data).hexdigest() != sha:
                    problems.append(f"entry {release_id}: its kept file {name} does not match "
                                    "its hash")
                elif name == "release.json":
                    try:
                        entry, claimed, held = _values_of_release_json(data)
                    except (ValueError, KeyError, TypeError):
                        entry = claimed = held = None
                    if entry != release_id or not (
                            claimed == held == recorded.get(release_id)):
                        problems.append(f"entry {release_id}: its kept release.json does not "
                                        "hold the values recorded in the entry")
        except sqlite3.Error as exc:
            raise self._fail(exc, "reading it") from None
        return problems

    # -- writing ----------------------------------------------------------------------------

    @staticmethod
    def _row(con: sqlite3.Connection, dataset_id: int) -> DatasetIdentity:
        """The identity a dataset row was first recorded under (what the chain hashes)."""
        name, digest = con.execute("SELECT name, content_hash FROM datasets WHERE id = ?",
                                   (dataset_id,)).fetchone()
        return DatasetIdentity(name, digest)

    def _append(self, con: sqlite3.Connection, kind: str, dataset_id: int,
                dataset: DatasetIdentity, epsilon: float, delta: float | None,
                body: dict[str, Any], by: tuple[str, str]) -> tuple[int, str, str]:
        row = con.execute("SELECT entry_hash FROM entries ORDER BY id DESC LIMIT 1").fetchone()
        prev = _GENESIS if row is None else row[0]
        time = _now()
        text = json.dumps(body, sort_keys=True, ensure_ascii=False, allow_nan=False)
        digest = _entry_hash(prev, kind, dataset, time, epsilon, delta, text, by)
        cursor = con.execute(
            "INSERT INTO entries (kind, dataset_id, time, epsilon, delta, body, prev_hash, "
            "entry_hash, by_subject, by_email) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, dataset_id, time, epsilon, delta, text, prev, digest, *by))
        return int(cursor.lastrowid), time, digest

    # -- who may write ------------------------------------------------------------------------

    @staticmethod
    def _acting(*actions: Action) -> tuple[Person, Action]:
        """The person acting now (:func:`release.access.current`) and the first of
        ``actions`` their role allows; LedgerDenied (saying who may do the first) when none."""
        # imported here: ``python -m release.roles`` imports the package, which imports this
        # module; a module-level import would load release.roles twice
        from release import roles

        try:
            person = acting_person()
            role = roles.role_of(person)
        except (AccessError, roles.RolesError) as exc:
            raise LedgerDenied(f"Nothing was recorded: who may write the ledger cannot be "
                               f"told ({exc})") from None
        for action in actions:
            if allowed(role, action):
                return person, action
        raise LedgerDenied(denied_message(actions[0]))

    def _allotment(self, con: sqlite3.Connection, ids: list[int], analyst: str
                   ) -> Allotment | None:
        """``analyst``'s latest allotment of the dataset, with what their releases spent."""
        row = con.execute(
            "SELECT id, analyst, time, epsilon, delta, reason, by_subject, by_email FROM "
            f"allotments WHERE dataset_id IN {self._in(tuple(ids))} AND analyst = ? "
            "ORDER BY id DESC LIMIT 1", (*ids, analyst)).fetchone()
        if row is None:
            return None
        spent = con.execute(
            "SELECT epsilon, delta FROM entries WHERE kind = 'release' AND dataset_id IN "
            f"{self._in(tuple(ids))} AND lower(by_email) = ?", (*ids, analyst)).fetchall()
        return Allotment(int(row[0]), row[1], row[2], float(row[3]),
                         None if row[4] is None else float(row[4]), row[5],
                         _shown(row[6], row[7]),
                         total_up([float(r[0]) for r in spent] or [0.0]),
                         total_up([float(r[1]) for r in spent] or [0.0]))

    def allotments(self, dataset: DatasetIdentity) -> list[Allotment]:
        """Every analyst's allotment of the dataset as it stands, by email."""
        try:
            ids = [i for i, _ in self._dataset_rows(self._connection, dataset)]
            if not ids:
                return []
            analysts = [r[0] for r in self._connection.execute(
                f"SELECT DISTINCT analyst FROM allotments WHERE dataset_id IN "
                f"{self._in(tuple(ids))} ORDER BY analyst", tuple(ids))]
            return [a for a in (self._allotment(self._connection, ids, x) for x in analysts)
                    if a is not None]
        except sqlite3.Error as exc:
            raise self._fail(exc, "reading it") from None

    def allotment(self, dataset: DatasetIdentity, analyst: str) -> Allotment | None:
        """``analyst``'s (email) allotment of the dataset, None when they have none."""
        try:
            ids = [i for i, _ in self._dataset_rows(self._connection, dataset)]
            return self._allotment(self._connection, ids, analyst.strip().lower()) if ids \
                else None
        except sqlite3.Error as exc:
            raise self._fail(exc, "reading it") from None

    def set_allotment(self, dataset: DatasetIdentity, analyst: str, epsilon: float, *,
                      delta: float | None = None, reason: str = "allotted") -> Allotment:
        """Give ``analyst`` (their email) ``epsilon`` (and at most ``delta``) of the dataset's
        budget, as an event of its own (the latest one holds; 0 takes it back). Their
        releases count against it and against the dataset's budget. A steward's only."""
        by = recorded_as(self._acting(Action.ALLOT)[0])
        email = str(analyst).strip().lower()
        if "@" not in email or any(c.isspace() for c in email):
            raise ValueError("analyst must be an email address, such as name@example.org")
        if not (isinstance(epsilon, int | float) and 0 <= epsilon < float("inf")):
            raise ValueError(f"epsilon must be a finite number ≥ 0, got {epsilon!r}")
        if delta is not None and not 0 <= delta < 1:
            raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
        reason = " ".join(str(reason).split())[:REASON_LIMIT] or "allotted"
        with self._transaction(doing="giving an allotment") as con:
            ids = self._ensure_dataset(con, dataset)
            con.execute("INSERT INTO allotments (dataset_id, analyst, time, epsilon, delta, "
                        "reason, by_subject, by_email) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (ids[0], email, _now(), float(epsilon), delta, reason, *by))
            return self._allotment(con, ids, email)

    def check_may_release(self, dataset: DatasetIdentity | None, epsilon: float,
                          delta: float) -> None:
        """LedgerDenied unless the person acting may release ``epsilon``/``delta`` on the
        dataset: a steward always, an analyst within what is left of their allotment (a
        refusal made on public facts: roles, allotments, spends). Called before any noise is
        drawn; :meth:`record_release` checks again in its transaction. ``dataset`` None:
        before the data is read (its identity unknown yet), only whether the person may
        release at all (a viewer may not; an analyst's allotment is checked later)."""
        person, action = self._acting(Action.RELEASE, Action.RELEASE_WITHIN_ALLOTMENT)
        if action is Action.RELEASE or dataset is None:
            return
        try:
            ids = [i for i, _ in self._dataset_rows(self._connection, dataset)]
            _check_allotment(self._allotment(self._connection, ids,
                                             person.email.strip().lower())
                             if ids and person.email else None, epsilon, delta)
        except sqlite3.Error as exc:
            raise self._fail(exc, "reading it") from None

    def set_budget(self, dataset: DatasetIdentity, epsilon: float, *,
                   delta: float | None = None, reason: str = "set",
                   only_if_new: bool = False) -> BudgetEvent | None:
        """Record the dataset's total budget (an event of its own; the latest one holds).

        With ``only_if_new`` nothing happens (None is returned) when the dataset already has
        a budget: the command line's ``--budget`` sets it the first time only. ``reason``
        (one line, at most :data:`REASON_LIMIT` characters) is published with the event on
        every later release's card and report: the steward's words, never the data's.
        """
        if not (isinstance(epsilon, int | float) and 0 < epsilon < float("inf")):
            raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
        if delta is not None and not 0 <= delta < 1:
            raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
        if not isinstance(reason, str):
            raise TypeError(f"reason must be text, got {type(reason).__name__}")
        reason = " ".join(reason.split())
        if not reason:
            raise ValueError("reason must say why the budget is set or changed (it is "
                             "published on every later release's card)")
        if len(reason) > REASON_LIMIT:
            raise ValueError(f"reason must be at most {REASON_LIMIT} characters, got "
                             f"{len(reason)}")
        by = recorded_as(self._acting(Action.SET_BUDGET)[0])
        with self._transaction(doing="setting a budget") as con:
            ids = self._ensure_dataset(con, dataset)
            if only_if_new and self._budget(con, ids) is not None:
                return None
            entry, time, _ = self._append(con, "budget", ids[0], self._row(con, ids[0]),
                                          float(epsilon), delta,
                                          {"reason": reason, "name": dataset.name}, by)
        return BudgetEvent(entry, time, float(epsilon), delta, reason, _shown(*by))

    def record_release(self, dataset: DatasetIdentity, *, epsilon: float, delta: float,
                       accounting: str, values_hash: str, plan_json: str,
                       implementation: str, check_budget: bool = True) -> ReleaseRecord:
        """Check the dataset's budget and record the release, in one transaction.

        ``check_budget=False`` records a spend that has happened whatever the budget says
        (a release whose draw failed after noise was drawn).

        Raises
        ------
        OverBudget
            The release would take the dataset past its budget (nothing recorded).
        LedgerError
            The ledger cannot be written (nothing recorded).
        """
        body = {"accounting": accounting, "values_hash": values_hash, "plan": plan_json,
                "implementation": implementation, "name": dataset.name}
        person, action = self._acting(Action.RELEASE, Action.RELEASE_WITHIN_ALLOTMENT)
        by = recorded_as(person)
        with self._transaction(doing="recording a release") as con:
            ids = self._ensure_dataset(con, dataset)
            budget = self._budget(con, ids)
            epsilons, deltas = self._spent(con, ids)
            known = self._row(con, ids[0])
            if check_budget:
                if action is Action.RELEASE_WITHIN_ALLOTMENT:   # the analyst's own share
                    _check_allotment(self._allotment(
                        con, ids, person.email.strip().lower()) if person.email else None,
                        epsilon, delta)
                _check_budget(dataset, budget, epsilons, deltas, epsilon, delta,
                              known_as=known.name)
            entry, time, digest = self._append(con, "release", ids[0], known,
                                               float(epsilon), float(delta), body, by)
        return ReleaseRecord(entry, dataset, time, float(epsilon), float(delta), accounting,
                             values_hash, plan_json, implementation, digest, _shown(*by))


def _rollback(con: sqlite3.Connection) -> None:
    """Undo the open transaction, if any (a failed COMMIT may have ended it already)."""
    if con.in_transaction:
        try:
            con.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _check_allotment(allotment: Allotment | None, epsilon: float, delta: float) -> None:
    """LedgerDenied when an analyst's release would take them past their allotment, exactly
    (or they have none)."""
    if allotment is None:
        raise LedgerDenied("You have no allotment of this dataset's budget: ask a steward for "
                           "one, or submit the plan for a steward to release. Nothing was "
                           "recorded.")
    if Fraction(allotment.spent_epsilon) + Fraction(epsilon) > Fraction(allotment.epsilon):
        raise LedgerDenied(
            f"Beyond your allotment: it has {left_in_words(allotment.remaining_epsilon)} of "
            f"{allotment.epsilon:g} and this release needs ε = {epsilon:.6g}. Nothing was "
            "recorded: lower the plan's budget, ask a steward for more, or submit the plan "
            "for a steward to release.")
    if allotment.delta is not None and (Fraction(allotment.spent_delta) + Fraction(delta)
                                        > Fraction(allotment.delta)):
        raise LedgerDenied(
            f"Beyond your allotment: it has "
            f"{left_in_words(allotment.remaining_delta, 'δ', digits=3)} of "
            f"{allotment.delta:g} and this release needs δ = {delta:.3g}. Nothing was "
            "recorded.")


def _check_budget(dataset: DatasetIdentity, budget: BudgetEvent | None,
                  epsilons: list[float], deltas: list[float], epsilon: float,
                  delta: float, *, known_as: str | None = None) -> None:
    """OverBudget when the release would take the spent ε (or δ) past the budget, exactly."""
    if budget is None:
        return
    name = repr(dataset.name) + ("" if known_as in (None, dataset.name) else
                                 f" (the same data as {known_as!r} in the ledger)")
    spent = sum(map(Fraction, epsilons), Fraction(0))
    if spent + Fraction(epsilon) > Fraction(budget.epsilon):
        left = standing(float(Fraction(budget.epsilon) - spent), budget.epsilon)
        raise OverBudget(
            f"over budget: {name} {left} ({len(epsilons)} release(s) so far) and this "
            "release needs "
            f"ε = {epsilon:.6g}; nothing was recorded. Lower the plan's budget, or change the "
            "dataset's budget (a recorded event).")
    if budget.delta is not None:
        spent_delta = sum(map(Fraction, deltas), Fraction(0))
        if spent_delta + Fraction(delta) > Fraction(budget.delta):
            left = standing(float(Fraction(budget.delta) - spent_delta), budget.delta, "δ",
                            digits=3)
            raise OverBudget(f"over budget: {name} {left} and this release needs δ = "
                             f"{delta:.3g}; nothing was recorded.")
