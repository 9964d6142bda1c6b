"""The Release plan page's budget section: this dataset's budget as the ledger keeps it.

The dataset is known by its content (``plan.identity.content_digest``: the same for the
upload, the data-folder file and the command line's file), so what the panel reads — the
budget, what earlier releases spent, what is left — is what the ledger will check when the
plan is released. Setting a dataset's total budget is an explicit, confirmed action recorded
in the ledger (and listed on the Releases page); the numbers typed for it belong to this
dataset only.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from dashboard import controls, state
from dashboard.analysis.releases import budget_history_table
from dashboard.data_source import identity_of
from dashboard.datasets import LoadedDataset
from dashboard.signin import role_now
from dashboard.text import plain
from dpcore.safe_rounding import lower as round_down
from dpcore.safe_rounding import upper
from release import access, roles
from release.access import Action, Role, denied_message
from release.ledger import REASON_LIMIT, Ledger, LedgerError, ledger_path, left_in_words

__all__ = ["Guard", "identity_of", "budget_section", "SET_KEYS"]

SET_EPSILON = "plan_set_budget_epsilon"
SET_DELTA = "plan_set_budget_delta"
SET_CONFIRM = "plan_set_budget_confirm"
SET_REASON = "plan_set_budget_reason"
SET_DONE = "plan_set_budget_done"          # what the last set said, shown once
SET_KEYS = (SET_EPSILON, SET_DELTA, SET_CONFIRM, SET_REASON)
#: The reason recorded for a dataset's first budget when the steward gives none (a change
#: of a budget needs the steward's own reason: it is published on every later card).
FIRST_REASON = "set on the Release plan page"


@dataclass(frozen=True)
class Guard:
    """What the ledger allows this plan: ``left`` ε (None: no budget set), ``fits`` whether
    the plan's recorded figure fits what is left (ε and δ), ``reason`` when it does not."""

    left: float | None
    fits: bool
    reason: str = ""


def _set_budget(identity, epsilon: float, delta: float, reason: str) -> None:
    """The button's callback: record the budget event (or say why not)."""
    st.session_state[SET_CONFIRM] = False
    try:
        with Ledger() as ledger:
            ledger.set_budget(identity, float(epsilon), delta=float(delta) or None,
                              reason=reason)
        st.session_state[SET_REASON] = ""
        st.session_state[SET_DONE] = (True, f"The ledger now holds a total budget of ε = "
                                      f"{epsilon:g}" + (f", δ = {delta:g}" if delta else "")
                                      + " for this dataset.")
    except (LedgerError, ValueError) as exc:
        st.session_state[SET_DONE] = (False, f"The budget was not set: {exc}")


def budget_section(loaded: LoadedDataset, data_key: str, *, needs_epsilon: float,
                   needs_delta: float, suggested: float | None = None) -> Guard:
    """Draw this dataset's budget (from the ledger) against what the plan would record, and
    the control that sets the budget; return what the ledger allows."""
    st.subheader("This dataset's budget (the ledger)")
    try:
        identity = identity_of(loaded, data_key)
    except OSError as exc:
        st.error(f"The data cannot be identified: {plain(exc, limit=400)}",
                 icon=":material/error:")
        return Guard(None, False, "the data cannot be identified")
    try:
        path = ledger_path()
        status = None
        if path.exists():
            with Ledger(path) as ledger:
                status = ledger.status(identity)
    except LedgerError as exc:
        st.error(f"The ledger cannot be read: {plain(exc, limit=500)}", icon=":material/error:")
        return Guard(None, False, "the ledger cannot be read")
    budget = None if status is None else status.budget
    spent_eps = 0.0 if status is None else status.spent_epsilon
    spent_delta = 0.0 if status is None else status.spent_delta
    releases = 0 if status is None else status.releases
    known = (status.names if status is not None else ()) or (loaded.name,)
    shown, was, rest = st.columns(3)
    shown.metric("Total budget", "none set" if budget is None else
                 f"ε = {round_down(budget.epsilon, 6)}"
                 + ("" if budget.delta is None else f", δ = {budget.delta:.3g}"))
    was.metric(f"Spent by {releases} release(s)", f"ε = {upper(spent_eps, 6)}"
               + (f", δ = {upper(spent_delta, 3)}" if spent_delta else ""))
    left_eps = None if status is None else status.remaining_epsilon
    left_delta = None if status is None else status.remaining_delta
    fits, reason = True, ""
    if left_eps is not None and needs_epsilon > left_eps:
        fits, reason = False, (f"the plan would record ε = {upper(needs_epsilon, 6)} and "
                               + ("the dataset is " + left_in_words(left_eps) if left_eps < 0
                                  else f"only ε = {round_down(left_eps, 6)} is left"))
    elif left_delta is not None and needs_delta > left_delta:
        fits, reason = False, (f"the plan would record δ = {upper(needs_delta, 3)} and "
                               + ("the dataset is " + left_in_words(left_delta, "δ", digits=3)
                                  if left_delta < 0 else f"only δ = {left_delta:.3g} is left"))
    rest.metric("Left", _left_figure(left_eps, left_delta),
                delta=None if left_eps is None else (
                    "the plan fits this budget" if fits else
                    "the plan does not fit this budget"),
                delta_color="green" if fits else "red", delta_arrow="off")
    names = ", ".join(f"“{plain(n)}”" for n in known)
    st.caption(f"The ledger knows this data by its content ({identity.content_hash[:19]}…), "
               f"as {names}: the same cells — uploaded, in the data folder or given to python "
               "-m release, under any file name, in any order of rows or columns — spend this "
               "one budget. It catches nothing more: a table with one row more or one value "
               "changed is new data with a budget of its own, even when it holds the same "
               "people, and their earlier releases are not counted against it. Releases add "
               "up by basic composition.")

    role = role_now()
    steward = role is Role.STEWARD
    if fits and role is Role.ANALYST:   # an analyst's release must fit their allotment too
        fits, reason = _allotment_section(identity, path, needs_epsilon, needs_delta)
    if not fits:
        st.error(f"**This plan is refused:** {plain(reason, limit=300)}. Lower the queries' "
                 "budgets" + (", or raise the dataset's budget below." if steward else "."),
                 icon=":material/block:")
    elif budget is None:
        st.warning("No total budget is set for this dataset: releases are recorded, but "
                   "nothing stops them adding up." + (" Set one below." if steward else ""),
                   icon=":material/warning:")
    _history(status)
    if steward:
        _set_control(identity, budget, spent_eps, suggested)
        _allotments_control(identity, path)
    else:
        st.info(denied_message(Action.SET_BUDGET), icon=":material/lock:")
    return Guard(left_eps, fits, reason)


