"""Sign-in: the gate each script run passes before anything is drawn (Streamlit's ``st.login``
and ``st.user`` over the organisation's OpenID Connect provider), the signed-in person's box in
the sidebar, and the pages each role sees.

Off unless ``EPSILON_LAB_AUTH=oidc`` (:mod:`release.access`): then the gate lets the single
local user through as a steward and draws nothing. On, a session that is not signed in, or
signed in without a role, sees one short page and the run stops there: no dataset, no page,
no sidebar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import streamlit as st

from dashboard.text import plain
from release import access, roles
from release.access import LOCAL, AccessError, Action, Person, Role

__all__ = ["Visitor", "acting_person", "gate", "person_of", "role_now", "visible_pages",
           "REQUIRED_SETTINGS"]

#: What the ``[auth]`` section of ``.streamlit/secrets.toml`` must hold (README, Deployment).
REQUIRED_SETTINGS = ("redirect_uri", "cookie_secret", "client_id", "client_secret",
                     "server_metadata_url")
#: What each page needs, by its URL path; every other page needs :data:`Action.EXPLORE`.
PAGE_NEEDS: dict[str, Action | None] = {
    "releases": Action.VIEW_RELEASES, "glossary": None, "people": Action.MANAGE_ROLES}
#: Pages listed only while sign-in is on (with it off the single user has no one to manage).
SIGNED_IN_ONLY = ("people",)
_RECOGNISED = "signin_recognised"


@dataclass(frozen=True)
class Visitor:
    """Who this run is for, and their role."""

    person: Person
    role: Role

    @property
    def signed_in(self) -> bool:
        return self.person != LOCAL

    def may(self, action: Action) -> bool:
        return access.allowed(self.role, action)


def person_of(user: Mapping[str, Any]) -> Person:
    """The person ``st.user`` describes (the claims of the provider's ID token)."""
    verified = user.get("email_verified")
    return Person(issuer=str(user.get("iss") or ""), subject=str(user.get("sub") or ""),
                  email=str(user.get("email") or ""), name=str(user.get("name") or ""),
                  email_verified=verified if isinstance(verified, bool) else None)


def _closed(message: str) -> NoReturn:
    """The app, closed: one message, nothing else, and the run stops."""
    st.title("Epsilon Lab")
    st.error(message, icon=":material/lock:")
    st.stop()


def _configuration_problem() -> str | None:
    try:
        section = st.secrets["auth"] if "auth" in st.secrets else None
    except Exception:  # noqa: BLE001 — no secrets file at all, or one that does not parse
        section = None
    missing = [k for k in REQUIRED_SETTINGS if section is None or not section.get(k)]
    if missing:
        return (f"Sign-in is on ({access.AUTH_ENV}=oidc) but the `[auth]` section of "
                f"`.streamlit/secrets.toml` lacks {', '.join(f'`{k}`' for k in missing)}: "
                "add them as the README's deployment section shows, or turn sign-in off.")
    return None


def _sign_in_page() -> NoReturn:
    st.title("Epsilon Lab")
    st.markdown("Sign in with your organisation's account to continue.")
    if st.button("Sign in", key="sign_in", type="primary", icon=":material/login:"):
        st.login()
    st.stop()


def _sign_out_button() -> None:
    if st.button("Sign out", key="sign_out", icon=":material/logout:"):
        st.logout()


def _no_role_page(person: Person) -> NoReturn:
    st.title("Epsilon Lab")
    st.warning(f"You are signed in as {plain(person.shown)}, but no steward has given you a "
               "role yet. Ask a steward to add you on the People page (or, on the server, "
               f"`python -m release.roles add {plain(person.email or 'EMAIL')} analyst`).",
               icon=":material/person_off:")
    _sign_out_button()
    st.stop()


def acting_person() -> Person | None:
    """Who this session acts as, read from ``st.user`` now: :data:`LOCAL` while sign-in is
    off, None when nobody (with a subject) is signed in. For code that runs before the gate
    binds the person, such as a widget's callback, which Streamlit runs before the script."""
    if not access.sign_in_on():
        return LOCAL
    user = st.user.to_dict()
    if not user.get("is_logged_in"):
        return None
    person = person_of(user)
    return person if person.issuer and person.subject else None


def _session_person() -> Person | None:
    """:func:`acting_person` for :func:`release.access.current` when nobody is bound (a
    widget's callback): None outside a Streamlit session or when ``st.user`` cannot say."""
    try:
        return acting_person()
    except Exception:  # noqa: BLE001 — no session here, or no user: nobody acts
        return None


# what the stores ask when a callback writes before this run's gate has bound anyone
access.resolve_with(_session_person)


def role_now() -> Role | None:
    """The role of the person acting now (bound by the gate, or the session's user in a
    callback); None when they have none or the roles cannot be read."""
    try:
        return roles.role_of(access.current())
    except (AccessError, roles.RolesError):
        return None


def gate() -> Visitor:
    """Who this run is for: the local user (a steward) while sign-in is off; else the
    signed-in person with their role, read from the roles store now. Anyone else gets the
    sign-in page (or a message saying what is wrong) and the run stops. The person is bound
    (:func:`release.access.current`) for whatever this run writes."""
    access.bind(None)
    try:
        on = access.sign_in_on()
    except AccessError as exc:
        _closed(str(exc))
    if not on:
        access.bind(LOCAL)
        return Visitor(LOCAL, Role.STEWARD)
    problem = _configuration_problem()
    if problem:
        _closed(problem)
    person = acting_person()
    if person is None:
        if not st.user.to_dict().get("is_logged_in"):
            _sign_in_page()
        _closed("The sign-in provider did not say who you are (no `iss` or `sub` in its ID "
                "token): ask the administrator to check the provider's configuration.")
    try:
        role = roles.role_of(person)
        if role is not None and not st.session_state.get(_RECOGNISED):
            with roles.Roles() as store:   # the first sign-in records the provider's subject
                store.recognise(person)
            st.session_state[_RECOGNISED] = True
    except roles.RolesError as exc:
        _closed(f"The roles cannot be read: {plain(exc, limit=600)}")
    if role is None:
        _no_role_page(person)
    access.bind(person)
    with st.sidebar:
        st.caption(f"Signed in as **{plain(person.shown)}** ({role.value}).")
        _sign_out_button()
    return Visitor(person, role)


def visible_pages(pages: Sequence[Any], visitor: Visitor) -> list[Any]:
    """The pages of ``pages`` (``st.Page``) that ``visitor`` may open, in order: a viewer the
    Releases page and the Glossary, an analyst all but People, a steward all (People only
    while sign-in is on)."""
    shown = []
    for page in pages:
        path = page.url_path
        if path in SIGNED_IN_ONLY and not visitor.signed_in:
            continue
        needs = PAGE_NEEDS.get(path, Action.EXPLORE)
        if needs is None or access.allowed(visitor.role, needs):
            shown.append(page)
    return shown
