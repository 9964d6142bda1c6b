"""The roles store: who is a steward, an analyst or a viewer, in a SQLite file on the server.

Path: ``EPSILON_LAB_ROLES``, else ``roles.sqlite`` beside the ledger; never inside the
repository. A person is added by email; at their first sign-in the provider's subject is
recorded with the email, and from then on the subject decides (an email given later to someone
else at the provider does not carry the role). Every change is made by someone who may
(:data:`release.access.Action.MANAGE_ROLES`) and never leaves no steward.

Command line (the first steward is made here): ``python -m release.roles add-steward EMAIL``,
``add EMAIL ROLE``, ``set-role EMAIL ROLE``, ``remove EMAIL``, ``list``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from release.access import (
    LOCAL,
    OPERATOR,
    AccessDenied,
    AccessError,
    Action,
    Person,
    Role,
    allowed,
    current,
    denied_message,
    recorded_as,
    sign_in_on,
)
from release.paths import LedgerError, ledger_path

__all__ = ["ROLES_ENV", "Member", "Roles", "RolesError", "check", "may", "require", "role_of",
           "who", "roles_path", "main"]

#: The environment variable naming the roles file.
ROLES_ENV = "EPSILON_LAB_ROLES"
#: The longest email address accepted (RFC 5321's path limit).
EMAIL_LIMIT = 254
_REPOSITORY = Path(__file__).resolve().parent.parent
_FORMAT = "epsilon-lab-roles"
_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS roles_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS people (
        email TEXT PRIMARY KEY,
        role TEXT NOT NULL CHECK (role IN ('steward', 'analyst', 'viewer')),
        issuer TEXT, subject TEXT,
        added TEXT NOT NULL, changed TEXT NOT NULL, changed_by TEXT NOT NULL,
        UNIQUE (issuer, subject))""",
]


class RolesError(RuntimeError):
    """A change the store refuses (unknown role, bad email, the last steward) or a file it
    cannot use; the message says what to do. Nothing was changed."""


@dataclass(frozen=True)
class Member:
    """A person's entry: their role, and whether they have signed in (``subject`` recorded)."""

    email: str
    role: Role
    issuer: str | None
    subject: str | None
    added: str
    changed: str
    changed_by: str

    @property
    def signed_in(self) -> bool:
        return self.subject is not None


def roles_path(path: str | os.PathLike | None = None) -> Path:
    """``path``, else ``EPSILON_LAB_ROLES``, else ``roles.sqlite`` beside the ledger; never
    inside the repository."""
    if path is None and os.environ.get(ROLES_ENV, "").strip():
        path = os.environ[ROLES_ENV]
    if path is None:
        try:
            path = ledger_path().parent / "roles.sqlite"
        except LedgerError as exc:
            raise RolesError(f"Roles cannot be kept: {exc}") from None
    resolved = Path(path).expanduser().absolute()
    try:
        resolved.resolve().relative_to(_REPOSITORY)
    except ValueError:
        return resolved
    raise RolesError(f"The roles file {str(resolved)!r} would be inside the repository: put it "
                     f"elsewhere (set {ROLES_ENV}).")


def _email(text: str) -> str:
    """An email address as the store keys it (trimmed, lower case), or RolesError."""
    email = str(text).strip().lower()
    local, at, domain = email.partition("@")
    if (not at or not local or not domain or "@" in domain or len(email) > EMAIL_LIMIT
            or any(c.isspace() for c in email)):
        raise RolesError("Give one email address, such as name@example.org.")
    return email


def _role(text: str | Role) -> Role:
    try:
        return Role(str(text).strip().lower())
    except ValueError:
        raise RolesError("Unknown role: choose steward, analyst or viewer.") from None


