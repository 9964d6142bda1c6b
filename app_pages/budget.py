"""Budget page: plan several releases, total their privacy cost under three composition rules,
and see how many releases of one size fit a budget.
"""

from __future__ import annotations

import streamlit as st

from dashboard import charts, controls
from dashboard.analysis import budget
from dashboard.choices import DEFAULT_KIND, DELTA_OPTIONS, MEASURES, MECHANISMS, fmt_number, label
from dashboard.shown import up
from dashboard.text import plain

ss = st.session_state
PLAN = "budget_plan"               # the plan as last edited; also the URL parameter's name
BASE = "budget_plan_base"          # the table the current editor was created with
VERSION = "budget_editor_version"  # bumped by "reset" so that a fresh editor is drawn
CLEARED = "budget_cleared_cells"   # what the last edit emptied, shown once
ss.setdefault(VERSION, 0)
editor_key = f"budget_editor_{ss[VERSION]}"


def reset_plan() -> None:
    ss[PLAN] = budget.default_plan()
    ss[VERSION] += 1
    st.query_params.pop(PLAN, None)


st.title("Privacy budget")
st.markdown("Every release about the same people spends part of one privacy budget. Plan your "
            "releases below, see what they cost together under three composition rules, and "
            "what each one buys in accuracy. Sensitivities are for **add/remove one row** "
            "(one person): 1 for a count or a histogram cell, the upper bound for a sum of "
            "values clamped to [0, upper].")
left, right = st.columns(2)
with left:
    epsilon_budget = controls.exact_slider("Total budget ε", budget.BUDGET_GRID,
                                           key="budget_epsilon_total", default=5.0,
                                           help="The most privacy loss you accept in total.")
with right:
    delta_budget = controls.select("Total budget δ", DELTA_OPTIONS, key="budget_delta_total",
                                   default=1e-5, format_func=fmt_number,
                                   help="Total failure probability; advanced and zCDP "
                                        "composition turn their result into (ε, δ) at this δ.")

st.subheader("Planned releases")
if editor_key not in ss:  # a fresh editor: start from a shared URL, else this session's plan
    shared = budget.plan_from_param(st.query_params.get(PLAN))
    ss[BASE] = shared if shared is not None else ss.get(PLAN, budget.default_plan())
number = st.column_config.NumberColumn
plan = st.data_editor(
    ss[BASE], key=editor_key, num_rows="dynamic", hide_index=True, width="stretch",
    column_config={
        budget.QUERY: st.column_config.TextColumn(
            "Query", max_chars=budget.MAX_QUERY_CHARS, width=290,
            help="What is released, in your words."),
        budget.MECHANISM: st.column_config.SelectboxColumn(
            "Mechanism", options=list(MECHANISMS), format_func=label,
            default=DEFAULT_KIND, required=True, width=180),
        budget.MEASURE: st.column_config.SelectboxColumn(
            "Measure", options=list(MEASURES), format_func=MEASURES.get, default="pure",
            required=True, width=150, help="Gaussian noise needs approximate DP or zCDP."),
        **{column: number(label, min_value=low, max_value=high, step=step, format=shown,
                          default=default, help=help)
           for column, label, step, shown, default, help in (
               (budget.EPSILON, "ε", 0.001, "%g", 0.5, "Privacy loss of this release."),
               (budget.DELTA, "δ", 1e-12, "%.1e", None, "Approximate DP and bounded Laplace; "
                "for a zCDP row, the δ at which basic and advanced composition read it."),
               (budget.RHO, "ρ", 1e-5, "%g", None, "zCDP rows only."),
               (budget.SENSITIVITY, "Sensitivity", 0.001, "%g", 1.0,
                "How much adding or removing one row (one person) can change the answer."))
           for low, high in [budget.LIMITS[column]]},
    },
)
plan, cleared = budget.clear_unused_cells(plan)
ss[PLAN] = plan
st.query_params[PLAN] = budget.plan_to_param(plan)
if cleared:  # draw a fresh editor from the cleaned plan, so the cleared cells show empty
    ss[BASE], ss[CLEARED] = plan, cleared
    ss[VERSION] += 1
    st.rerun()
for sentence in ss.pop(CLEARED, []):
    st.info(plain(sentence, limit=300), icon=":material/info:")
