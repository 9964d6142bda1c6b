"""The "Add to plan" panel every query page draws under its results.

The page passes a function that builds its query as a plan query (``analysis.plan_entries``);
the panel says what would be added (mechanism, budget, target) or why it cannot be, adds it to
the session's plan on a click, and links to the Release plan page. Before anything is added,
the query alone is certified as a release would certify it (``analysis.releasable``): a query
a release would refuse is not offered; the panel says why and offers the releasable
alternatives instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from dashboard import person, plan_store
from dashboard.analysis.plan_entries import NotPlannable, plan_unit
from dashboard.analysis.releasable import releasability
from dashboard.analysis.release_plan import budget_text, target_text
from dashboard.text import plain
from plan.model import PlanError, PlanQuery

__all__ = ["add_to_plan"]

_ADDED = "plan_panel_added"   # the label of the query just added, shown once
_REFUSED = "plan_panel_refused"   # why a query certified on the click was not added, once


def _add(data_key: str, query: PlanQuery, context: Mapping[str, Any] | None,
         certify: bool = False) -> None:
    if certify:   # certified now, on the click (a query whose certificate takes seconds)
        check = releasability(query, plan_unit(person.current_unit(data_key)))
        if not check.releasable:
            st.session_state[_REFUSED] = check.reason
            return
    added = plan_store.add(data_key, query, context)
    st.session_state[_ADDED] = added.label


def add_to_plan(data_key: str, make: Callable[[], PlanQuery], *, key: str,
                context: Mapping[str, Any] | None = None,
                certify_on_click: bool = False) -> None:
    """Draw the panel: what this page's query would add to the release plan, and the button;
    or, when a release would refuse the query as set, why, and a button for each releasable
    alternative.

    ``certify_on_click``: the query is certified when the button is clicked, not on every
    run (OpenDP's map of a synthetic table takes seconds); a refusal then says why and adds
    nothing."""
    with st.container(border=True, key=f"{key}_plan_panel"):
        st.markdown("**Release plan**")
        try:
            query = make()
        except (NotPlannable, PlanError, ValueError, TypeError) as exc:
            st.caption(f"This query cannot go into the plan as set: {plain(exc, limit=400)}.")
            query = None
        if query is not None and certify_on_click:
            _offer(data_key, query, context, key=f"{key}_add_to_plan", label="Add to plan",
                   certify=True)
        elif query is not None:
            check = releasability(query, plan_unit(person.current_unit(data_key)))
            if check.releasable:
                _offer(data_key, query, context, key=f"{key}_add_to_plan", label="Add to plan")
            else:
                alternatives = (" Instead:" if check.alternatives else
                                " Change the settings above to add it.")
                st.warning(f"**Not releasable as set**, so not offered for the plan: "
                           f"{plain(check.reason, limit=500)}.{alternatives}",
                           icon=":material/block:")
                for i, alternative in enumerate(check.alternatives):
                    _offer(data_key, alternative, context, key=f"{key}_add_alternative_{i}",
                           label=f"Add with {budget_text(alternative)}")
        refused = st.session_state.pop(_REFUSED, None)
        if refused is not None:
            st.warning(f"**Not added: a release would refuse it.** {plain(refused, limit=500)}.",
                       icon=":material/block:")
        added = st.session_state.pop(_ADDED, None)
        if added is not None:
            st.success(f"Added to the plan: {plain(added, limit=120)}.",
                       icon=":material/check:")
        n = plan_store.count(data_key)
        st.page_link(plan_store.PLAN_PAGE, icon=":material/checklist:",
                     label=f"Open the release plan ({n} {'query' if n == 1 else 'queries'})")


def _offer(data_key: str, query: PlanQuery, context: Mapping[str, Any] | None, *, key: str,
           label: str, certify: bool = False) -> None:
    """What ``query`` adds (mechanism, budget, target) and its button."""
    target = target_text(query.target) if query.target else "no accuracy target yet"
    when = (" OpenDP certifies it when you click (a few seconds); a query a release would "
            "refuse is not added." if certify else "")
    st.caption(f"Adds **{plain(query.label, limit=120)}** with "
               f"{plain(budget_text(query), limit=200)}; target: "
               f"{plain(target, limit=200)} (editable on the Release plan page).{when}")
    st.button(plain(label, limit=160), key=key, icon=":material/playlist_add:", on_click=_add,
              args=(data_key, query, context, certify))
