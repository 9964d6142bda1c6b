"""The "Add to plan" panel every query page draws under its results.

The page passes a function that builds its query as a plan query (``analysis.plan_entries``);
the panel says what would be added (mechanism, budget, target) or why it cannot be, adds it to
the session's plan on a click, and links to the Release plan page. Before anything is added,
the query alone is certified as a release would certify it (``analysis.releasable``): a query
a release would refuse is not offered; the panel says why and offers the releasable
alternatives instead. A query whose statistic the plan already holds is not added again
silently: the panel says so and offers to replace it, or to add a second (spending its budget
again). A query joins the plan under the plan's own privacy unit (``plan_store.unit``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from dashboard import person, plan_bound, plan_store, state
from dashboard.analysis.plan_entries import NotPlannable, plan_unit
from dashboard.analysis.releasable import releasability
from dashboard.analysis.release_plan import budget_text, target_text
from dashboard.plan_unit_panel import declared_schema
from dashboard.text import plain
from plan.model import PlanError, PlanQuery

__all__ = ["add_to_plan"]

_ADDED = "plan_panel_added"   # the label of the query just added, shown once
_REFUSED = "plan_panel_refused"   # why a query certified on the click was not added, once


def _unit(data_key: str):
    """The unit a query joins the plan under: the plan's own, else (an empty plan) the
    session's."""
    built_under = plan_store.unit(data_key) if plan_store.count(data_key) else None
    return plan_unit(built_under if built_under is not None else person.current_unit(data_key))


def _add(data_key: str, query: PlanQuery, context: Mapping[str, Any] | None,
         certify: bool = False, twin_id: str | None = None, second: bool = False) -> None:
    """The buttons' callback: add ``query`` (``second``: even if the plan already computes its
    statistic), or put it in place of the plan's query ``twin_id``."""
    if certify:   # certified now, on the click (a query whose certificate takes seconds)
        check = releasability(query, _unit(data_key))
        if not check.releasable:
            st.session_state[_REFUSED] = check.reason
            return
    if twin_id is not None:
        replaced = plan_store.replace_query(data_key, twin_id, query, context)
        if replaced is not None:
            st.session_state[_ADDED] = f"{replaced.label} (in place of the one it replaces)"
            return
    elif not second and plan_store.same_query(data_key, query) is not None:
        return   # added meanwhile (another tab): the panel now offers replace or a second
    session_unit = person.current_unit(data_key)
    added = plan_store.add(data_key, query, context, unit=session_unit,
                           schema_json=declared_schema(state.dataset(), session_unit),
                           built_on=plan_bound.built_on_now(state.dataset(), data_key))
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
            check = releasability(query, _unit(data_key))
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
        built_under = plan_store.unit(data_key) if n else None
        if built_under is not None and built_under != person.current_unit(data_key):
            st.caption(f"The release plan is built under its own privacy unit "
                       f"({plain(built_under.describe(), limit=200)}), not this page's: a query "
                       "added joins it under the plan's unit (the Release plan page offers to "
                       "make them one).")
        st.page_link(plan_store.PLAN_PAGE, icon=":material/checklist:",
                     label=f"Open the release plan ({n} {'query' if n == 1 else 'queries'})")


def _offer(data_key: str, query: PlanQuery, context: Mapping[str, Any] | None, *, key: str,
           label: str, certify: bool = False) -> None:
    """What ``query`` adds (mechanism, budget, target) and its button; when the plan already
    computes the same statistic, that instead, and a button to replace it or add a second."""
    target = target_text(query.target) if query.target else "no accuracy target yet"
    when = (" OpenDP certifies it when you click (a few seconds); a query a release would "
            "refuse is not added." if certify else "")
    twin = plan_store.same_query(data_key, query)
    if twin is None:
        st.caption(f"Adds **{plain(query.label, limit=120)}** with "
                   f"{plain(budget_text(query), limit=200)}; target: "
                   f"{plain(target, limit=200)} (editable on the Release plan page).{when}")
        st.button(plain(label, limit=160), key=key, icon=":material/playlist_add:",
                  on_click=_add, args=(data_key, query, context, certify))
        return
    st.info(f"**Already in the plan:** {plain(twin.label, limit=120)} computes this statistic, "
            f"with {plain(budget_text(twin), limit=200)}. Replace it by this one "
            f"({plain(budget_text(query), limit=200)}; target: {plain(target, limit=200)}), "
            f"or add a second: that publishes the statistic twice and adds "
            f"{plain(added_budget(query), limit=200)} to what the plan spends.{when}",
            icon=":material/content_copy:")
    replace, second = st.columns(2)
    replace.button("Replace it in the plan", key=f"{key}_replace", icon=":material/swap_horiz:",
                   on_click=_add, args=(data_key, query, context, certify, twin.id))
    second.button(plain(f"Add a second ({added_budget(query)} more)", limit=160),
                  key=f"{key}_second", icon=":material/library_add:", on_click=_add,
                  args=(data_key, query, context, certify, None, True))


def added_budget(query: PlanQuery) -> str:
    """What a second copy of ``query`` adds to a plan's budget, in its own terms (ε, δ or ρ
    of its mechanism, its threshold, a synthetic table): under basic composition, exactly
    the query's own budget, since the copy's noise is drawn afresh."""
    totals = {"ε": 0.0, "ρ": 0.0, "δ": 0.0}
    # a synthetic table's δ is the one its ρ is read at, not a δ it spends
    for source, names in ((query.mechanism, ("epsilon", "rho", "delta")),
                          (query.threshold, ("epsilon", "rho", "delta")),
                          (query.query, ("epsilon", "rho"))):
        for name in names:
            value = getattr(source, name, None)
            if isinstance(value, int | float) and not isinstance(value, bool):
                totals[{"epsilon": "ε", "rho": "ρ", "delta": "δ"}[name]] += float(value)
    levels = [f"{symbol} = {value:g}" for symbol, value in totals.items() if value > 0]
    return ", ".join(levels) if levels else "its budget"