st.button("Reset to the example plan", key="budget_reset", on_click=reset_plan,
          icon=":material/restart_alt:")

checked = budget.check_plan(plan)
st.dataframe(budget.release_table(checked), hide_index=True, key="budget_rows", width="stretch",
             column_config={budget.QUERY: st.column_config.TextColumn(width="large")})
st.caption("What each release costs under each rule, and the accuracy it buys: ± the error "
           "that 95% of releases stay within, for the row's sensitivity (add/remove one row).")
for note in budget.release_notes(checked):
    st.caption(plain(note, limit=400))
invalid = [r for r in checked if not r.valid]
if invalid:
    st.error("These rows are left out of the totals:\n" + "\n".join(
        f"- **Row {r.row}**{' (' + plain(r.query, limit=60) + ')' if r.query else ''}: "
        f"{plain(r.error, limit=400)}" for r in invalid))

try:
    totals = budget.plan_totals(checked, delta_budget)
except (ValueError, TypeError) as exc:
    st.error(f"The plan cannot be totalled: {plain(exc, limit=400)}. Check the rows above.")
    st.stop()
if not totals.counted:
    st.info("No release can be counted yet: add a row or fix the rows above.")
else:
    st.markdown(f"**Total for {len(totals.counted)} release(s)** "
                f"(budget ε = {fmt_number(epsilon_budget)}, δ = {fmt_number(delta_budget)}):")
    shown = {
        "basic": (totals.basic, "Sum of the rows' ε and δ."),
        "advanced": (totals.advanced, "Dwork–Rothblum–Vadhan, for releases of different "
                     "sizes: √(2 ln(1/δ′) Σεᵢ²) + Σεᵢ(e^εᵢ − 1), with δ′ = δ budget − Σδᵢ."),
        "zcdp": (totals.zcdp, f"ρ = {up(totals.rho or 0)} in total (the rows' ρ added up), "
                 f"turned into ε at δ = {fmt_number(delta_budget)}."),
    }
    for column, (rule, (total, help)) in zip(st.columns(3), shown.items(), strict=True):
        if total is None:
            column.metric(budget.RULES[rule], "—", help=help)
            column.caption(plain(totals.advanced_problem, limit=400))
            continue
        fits = totals.fits(rule, epsilon_budget)
        column.metric(budget.RULES[rule], f"ε = {up(total.epsilon)}", help=help,
                      delta="within budget" if fits else "over budget",
                      delta_color="green" if fits else "red", delta_arrow="off")
        column.caption(f"δ = {up(total.delta)}" if total.delta > 0 else "δ = 0 (pure DP)")
    for note in totals.notes:
        st.caption(note)

st.subheader("How many releases fit the budget")
epsilon = controls.epsilon_slider(key="budget_epsilon_release", default=0.1,
                                  label="ε per release")
with st.spinner("Composing…"):
    fit = budget.fit_curves(epsilon, epsilon_budget, delta_budget)
st.plotly_chart(charts.releases_budget(fit.releases, fit.totals, epsilon=epsilon,
                                       epsilon_budget=epsilon_budget, delta_budget=delta_budget,
                                       most=fit.most), key="budget_fit_chart")
st.caption("The total privacy loss of k releases of the same size (pure ε-DP each, e.g. "
           "Laplace counts) under each rule; where a line crosses the black budget line, no "
           "further release fits.")
st.markdown(budget.most_releases_sentence(fit))
with st.expander("The three rules"):
    st.markdown(
        "- **Basic composition**: ε's (and δ's) add up. Exact for a few releases.\n"
        "- **Advanced composition** (Dwork, Rothblum & Vadhan 2010): k releases of ε cost "
        "ε√(2k ln(1/δ′)) + kε(e^ε − 1) at an extra δ′; it grows like √k, so it wins for many "
        "small releases and loses for a few large ones.\n"
        "- **zCDP** (Bun & Steinke 2016): each release has a ρ (pure ε gives ρ = ε²/2, a "
        "Gaussian its exact ρ = Δ²/(2σ²)); ρ's add up, and the total is turned into (ε, δ) by "
        "the optimal conversion of Canonne, Kamath & Steinke (2020). Bounded Laplace with "
        "δ > 0 has no exact ρ: it counts as pure ε − ln(1 − δ), which its calibration "
        "guarantees.")
