"""Who may do what: the roles (steward, analyst, viewer), the actions they allow, and the person
acting in this context (the signed-in user, the single local user, or the server's operator).

Sign-in is off unless ``EPSILON_LAB_AUTH=oidc``: then the one user of the app may do everything,
as before. The roles of signed-in people are kept by :mod:`release.roles`; this module knows no
file, so every layer that writes (the ledger, the stores) can ask it.
"""

from __future__ import annotations

import contextvars
import enum
import getpass
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["AUTH_ENV", "Action", "AccessDenied", "AccessError", "Person", "Role", "LOCAL",
           "OPERATOR", "allowed", "bind", "current", "denied_message", "acting_as",
           "recorded_as", "resolve_with", "sign_in_on"]

#: The environment variable that turns sign-in on (``oidc``) or leaves it off (unset, ``off``).
AUTH_ENV = "EPSILON_LAB_AUTH"
_ON, _OFF = "oidc", ("", "off")


class AccessError(RuntimeError):
    """Sign-in is misconfigured; the message says what to set. Nothing is allowed meanwhile."""


class AccessDenied(PermissionError):
    """The person acting may not do this; the message says who may."""


class Role(enum.StrEnum):
    STEWARD = "steward"
    ANALYST = "analyst"
    VIEWER = "viewer"


class Action(enum.StrEnum):
    """What a write or a page needs; :data:`_WHO_MAY` says in words who may do it."""

    EXPLORE = "explore"                    # load data, simulate, see the analysis pages
    SAVE_PLAN = "save_plan"
    KEEP_DATA = "keep_data"                # keep an upload on the server
    DECLARE = "declare"                    # a dataset's schema and privacy unit, on the server
    SET_BUDGET = "set_budget"
    ALLOT = "allot"                        # give an analyst part of a dataset's budget
    RELEASE = "release"                    # release any plan
    RELEASE_WITHIN_ALLOTMENT = "release_within_allotment"
    SUBMIT_PLAN = "submit_plan"            # for a steward to release
    VIEW_RELEASES = "view_releases"
    MANAGE_ROLES = "manage_roles"


_ALLOWED: dict[Role, frozenset[Action]] = {
    Role.STEWARD: frozenset(Action),
    Role.ANALYST: frozenset({Action.EXPLORE, Action.SAVE_PLAN, Action.RELEASE_WITHIN_ALLOTMENT,
                            Action.SUBMIT_PLAN, Action.VIEW_RELEASES}),
    Role.VIEWER: frozenset({Action.VIEW_RELEASES}),
}

_WHO_MAY = {
    Action.EXPLORE: "only a steward or an analyst can load data and simulate",
    Action.SAVE_PLAN: "only a steward or an analyst can save a plan",
    Action.KEEP_DATA: "only a steward can keep data on the server",
    Action.DECLARE: "only a steward can declare a dataset's schema and privacy unit",
    Action.SET_BUDGET: "only a steward can change the budget",
    Action.ALLOT: "only a steward can give an analyst an allotment",
    Action.RELEASE: "only a steward can release a plan beyond an allotment",
    Action.RELEASE_WITHIN_ALLOTMENT: "only a steward or an analyst with an allotment can "
                                     "release",
    Action.SUBMIT_PLAN: "only a steward or an analyst can submit a plan",
    Action.VIEW_RELEASES: "only a steward, an analyst or a viewer can see the releases",
    Action.MANAGE_ROLES: "only a steward can manage people and roles",
}


def allowed(role: Role | None, action: Action) -> bool:
    """Whether ``role`` allows ``action`` (no role allows nothing)."""
    return role is not None and action in _ALLOWED[Role(role)]


def denied_message(action: Action) -> str:
    """The sentence a refusal shows: who may do ``action`` ("Only a steward can …")."""
    words = _WHO_MAY[Action(action)]
    return words[0].upper() + words[1:] + "."


def sign_in_on() -> bool:
    """Whether sign-in is on (``EPSILON_LAB_AUTH=oidc``). Any value but ``oidc``, ``off`` or
    none is refused rather than read as off: a typo must not open the app to everyone."""
    value = os.environ.get(AUTH_ENV, "").strip().lower()
    if value == _ON:
        return True
    if value in _OFF:
        return False
    raise AccessError(f"{AUTH_ENV} must be 'oidc' (sign-in on) or 'off'; it is set to something "
                      "else. Until it is corrected nobody can use the app.")


@dataclass(frozen=True)
class Person:
    """Who acts: as the OpenID Connect provider names them (``issuer`` and ``subject``: the
    provider's stable id; ``email`` as the provider gave it), or one of the two who need no
    sign-in (:data:`LOCAL`, :data:`OPERATOR`). ``email_verified`` is the provider's claim, None
    when it sends none."""

    issuer: str
    subject: str
    email: str = ""
    name: str = ""
    email_verified: bool | None = None

    @property
    def shown(self) -> str:
        """How the person is named on a page: name and email, or whichever there is."""
        if self.name and self.email and self.name != self.email:
            return f"{self.name} ({self.email})"
        return self.name or self.email or self.subject


#: The single user of the app while sign-in is off (a steward then, nobody once it is on).
LOCAL = Person(issuer="local", subject="local user", name="Local user")
#: Whoever runs the command line on the server: a steward (they hold the files anyway).
OPERATOR = Person(issuer="operator", subject="server operator", name="Server operator")

_acting: contextvars.ContextVar[Person | None] = contextvars.ContextVar("epsilon_lab_acting",
                                                                         default=None)


def bind(person: Person | None) -> None:
    """Make ``person`` the one acting in this context (the app does it at the start of each
    script run, before anything is drawn or written)."""
    _acting.set(person)


@contextmanager
def acting_as(person: Person | None) -> Iterator[None]:
    """``person`` acts inside the block (the command line, tests); the one before after it."""
    token = _acting.set(person)
    try:
        yield
    finally:
        _acting.reset(token)


_resolver: Callable[[], Person | None] | None = None


def resolve_with(resolver: Callable[[], Person | None] | None) -> None:
    """Who acts when nobody is bound, while sign-in is on: the app registers a function that
    reads the signed-in user of the session running now (a widget's callback runs before the
    gate binds anyone). It must return None outside a session; the command line registers
    nothing and binds :data:`OPERATOR`."""
    global _resolver
    _resolver = resolver


def current() -> Person | None:
    """The person acting here: the one bound, else :data:`LOCAL` while sign-in is off, else
    the session's signed-in user (:func:`resolve_with`), else nobody (None: allowed nothing).
    A thread that was not handed a person and runs no session acts as nobody."""
    person = _acting.get()
    if person is not None:
        return person
    if not sign_in_on():
        return LOCAL
    return None if _resolver is None else _resolver()


def recorded_as(person: Person) -> tuple[str, str]:
    """(subject, email) a store records for who made an event: the provider's subject and
    email for a signed-in person, ("local", "") for the single user while sign-in is off,
    ("command line (user@host)", "") for the operator. Never published in a release's files."""
    if person == LOCAL:
        return "local", ""
    if person == OPERATOR:
        try:
            user = getpass.getuser()
        except (OSError, KeyError):   # no user name in this environment: the host still says
            user = "unknown"
        return f"command line ({user}@{socket.gethostname()})", ""
    return person.subject, person.email
