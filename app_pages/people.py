"""People and roles page (stewards, sign-in on): who may do what; add a person by email, change
their role, remove them. The store (release.roles) checks each change again.
"""

from __future__ import annotations

import streamlit as st

from dashboard import controls, state
from dashboard.text import plain
from release import access, roles
from release.access import AccessDenied, Action, Role

DONE = "people_done"   # what the last change did, shown after the rerun that lists it

st.title("People and roles")
st.markdown("Once sign-in is on, each person acts under a role. A **steward** keeps data on the "
            "server, declares datasets, sets each dataset's "
            "[privacy budget](./glossary#privacy-budget) and releases; an **analyst** explores, "
            "simulates, saves plans and releases within what a steward allots them; a "
            "**viewer** sees the Releases page only. People are added by the email their "
            "organisation's sign-in gives; their first sign-in ties the entry to their account.")
who = access.current()
if not roles.may(who, Action.MANAGE_ROLES):
    st.error(access.denied_message(Action.MANAGE_ROLES), icon=":material/lock:")
    st.stop()
if DONE in st.session_state:
    st.success(st.session_state.pop(DONE), icon=":material/check:")
try:
    with roles.Roles() as store:
        members = store.members()
except roles.RolesError as exc:
    st.error(f"The roles cannot be read: {plain(exc, limit=600)}", icon=":material/error:")
    st.stop()

st.dataframe([{"email": m.email, "role": m.role.value,
               "signed in": "yes" if m.signed_in else "not yet",
               "changed": m.changed, "by": m.changed_by} for m in members],
             hide_index=True, key="people_table")
# The path is the server's own setting, shown as code (as the Releases page shows the ledger's).
st.caption(f"Kept in `{store.path}` (set `{roles.ROLES_ENV}` to use another). "
           "On the server: `python -m release.roles list`, `add EMAIL ROLE`, `set-role EMAIL "
           "ROLE`, `remove EMAIL`.")

ROLES = [r.value for r in Role]
emails = [m.email for m in members]


def change(step, done: str) -> None:
    """Make one change as the signed-in steward; say what it did, or why it was refused."""
    try:
        with roles.Roles(store.path) as again:
            step(again)
    except (roles.RolesError, AccessDenied) as exc:
        st.error(plain(exc, limit=400), icon=":material/error:")
        return
    st.session_state[DONE] = done
    st.rerun()


add, edit, drop = st.columns(3)
with add:
    st.subheader("Add a person")
    state.remembered("people_add_email", "")
    email = st.text_input("Email", key="people_add_email", placeholder="name@example.org")
    state.remember_in_session("people_add_email")
    role = controls.select("Role", ROLES, key="people_add_role", default="analyst",
                           in_url=False)
    if st.button("Add", key="people_add", type="primary"):
        change(lambda s: s.add(email, role, by=who),
               f"Added {plain(email.strip().lower())} as {role}.")
if emails:
    with edit:
        st.subheader("Change a role")
        person = controls.select("Person", emails, key="people_change_who", in_url=False)
        new = controls.select("New role", ROLES, key="people_change_role", in_url=False)
        if st.button("Change", key="people_change"):
            change(lambda s: s.change(person, new, by=who), f"{plain(person)} is now {new}.")
    with drop:
        st.subheader("Remove a person")
        gone = controls.select("Person", emails, key="people_remove_who", in_url=False)
        if st.button("Remove", key="people_remove"):
            change(lambda s: s.remove(gone, by=who), f"Removed {plain(gone)}.")
st.caption("The last steward cannot be removed or given another role: make someone else a "
           "steward first.")