def _allotment_section(identity, path, needs_epsilon: float, needs_delta: float
                       ) -> tuple[bool, str]:
    """An analyst's allotment of this dataset and what is left of it; whether the plan fits
    it (and why not)."""
    email = (access.current().email or "").strip().lower()
    try:
        allotment = None
        if path.exists() and email:
            with Ledger(path) as ledger:
                allotment = ledger.allotment(identity, email)
    except LedgerError as exc:
        st.error(f"Your allotment cannot be read: {plain(exc, limit=400)}",
                 icon=":material/error:")
        return False, "your allotment cannot be read"
    if allotment is None:
        st.warning("You have no allotment of this dataset's budget: ask a steward for one, or "
                   "save the plan and submit it for a steward to release.",
                   icon=":material/lock:")
        return False, "you have no allotment of this dataset's budget"
    left, left_delta = allotment.remaining_epsilon, allotment.remaining_delta
    why = ""
    if needs_epsilon > left:
        why = (f"the plan would record ε = {upper(needs_epsilon, 6)} and your allotment has "
               f"{left_in_words(left)}")
    elif left_delta is not None and needs_delta > left_delta:
        why = (f"the plan would record δ = {upper(needs_delta, 3)} and your allotment has "
               f"{left_in_words(left_delta, 'δ', digits=3)}")
    # said beside the dataset's "Left", which judges the dataset's budget only
    st.metric("Your allotment", f"ε = {round_down(allotment.epsilon, 6)}"
              + ("" if allotment.delta is None else f", δ = {allotment.delta:.3g}"),
              delta=f"{left_in_words(left)}: the plan "
                    + ("does not fit your allotment" if why else "fits your allotment"),
              delta_arrow="off", delta_color="red" if why else "green")
    return not why, why


ALLOT_DONE = "plan_allot_done"


def _allot(identity, analyst: str, epsilon: float, delta: float) -> None:
    """The allotment button's callback: record it (or say why not)."""
    try:
        with Ledger() as ledger:
            ledger.set_allotment(identity, analyst, float(epsilon),
                                 delta=float(delta) or None)
        st.session_state[ALLOT_DONE] = (True, f"{analyst} now has an allotment of ε = "
                                        f"{epsilon:g} of this dataset's budget.")
    except (LedgerError, ValueError) as exc:
        st.session_state[ALLOT_DONE] = (False, f"The allotment was not set: {exc}")


