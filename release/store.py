"""A small SQLite file on the server (the dataset declarations, later others): where it lives,
how it is opened, checked and written, and what its errors say.

Every store lives in the ledger's folder unless its own environment variable names a file,
never inside the repository; is created with its tables on first use; is checked once per
process (SQLite's quick check, and that it is this store's file and no other database); and
is written in ``BEGIN IMMEDIATE`` transactions, so two processes never interleave a read and
the write that depends on it. Old layouts are migrated in place by the store's ``migrate``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from release.ledger import LedgerError, ledger_path

__all__ = ["StoreError", "SqliteStore", "store_path"]

_REPOSITORY = Path(__file__).resolve().parent.parent


class StoreError(RuntimeError):
    """The store cannot be used (corrupt, locked, not writable, not this store's file); the
    message says what is wrong and what to do. Nothing was changed."""


def store_path(path: str | os.PathLike | None, env: str, file_name: str, what: str) -> Path:
    """``path``, else the environment variable ``env``, else ``file_name`` beside the ledger;
    never inside the repository (a store committed by mistake would publish a steward's
    work)."""
    if path is None and os.environ.get(env, "").strip():
        path = os.environ[env]
    if path is None:
        try:
            path = ledger_path().parent / file_name
        except LedgerError as exc:
            raise StoreError(f"{what} are not saved: {exc}") from None
    resolved = Path(path).expanduser().absolute()
    try:
        resolved.resolve().relative_to(_REPOSITORY)
    except ValueError:
        return resolved
    raise StoreError(f"The file {str(resolved)!r} for {what} would be inside the repository: "
                     f"put it elsewhere (set {env}).")


class SqliteStore:
    """A store's file: subclasses set ``FORMAT`` (written in its meta table), ``TABLES`` (the
    tables that make it this store), ``SCHEMA`` (statements creating them), ``ENV`` and
    ``WHAT`` (for messages), and may override :meth:`migrate`."""

    FORMAT = ""
    META = "meta"
    TABLES: frozenset[str] = frozenset()
    SCHEMA: Sequence[str] = ()
    ENV = ""
    WHAT = "the store"
    _checked: set[tuple[str, Path]] = set()   # (format, file) checked once per process

    def __init__(self, path: Path, *, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = float(timeout)

    def _fail(self, exc: BaseException, doing: str) -> StoreError:
        text, where = str(exc), repr(str(self.path))
        if "locked" in text:
            return StoreError(f"{self.WHAT} {where} is locked by another process (waited "
                              f"{self.timeout:g} s while {doing}).")
        if isinstance(exc, sqlite3.OperationalError) and ("readonly" in text
                                                          or "unable to open" in text):
            return StoreError(f"{self.WHAT} {where} cannot be written or opened ({text}) "
                              f"while {doing}: make it and its folder writable, or set "
                              f"{self.ENV} elsewhere.")
        if isinstance(exc, sqlite3.DatabaseError):
            return StoreError(f"{self.WHAT} {where} is damaged or is not a SQLite file "
                              f"({text}) while {doing}. It was left untouched: restore it, "
                              f"or set {self.ENV} to another file.")
        return StoreError(f"{self.WHAT} {where} cannot be reached ({exc}) while {doing}.")

    @contextmanager
    def connection(self, doing: str, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection for one read, or (``write``) one ``BEGIN IMMEDIATE`` transaction that
        commits when the block ends and rolls back if it raises."""
        key = (self.FORMAT, self.path)
        if not self.path.exists():   # removed since it was checked: created afresh
            self._checked.discard(key)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(self.path), timeout=self.timeout,
                                         isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise self._fail(exc, doing) from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if key not in self._checked:
                self._check(connection)
                self._checked.add(key)
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
        if connection.execute("PRAGMA quick_check").fetchall() != [("ok",)]:
            raise StoreError(f"{self.WHAT} {str(self.path)!r} fails SQLite's integrity "
                             f"check: restore it, or set {self.ENV} to another file.")
        names = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        names.discard("sqlite_sequence")
        ours = names and self.META in names and connection.execute(
            f"SELECT value FROM {self.META} WHERE key = 'format'").fetchone() == (self.FORMAT,)
        if names and not ours:
            raise StoreError(f"{str(self.path)!r} is a SQLite database of something else, "
                             f"not {self.WHAT}: set {self.ENV} to another file.")
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in self.SCHEMA:
                connection.execute(statement)
            connection.execute(f"INSERT OR IGNORE INTO {self.META} VALUES ('format', ?)",
                               (self.FORMAT,))
            self.migrate(connection)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def migrate(self, connection: sqlite3.Connection) -> None:
        """Bring an older layout up to date, inside the checking transaction (default:
        nothing to do)."""

    def read(self, doing: str, sql: str, params: tuple = (),
             row: Callable[[tuple], object] | None = None) -> list:
        with self.connection(doing) as c:
            rows = c.execute(sql, params).fetchall()
        return rows if row is None else [row(r) for r in rows]
