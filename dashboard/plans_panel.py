"""The Release plan page's "Saved plans" section: the plan's name, and this dataset's saved
plans to open, duplicate or delete (after a confirmation), or a new one.

``dashboard.plan_store`` saves every edit; this panel only chooses which saved plan to edit.
"""

from __future__ import annotations

import streamlit as st

from dashboard import plan_store
from dashboard.signin import role_now
from dashboard.text import plain
from release.access import Role

__all__ = ["saved_plans_section"]

_CONFIRM = "saved_plan_delete_pending"   # the id of the plan whose deletion awaits a yes


def _rename(data_key: str, key: str) -> None:
    plan_store.rename(data_key, st.session_state[key])


def _ask_delete(plan_id: int) -> None:
    st.session_state[_CONFIRM] = plan_id


def _delete(data_key: str, plan_id: int) -> None:
    st.session_state.pop(_CONFIRM, None)
    plan_store.delete_plan(data_key, plan_id)


def saved_plans_section(data_key: str) -> None:
    """Draw the section (in an expander; open while a deletion awaits its confirmation)."""
    ss = st.session_state
    current = plan_store.current(data_key)
    plans = plan_store.saved_plans(data_key)
    title = "Saved plans" + ("" if current is None else f": {current.name}")
    with st.expander(plain(title, limit=140), icon=":material/bookmarks:",
                     expanded=_CONFIRM in ss):
        error = plan_store.library_error()
        if error:
            st.warning(f"Plans are not being saved: {plain(error, limit=500)} This tab keeps "
                       "its plan while it stays open.", icon=":material/warning:")
        st.caption("Every change to the plan is saved on this server (without any value "
                   "computed from the data): a reload, a new tab or a restart brings it back.")
        key = f"saved_plan_name_{plan_store.revision(data_key)}"
        st.text_input("Plan name", value=plan_store.DEFAULT_NAME if current is None
                      else current.name, key=key, max_chars=120,
                      on_change=_rename, args=(data_key, key))
        st.button("New plan", key="saved_plan_new", icon=":material/add:",
                  on_click=plan_store.new_plan, args=(data_key,))
        _submission(data_key, current)
        for saved in plans:
            mine = current is not None and saved.id == current.id
            n = saved.size
            cols = st.columns([4, 1, 1, 1], vertical_alignment="center")
            cols[0].markdown(f"**{plain(saved.name, limit=120)}**"
                             + (" (open here)" if mine else "")
                             + f" · {n} {'query' if n == 1 else 'queries'} · saved "
                             f"{saved.updated[:10]} {saved.updated_hhmm}")
            cols[1].button("Open", key=f"saved_plan_open_{saved.id}", disabled=mine,
                           on_click=plan_store.open_plan, args=(data_key, saved.id))
            cols[2].button("Duplicate", key=f"saved_plan_duplicate_{saved.id}",
                           on_click=plan_store.duplicate_plan, args=(data_key, saved.id))
            cols[3].button("Delete", key=f"saved_plan_delete_{saved.id}",
                           on_click=_ask_delete, args=(saved.id,))
            if ss.get(_CONFIRM) == saved.id:
                st.warning(f"Delete the plan '{plain(saved.name, limit=120)}'? This cannot "
                           "be undone.", icon=":material/delete:")
                yes, no = st.columns(2)
                yes.button("Yes, delete it", key="saved_plan_delete_confirm", type="primary",
                           on_click=_delete, args=(data_key, saved.id))
                no.button("Cancel", key="saved_plan_delete_cancel",
                          on_click=lambda: st.session_state.pop(_CONFIRM, None))


def _submission(data_key: str, current) -> None:
    """An analyst submits the plan for a steward to release; a steward sees the dataset's
    submitted plans and opens one to release it below."""
    role = role_now()
    if role is Role.ANALYST:
        if current is not None and current.submitted:
            st.info(f"Submitted for a steward to release ({current.submitted[:16]} UTC). A "
                    "change to the plan withdraws it: submit it again then.",
                    icon=":material/outbox:")
        st.button("Submit for a steward to release", key="saved_plan_submit",
                  icon=":material/outbox:", on_click=plan_store.submit, args=(data_key,),
                  disabled=current is not None and bool(current.submitted),
                  help="A steward sees it on this page and can release it beyond your "
                       "allotment.")
    elif role is Role.STEWARD:
        waiting = plan_store.submitted_plans(data_key)
        if not waiting:
            return
        st.markdown(f"**Submitted for release** ({len(waiting)}): open one, check it, then "
                    "release it below.")
        for saved in waiting:
            cols = st.columns([5, 1], vertical_alignment="center")
            cols[0].markdown(f"{plain(saved.name, limit=120)} · by "
                             f"{plain(saved.submitted_by, limit=200)} · "
                             f"{saved.submitted[:16]} UTC")
            cols[1].button("Open", key=f"submitted_plan_open_{saved.id}",
                           disabled=current is not None and saved.id == current.id,
                           on_click=plan_store.open_plan, args=(data_key, saved.id))