def _allotments_control(identity, path) -> None:
    """A steward's view of the analysts' allotments of this dataset, and the form that gives
    one (shown only while sign-in is on: with it off there is no analyst)."""
    import pandas as pd

    if not access.sign_in_on():
        return
    done = st.session_state.pop(ALLOT_DONE, None)
    with st.expander("Analysts' allotments", icon=":material/group:",
                     expanded=done is not None):
        try:
            given = []
            if path.exists():
                with Ledger(path) as ledger:
                    given = ledger.allotments(identity)
            with roles.Roles() as store:
                analysts = [m.email for m in store.members() if m.role is Role.ANALYST]
        except (LedgerError, roles.RolesError) as exc:
            st.error(f"The allotments cannot be read: {plain(exc, limit=400)}",
                     icon=":material/error:")
            return
        if given:
            st.dataframe(pd.DataFrame(
                [{"Analyst": a.analyst, "ε": a.epsilon, "δ": a.delta,
                  "Spent ε": upper(a.spent_epsilon, 6), "Set by": a.by, "Time": a.time}
                 for a in given]), hide_index=True, key="plan_allotments")
        else:
            st.caption("No analyst has an allotment of this dataset's budget.")
        if not analysts:
            st.caption("Nobody has the analyst role: add people on the People page.")
            return
        left, middle, right = st.columns(3)
        who = left.selectbox("Analyst", analysts, key="plan_allot_analyst")
        epsilon = middle.number_input("ε", min_value=0.0, max_value=1e4, value=1.0,
                                      step=0.1, key="plan_allot_epsilon")
        delta = right.number_input("δ (0: none)", min_value=0.0, max_value=0.1, value=0.0,
                                   step=1e-6, format="%g", key="plan_allot_delta")
        st.button("Set the allotment", key="plan_allot", on_click=_allot,
                  args=(identity, who, epsilon, delta))
        if done is not None:
            (st.success if done[0] else st.error)(plain(done[1], limit=400))


def _left_figure(left_eps: float | None, left_delta: float | None) -> str:
    """The Left metric: "ε = 0.5" (rounded down), "over budget by ε = 3.36" (rounded up)
    when the budget was set below what was spent, and δ when its cap is overspent too."""
    if left_eps is None:
        return "no limit"
    text = left_in_words(left_eps) if left_eps < 0 else f"ε = {round_down(left_eps, 6)}"
    if left_delta is not None and left_delta < 0:
        text += f"; {left_in_words(left_delta, 'δ', digits=3)}"
    return text


def _history(status) -> None:
    """Every budget event of this dataset (set, raised, lowered, δ cap removed), with its
    time and reason: what every later release's card and report list."""
    if status is None or not status.history:
        return

    changes = len(status.history)
    with st.expander(f"Budget history ({changes} setting{'s' * (changes > 1)})",
                     icon=":material/history:"):
        table = budget_history_table([status])
        if role_now() is not Role.STEWARD:   # who changed it: a steward's to see
            table = table.drop(columns=["Changed by"])
        st.dataframe(table, hide_index=True, key="plan_budget_history")
        st.caption("Every later release's card and report list these settings: a budget "
                   "raised, or a δ cap removed, after releases were made is visible to "
                   "whoever reads them.")


def _set_control(identity, budget, spent: float, suggested: float | None) -> None:
    state.forget_when_changed("plan_set_budget_for", (identity.content_hash,), SET_KEYS)
    done = st.session_state.pop(SET_DONE, None)
    with st.expander("Set this dataset's total budget", icon=":material/savings:",
                     expanded=done is not None):
        st.markdown("The most privacy loss you accept for these people in all releases. "
                    "Setting it is recorded in the ledger for good (a later setting replaces "
                    "it, and is recorded too); the Releases page lists it.")
        left, right = st.columns(2)
        default = budget.epsilon if budget is not None else (suggested or 1.0)
        epsilon = controls.number("Total ε", key=SET_EPSILON, default=float(default),
                                  min_value=0.001, max_value=1e4, step=0.1, container=left,
                                  in_url=False)
        delta = controls.number("Total δ (0: no cap on δ)", key=SET_DELTA,
                                default=float(budget.delta or 0.0) if budget else 0.0,
                                min_value=0.0, max_value=0.1, step=1e-6, container=right,
                                in_url=False)
        changing = budget is not None
        reason = st.text_input(
            "Reason" + (" (needed: this changes the budget)" if changing else " (optional)"),
            key=SET_REASON, max_chars=REASON_LIMIT,
            placeholder="e.g. agreed with the data owner on 3 March" if changing else
            FIRST_REASON,
            help="Recorded with the budget in the ledger and published, with its time, on "
                 "every later release's card and report: write the decision and who took "
                 "it, never a value of the data.")
        if spent > 0 and epsilon < spent:
            st.warning(f"ε = {epsilon:g} is below what this dataset's releases have spent "
                       f"(ε = {upper(spent, 6)}): it will read over budget by ε = "
                       f"{upper(spent - epsilon, 6)}, and no release will fit.",
                       icon=":material/warning:")
        elif changing and spent > 0 and (epsilon > budget.epsilon or (
                budget.delta is not None and (not delta or delta > budget.delta))):
            st.info("Releases were made under the current budget: raising it, or removing "
                    "its δ cap, is recorded and shown on every later release's card and "
                    "report.", icon=":material/visibility:")
        missing = changing and not reason.strip()
        confirm = st.checkbox(f"Record a total budget of ε = {epsilon:g} for this dataset in "
                              "the ledger", key=SET_CONFIRM, disabled=missing)
        if missing:
            st.caption("Give a reason to change the budget: it is published with the change.")
        st.button("Set the budget", key="plan_set_budget", disabled=missing or not confirm,
                  on_click=_set_budget,
                  args=(identity, epsilon, delta, reason.strip() or FIRST_REASON))
        if done is not None:
            (st.success if done[0] else st.error)(plain(done[1], limit=400))