def _who(person: Person) -> str:
    return person.email or person.name or person.subject


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Roles:
    """The roles file, open (``with Roles(path) as roles: ...``). Opening creates it."""

    def __init__(self, path: str | os.PathLike | None = None, *, timeout: float = 30.0):
        self.path = roles_path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            found = self._format()
            if found is None and not self._tables():   # a new file: lay it out once
                with self._transaction():
                    for statement in _SCHEMA:
                        self._db.execute(statement)
                    self._db.execute("INSERT OR IGNORE INTO roles_meta VALUES ('format', ?)",
                                     (_FORMAT,))
                found = self._format()
        except (OSError, sqlite3.Error) as exc:
            if hasattr(self, "_db"):
                self._db.close()
            raise RolesError(f"The roles file {str(self.path)!r} cannot be used "
                             f"({type(exc).__name__}): check that its folder is writable and "
                             f"that it is a roles file, or set {ROLES_ENV}.") from None
        if found != _FORMAT:
            self._db.close()
            raise RolesError(f"{str(self.path)!r} is not a roles file: set {ROLES_ENV} to "
                             "another path.")

    def _tables(self) -> set[str]:
        return {r[0] for r in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _format(self) -> str | None:
        """The file's format mark; None for a new file or another kind of file (the ledger:
        never touched)."""
        if "roles_meta" not in self._tables():
            return None
        row = self._db.execute("SELECT value FROM roles_meta WHERE key = 'format'").fetchone()
        return None if row is None else row[0]

    def __enter__(self) -> Roles:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write at a time across processes (``BEGIN IMMEDIATE``): a check and the change
        it allows are one step (two stewards demoting each other leave one)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # Reading ---------------------------------------------------------------------------------

    def members(self) -> tuple[Member, ...]:
        """Everyone with a role, stewards first, then by email."""
        rows = self._db.execute(
            "SELECT email, role, issuer, subject, added, changed, changed_by FROM people "
            "ORDER BY CASE role WHEN 'steward' THEN 0 WHEN 'analyst' THEN 1 ELSE 2 END, email"
        ).fetchall()
        return tuple(Member(r[0], Role(r[1]), *r[2:]) for r in rows)

    def _entry_of(self, person: Person) -> tuple[str, str, str | None] | None:
        """(email, role, subject) of the entry that is ``person``: the one with their subject,
        else the one with their email that no one has signed in as yet (an email the provider
        says is unverified matches nothing)."""
        row = self._db.execute(
            "SELECT email, role, subject FROM people WHERE issuer = ? AND subject = ?",
            (person.issuer, person.subject)).fetchone()
        if row is not None or not person.email or person.email_verified is False:
            return row
        try:
            email = _email(person.email)
        except RolesError:
            return None
        return self._db.execute(
            "SELECT email, role, subject FROM people WHERE email = ? AND subject IS NULL",
            (email,)).fetchone()

    def role_of(self, person: Person) -> Role | None:
        """The role of a signed-in ``person``, None if they have none."""
        entry = self._entry_of(person)
        return None if entry is None else Role(entry[1])

    # Writing ---------------------------------------------------------------------------------

    def _require(self, by: Person) -> None:
        if _role_of(by, self) is not Role.STEWARD:
            raise AccessDenied(denied_message(Action.MANAGE_ROLES))

    def _stewards(self) -> int:
        return self._db.execute("SELECT count(*) FROM people WHERE role = 'steward'").fetchone()[0]

    def recognise(self, person: Person) -> None:
        """Record the provider's subject on the entry a signed-in ``person`` matched by email
        (their first sign-in): from then on the subject names them."""
        with self._transaction():
            entry = self._entry_of(person)
            if entry is not None and entry[2] is None:
                self._db.execute(
                    "UPDATE people SET issuer = ?, subject = ? WHERE email = ? AND subject IS NULL",
                    (person.issuer, person.subject, entry[0]))

    def add(self, email: str, role: str | Role, *, by: Person) -> Member:
        """Give ``email`` a role; refused if they have one already (change it instead)."""
        email, role = _email(email), _role(role)
        with self._transaction():
            self._require(by)
            if self._db.execute("SELECT 1 FROM people WHERE email = ?", (email,)).fetchone():
                raise RolesError(f"{email} has a role already: change it instead.")
            now = _now()
            self._db.execute("INSERT INTO people VALUES (?, ?, NULL, NULL, ?, ?, ?)",
                             (email, role.value, now, now, _who(by)))
        return self._member(email)

    def change(self, email: str, role: str | Role, *, by: Person) -> Member:
        """Change the role of ``email``; the last steward stays a steward."""
        email, role = _email(email), _role(role)
        with self._transaction():
            self._require(by)
            before = self._current_role(email)
            if before is Role.STEWARD and role is not Role.STEWARD and self._stewards() == 1:
                raise RolesError(f"{email} is the last steward: make someone else a steward "
                                 "first.")
            self._db.execute("UPDATE people SET role = ?, changed = ?, changed_by = ? "
                             "WHERE email = ?", (role.value, _now(), _who(by), email))
        return self._member(email)

    def remove(self, email: str, *, by: Person) -> None:
        """Take away the role of ``email``; the last steward cannot be removed."""
        email = _email(email)
        with self._transaction():
            self._require(by)
            if self._current_role(email) is Role.STEWARD and self._stewards() == 1:
                raise RolesError(f"{email} is the last steward and cannot be removed: make "
                                 "someone else a steward first.")
            self._db.execute("DELETE FROM people WHERE email = ?", (email,))

    def _current_role(self, email: str) -> Role:
        row = self._db.execute("SELECT role FROM people WHERE email = ?", (email,)).fetchone()
        if row is None:
            raise RolesError(f"{email} has no role: add them first.")
        return Role(row[0])

    def _member(self, email: str) -> Member:
        return next(m for m in self.members() if m.email == email)


def _role_of(person: Person | None, store: Roles | None) -> Role | None:
    if person is None:
        return None
    if person == OPERATOR:
        return Role.STEWARD
    if person == LOCAL:   # the single user while sign-in is off; nobody once it is on
        return None if sign_in_on() else Role.STEWARD
    if person.issuer in (LOCAL.issuer, OPERATOR.issuer) or store is None:
        return None
    return store.role_of(person)


def role_of(person: Person | None, path: str | os.PathLike | None = None) -> Role | None:
    """The role of ``person``: a steward for the local user while sign-in is off and for the
    operator; for a signed-in person what the store says (None: no role, or no store yet)."""
    if person is None or person in (LOCAL, OPERATOR):
        return _role_of(person, None)
    where = roles_path(path)
    if not where.exists():
        return None
    with Roles(where) as store:
        return _role_of(person, store)


def may(person: Person | None, action: Action, path: str | os.PathLike | None = None) -> bool:
    """Whether ``person`` may do ``action`` (the role read now, from the store)."""
    return allowed(role_of(person, path), action)


def require(person: Person | None, action: Action,
            path: str | os.PathLike | None = None) -> None:
    """Raise :class:`~release.access.AccessDenied` (saying who may) unless ``person`` may."""
    if not may(person, action, path):
        raise AccessDenied(denied_message(action))


def check(action: Action, denied: type[AccessDenied] = AccessDenied) -> Person:
    """The person acting now (:func:`release.access.current`) if their role allows
    ``action``; else ``denied`` (an :class:`~release.access.AccessDenied`, usually also the
    store's own error, so the pages show it as they show the store's other refusals) saying
    who may. What every function that writes a store calls first."""
    try:
        person = current()
        role = role_of(person)
    except (AccessError, RolesError) as exc:
        raise denied(f"Nothing was saved: who may do this cannot be told ({exc})") from None
    if not allowed(role, action):
        raise denied(denied_message(action))
    return person


def who(person: Person) -> str:
    """How a store's ``who`` column names ``person``: "email (subject)" for a signed-in person
    (the provider's stable id with the address it gave), "local" while sign-in is off,
    "command line (user@host)" for the operator."""
    subject, email = recorded_as(person)
    return f"{email} ({subject})" if email else subject


# Command line --------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m release.roles",
        description="Who may do what once sign-in is on (EPSILON_LAB_AUTH=oidc): stewards, "
                    f"analysts and viewers, by email. The file: {ROLES_ENV}, else roles.sqlite "
                    "beside the ledger.")
    parser.add_argument("--roles", help=f"the roles file (default: {ROLES_ENV} or beside the "
                                        "ledger)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="everyone with a role")
    one = commands.add_parser("add-steward", help="make EMAIL a steward (the first one too)")
    one.add_argument("email")
    for name, text in (("add", "give EMAIL a role"), ("set-role", "change the role of EMAIL")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("email")
        sub.add_argument("role", help="steward, analyst or viewer")
    gone = commands.add_parser("remove", help="take away the role of EMAIL")
    gone.add_argument("email")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; 0 on success, 1 with a message on stderr when it is refused."""
    args = _parser().parse_args(argv)
    try:
        with Roles(args.roles) as store:
            if args.command == "list":
                for m in store.members():
                    state = "has signed in" if m.signed_in else "has not signed in yet"
                    print(f"{m.role.value:8}  {m.email}  ({state}; changed {m.changed} by "
                          f"{m.changed_by})")
                if not store.members():
                    print("Nobody has a role yet: add the first steward with "
                          "`python -m release.roles add-steward EMAIL`.")
            elif args.command == "add-steward":
                store.add(args.email, Role.STEWARD, by=OPERATOR)
            elif args.command == "add":
                store.add(args.email, args.role, by=OPERATOR)
            elif args.command == "set-role":
                store.change(args.email, args.role, by=OPERATOR)
            elif args.command == "remove":
                store.remove(args.email, by=OPERATOR)
            where = store.path
    except (RolesError, AccessDenied) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.command != "list":
        print(f"Done ({where}).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
