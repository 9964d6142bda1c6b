"""Two tabs on one saved plan: when another tab saved the plan this session edits since the
version it started from, say so (when, and what that tab changed) and offer the two ways on.

``plan_store`` never writes one tab's plan over another's (``plan_library.PlanConflict``):
this session keeps its own, unsaved, until the user reloads the saved plan (dropping this
tab's change) or saves this tab's as a copy. Drawn on every page, under the sidebar's hook.
"""

from __future__ import annotations

import streamlit as st

from dashboard import plan_store
from dashboard.text import plain

__all__ = ["conflict_sentence", "conflict_section"]


def conflict_sentence(found: plan_store.Conflict) -> str:
    """"The plan 'Counts' was changed in another tab or window at 19:42 UTC: added Count of
    rows. Your change in this tab is not saved: …" (names and labels are the user's own)."""
    stored = found.stored
    text = (f"The plan '{stored.name}' was changed in another tab or window at "
            f"{stored.updated_hhmm}" + (f": {found.theirs}." if found.theirs else "."))
    if found.unsaved:
        return text + (" Your change in this tab is not saved (nothing was written over the "
                       "other): reload the saved plan, dropping your change, or save yours "
                       "as a copy, a new saved plan.")
    return text + (" This tab still shows the version before: reload the saved plan to see "
                   "it, or save this tab's as a copy, a new saved plan.")


def conflict_section(data_key: str) -> None:
    """The sentence and the two buttons (nothing when there is no conflict)."""
    found = plan_store.conflict(data_key)
    if found is None:
        return
    with st.container(border=True, key="plan_conflict"):
        st.warning(plain(conflict_sentence(found), limit=700), icon=":material/sync_problem:")
        reload, copy = st.columns(2)
        reload.button("Reload the saved plan", key="plan_conflict_reload",
                      icon=":material/refresh:", on_click=plan_store.reload_saved,
                      args=(data_key,), help="This tab then shows the plan as saved in the "
                                             "other; its unsaved change is dropped.")
        copy.button("Save mine as a copy", key="plan_conflict_copy",
                    icon=":material/file_copy:", on_click=plan_store.save_as_copy,
                    args=(data_key,), help="This tab's plan becomes a new saved plan; the "
                                           "one saved in the other tab stays as it is.")
