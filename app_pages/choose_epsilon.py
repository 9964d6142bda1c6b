"""Choose epsilon: the error of a query against epsilon, the smallest epsilon meeting a target,
and what an attacker can learn at the epsilon chosen.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from dashboard import charts, choices, controls, person, presenting, state, teaching
from dashboard.analysis import epsilon_downloads as downloads
from dashboard.analysis import epsilon_question as questions
from dashboard.analysis import epsilon_risk as risk
from dashboard.analysis import epsilon_sweep as sweep
from dashboard.analysis import epsilon_view as views
from dashboard.analysis import selection_choices as sel
from dashboard.text import plain
from dpcore import safe_rounding

ss = st.session_state
loaded = state.dataset()
frame, data_key, saved = loaded.relation, state.dataset_key(), ss[state.SAVED]

st.title("Choose epsilon")
st.caption("Pick [ε](./glossary#epsilon) by looking at it: how the error of your query "
           "shrinks as ε grows, the smallest ε that meets your accuracy target, and what that "
           "ε lets an attacker learn.")
teaching.look_here("choose_epsilon")
state.remembered("choose_source", "statistics", options=list(questions.SOURCES))
unit = person.current_unit(data_key)   # the pages' privacy unit, as they apply it
source = st.radio("Query", list(questions.SOURCES), key="choose_source", horizontal=True,
                  format_func=questions.SOURCES.get)
state.remember("choose_source")
if source == "selection":
    question = questions.selection_question(loaded, saved, data_key, state.seed(), escape=plain,
                                            unit=unit)
    query = None
else:
    question = None
    query = (questions.statistics_query(loaded, saved, data_key, escape=plain, unit=unit,
                                        seed=state.seed()) if source == "statistics"
             else questions.tables_query(loaded, saved, escape=plain,
                                         contribution=person.contribution(unit, seed=state.seed())))
if query is None and question is None:
    st.info(f"{plain(loaded.name)} has too few categorical columns for this query: pick "
            "another query above or another dataset in the sidebar.")
    st.stop()
st.markdown((query or question).note)
if query is not None and query.rho is not None:
    st.caption(risk.zcdp_note(query.rho))

setup, target_box = st.columns(2, gap="large")
with setup:
    mechanisms, relative, measure, delta = [], False, "alpha", questions.DEFAULT_DELTA
    if query is not None:
        numbers = sweep.cached_numbers(frame, data_key, query)
        mechanisms = controls.multiselect(
            "Mechanisms to compare", query.mechanisms, key=f"choose_mechanisms_{source}",
            default=query.chosen, format_func=sweep.mechanism_name)
        measure = controls.select("Measure of error", list(sweep.MEASURES), key="choose_measure",
                                  format_func=sweep.MEASURES.get)
        if not query.per_cell and float(numbers.true_value) != 0:
            relative = controls.toggle("Show errors as % of the true value",
                                       key=f"choose_relative_{query.kind}",
                                       default=query.relative_by_default)
        st.caption(views.sensitivity_note(query, numbers))
        if query.answer_range and choices.uses_answer_range(mechanisms):
            low, high = query.answer_range
            st.caption(f"{choices.range_names()} keep the answer in [{low:g}, {high:g}], a "
                       "public range from the statistics page; a range read off the data "
                       "would leak.")
        confidence = controls.select("Confidence (share of releases the error bound covers)",
                                     sweep.CONFIDENCES, key="choose_confidence", default=0.95,
                                     format_func=lambda c: f"{c:.0%}")
    else:
        confidence = 0.95  # not used: a selection is right or wrong
        noises = controls.multiselect("Noises to compare", list(sel.NOISES),
                                      key="choose_noises", default=[question.noise],
                                      format_func=sel.NOISES.get)
        st.caption(f"Sensitivity of the scores: {question.sensitivity:g} under "
                   f"{plain(question.neighbours)} (the Selection page's mechanism).")
    if any(map(choices.needs_delta, mechanisms)):
        delta = controls.select("δ for the mechanisms that need one", controls.DELTA_OPTIONS,
                                key="choose_delta", default=query.delta,
                                format_func=controls.fmt_number)

with target_box:
    epsilon = controls.epsilon_slider(key="choose_epsilon", label="Current ε (marked on the chart)",
                                      default=(query or question).epsilon)
    if query is not None:
        unit = "% of the true value" if relative else query.unit
        target = controls.number(f"Target: error at most ± ({plain(unit)})",
                                 key=f"choose_target_{query.kind}_{'pct' if relative else 'abs'}",
                                 default=1.0 if relative else 10.0, min_value=1e-6,
                                 max_value=1e15)
        st.caption(f"…in at least {confidence:.0%} of releases (change it on the left).")
    else:
        target = controls.number("Target: the right answer at least this often (%)",
                                 key="choose_target_selection", default=90.0, min_value=1.0,
                                 max_value=99.99)

beta = round(1 - confidence, 10)
if (query is not None and not mechanisms) or (question is not None and not noises):
    st.info("Pick at least one mechanism to draw its curve.")
    st.stop()
with st.spinner("Sweeping ε and solving for the target…"):
    if query is not None:
        alpha = target / 100 * abs(float(numbers.true_value)) if relative else target
        results, answers, failed = sweep.sweep_mechanisms(
            frame, data_key, query, mechanisms, alpha=alpha, beta=beta, delta=delta,
            seed=state.seed())
        for failure in failed:
            st.error(f"{plain(failure, limit=300)} — check the query's bounds and range on the "
                     "Noisy statistics page.")
        view = views.error_view(query, results, answers, measure=measure, relative=relative,
                                beta=beta, delta=delta, target_value=target, escape=plain)
        download = downloads.error_download(view, query, results, numbers, dataset=loaded.name,
                                            measure=measure, relative=relative, beta=beta,
                                            delta=delta, epsilon=epsilon, target=target)
    else:
        picks = {n: sweep.cached_selection(replace(question, noise=n), target / 100,
                                           state.seed()) for n in noises}
        view = views.selection_view(question, picks, target=target / 100, escape=plain)
        download = downloads.selection_download(view, question, picks, dataset=loaded.name,
                                                epsilon=epsilon, target=target / 100)
if not view.curves:
    st.stop()

presenting_now = presenting.on()   # for a projector: one chart and one sentence per step
with presenting.step("choose_curve", views.look_at_curve(view)):
    presenting.chart(charts.utility_curves(
        view.curves, title=view.title, y_title=view.y_title, measure_label=view.measure_label,
        band_label=view.band_label, current_epsilon=epsilon, target=view.target,
        smallest=view.smallest, log_y=view.log_y, round_values=view.round_values),
        key="choose_curve")
    st.caption(view.caption)
if not presenting_now:
    controls.downloads(*download, key="choose_download", file_stem="privacy-utility-curve",
                       csv_label="Download the curves (CSV)")
    for sentence, use in zip(view.sentences, view.uses, strict=True):
        said, act = st.columns([4, 1], vertical_alignment="center")
        said.success(sentence)
        if act.button(f"Use ε = {use.text}", key=f"choose_use_{use.kind}", help=use.help,
                      disabled=use.problem is not None, icon=":material/arrow_forward:"):
            controls.set_for_another_page(use.settings)
            st.switch_page(use.page)
for problem in view.problems:
    st.warning(plain(problem, limit=400))

st.subheader(f"What an attacker can learn at ε = {safe_rounding.upper(epsilon, 6)}")
carried_rho = (query or question).rho
state.forget_when_changed("choose_rho_for", (epsilon, carried_rho), ("choose_rho",))
rho = None
if controls.toggle("Also show a zCDP guarantee (ρ)", key="choose_show_rho",
                   default=carried_rho is not None,
                   help="On when the query's page uses zCDP: its ρ, read as membership risk. "
                        "Otherwise it starts at ρ = ε²/2, what ε-DP implies."):
    rho = controls.exact_slider("ρ (zCDP)", risk.RISK_RHO_GRID, key="choose_rho", symbol="ρ",
                                default=risk.default_rho(epsilon, carried_rho))
gaussian = any(map(choices.needs_delta, mechanisms))
summary = risk.cached_risk(epsilon, delta if gaussian else None,
                           question is not None or not all(map(choices.needs_delta, mechanisms)),
                           rho)
if not presenting_now:
    st.dataframe(summary.posteriors, hide_index=True, key="choose_posteriors", width="stretch")
    st.caption("An attacker who knows every other row starts with a belief (prior) that Alice "
               "is in the data; after the release it is at most the value shown, except with "
               "the probability in the last column. Beliefs and probabilities are rounded up.")
chart_col, text_col = (st.columns([3, 2], gap="large") if not presenting_now
                      else (st.container(), None))
with chart_col, presenting.step("choose_attacker", f"**Look at:** {summary.sentences[0]}"):
    presenting.chart(charts.tradeoff_chart(
        summary.fpr, summary.curves,
        title=f"Membership tests against a release at ε = {safe_rounding.upper(epsilon, 6)}"),
        key="choose_tradeoff")
    st.caption("Each line is the best any test for 'is Alice in the data?' can do: below the "
               "line is possible, above it is ruled out. The diagonal is a blind guess.")
    if gaussian:
        st.caption(risk.GDP_NOTE)
if text_col is not None:
    with text_col:
        for sentence in summary.sentences:
            st.info(sentence)
