"""Noisy statistics: a count, sum, mean, variance or histogram released with noise, many times
over.

Widgets pick the query and the mechanism(s); ``dashboard.analysis.statistics`` simulates.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from dashboard import (
    audit_panel,
    bounds_panel,
    charts,
    controls,
    person,
    plan_panel,
    presenting,
    state,
    teaching,
)
from dashboard.analysis import plan_entries
from dashboard.analysis import statistics as stats
from dashboard.choices import label
from dashboard.data.left_out import left_out_note
from dashboard.text import plain

NO_COMPARISON = "none"
BOUND_LIMIT = 1e15


def problem_text(exc: Exception, fix: str) -> str:
    return f"{plain(exc, limit=400)} — {fix}"


problem = None   # what keeps the results from being computed: shown in their place


st.title("Noisy statistics")
st.caption("Ask one question of the data, release the answer with noise (scaled to its "
           "[sensitivity](./glossary#sensitivity) and to [ε](./glossary#epsilon)), and see "
           "how far the "
           "noisy answer lands from the truth: once, and over many simulated releases.")
teaching.look_here("statistics")
loaded = state.dataset()
frame, data_key = loaded.relation, state.dataset_key()
upload = data_key.startswith("upload:")   # nothing suggested from its values enters the URL
ask, protect, simulate = st.columns(3, gap="large")

with ask:
    st.subheader("Query")
    offered = stats.available_queries(loaded, person.current_unit(data_key))
    query = controls.select("Query", offered, key="stats_query", default="histogram",
                            format_func=stats.query_label)
    kind = stats.KINDS[query]
    column = lower = upper = categories = None
    if stats.reads_column(query):
        column = controls.select("Column", stats.columns_for(loaded, query), key="stats_column",
                                 default=stats.default_column(loaded, query),
                                 in_url=not upload)
    if stats.adapter_of(query).bounded:
        bounds = stats.default_bounds(loaded, column)
        state.forget_when_changed("stats_bounds_for", (data_key, column),
                                  ("stats_lower", "stats_upper"))
        lower, upper = (
            controls.number(label, key=key, default=default, in_url=not upload,
                            min_value=-BOUND_LIMIT, max_value=BOUND_LIMIT, step=1.0)
            for label, key, default in (
                ("Lower bound (smaller values are raised to it)", "stats_lower", bounds.lower),
                ("Upper bound (larger values are lowered to it)", "stats_upper", bounds.upper)))
        note, warn = bounds.shown_note(lower, upper)
        (st.warning if warn else st.caption)(note)
    elif kind.per_cell:
        categories = stats.declared_categories(loaded, column)
        st.caption(stats.categories_note(categories is not None))
        if (note := left_out_note(loaded, column)) is not None:
            st.warning(note, icon=":material/report:")
    spec = stats.page_spec(loaded, query, column, lower, upper,
                           unit=person.current_unit(data_key), seed=state.seed())
    try:
        integer_query, rows = stats.query_facts(frame, data_key, spec)
    except (ValueError, TypeError) as exc:
        problem = problem_text(exc, "set a lower bound below the upper bound, or pick another "
                                    "column.")
        # Every control stays drawn, offering every mechanism, so no choice is dropped.
        integer_query, rows = True, len(frame)

with protect:
    st.subheader("Privacy")
    choice = controls.privacy_controls(
        "stats", integer_query=integer_query, bounds_declared=not kind.made_of_parts,
        allowed=stats.allowed_mechanisms(query), container=protect)
    compare = controls.select(
        "Compare with", [NO_COMPARISON, *stats.comparable_mechanisms(
            choice, query=query, integer_query=integer_query)],
        key="stats_compare", default=NO_COMPARISON,
        format_func=lambda m: "No comparison" if m == NO_COMPARISON else label(m))
    st.caption(stats.COMPARE_NOTE)
    sum_share = 0.5
    if kind.split_by_share:
        sum_share = controls.log_slider("Share of the budget for the noisy sum",
                                        stats.SUM_SHARE_OPTIONS, key="stats_share",
                                        default=0.5, help="The noisy count gets the rest.")
    answer_range = None
    if stats.uses_answer_range([choice.mechanism, compare]):
        low, high = stats.default_answer_range(spec, rows)
        state.forget_when_changed("stats_range_for", (data_key, query, column, lower, upper),
                           ("stats_answer_lower", "stats_answer_upper"))
        answer_range = tuple(
            controls.number(f"{end} possible answer", key=key, default=default,
                            min_value=-BOUND_LIMIT, max_value=BOUND_LIMIT, step=1.0,
                            in_url=not upload)
            for end, key, default in (("Lowest", "stats_answer_lower", low),
                                      ("Highest", "stats_answer_upper", high)))
        st.caption(stats.answer_range_note())

with simulate:
    st.subheader("Simulation")
    confidence = controls.select("Confidence of the ± error bound", stats.CONFIDENCE_OPTIONS,
                                 key="stats_confidence", default=0.95,
                                 format_func=lambda c: f"{c:.0%}")
    trials = controls.trials_picker(key="stats_trials")
    st.caption(f"Seed {state.seed()} (sidebar): the same seed gives the same releases.")
    release = controls.release_picker(key="stats_release", seed=state.seed())

choices = [choice] + ([replace(choice, mechanism=compare)] if compare != NO_COMPARISON else [])
try:
    with st.spinner(f"Simulating {trials:,} releases…"):
        runs = [] if problem else [
            stats.simulate_releases(frame, data_key, spec, c, answer_range=answer_range,
                                    sum_share=sum_share, trials=trials, seed=state.seed(),
                                    release=release)
            for c in choices]
except (ValueError, TypeError) as exc:
    problem = problem_text(exc, "check the bounds and the answer range (it must contain the "
                                "true answer).")
if problem:
    st.error(problem)   # in place of the results; every control above keeps its value
    st.stop()

what = spec.describe()
unit = stats.answer_unit(loaded, spec)
presenting_now = presenting.on()   # for a projector: one chart and one sentence per step
st.subheader(f"The {plain(what)}")
if not presenting_now:
    for run in runs:
        st.markdown(f"**{run.label}** · sensitivity **{run.sensitivity}** "
                    f"{plain(stats.unit_note(spec.contribution))} · noise scale **{run.scale}**")
        st.caption(run.explanation)

if kind.per_cell:
    # under a person id a histogram counts rows (visits, say), not people
    counted = "people" if person.current_unit(data_key).person_column is None else "rows"
    with presenting.step("stats_answer", stats.look_at_bars(runs[0], confidence)):
        presenting.chart(charts.noisy_bars(runs, confidence=confidence, x_title=column,
                                           title=f"True counts of {column} and noisy release "
                                                 f"{release:,}", counted=counted),
                         key="stats_bars")
        st.caption(stats.bars_note(confidence))
    if not presenting_now:
        st.dataframe(stats.release_table(runs, confidence), hide_index=True)
else:
    for i, run in enumerate(runs):
        truth, *cells = st.columns(4)
        if i == 0:
            truth.metric("True answer", stats.fmt_value(run.true_value))
        for col, (name, value) in zip(cells, stats.release_summary(run).items(), strict=True):
            col.metric(name, value)
        if sentence := stats.interval_sentence(run, confidence):
            st.caption(sentence)
if not presenting_now:
    controls.downloads(stats.release_values(runs, spec), stats.release_parameters(
        frame, data_key, spec, tuple(choices), dataset=loaded.name, answer_range=answer_range,
        sum_share=sum_share, trials=trials, release=release, origins=stats.declaration_origins(
            loaded, spec, answer_range=answer_range, upload=upload)),
        key="stats_download", file_stem="noisy-statistics")

with presenting.step("stats_error", stats.look_at_errors(runs[0], confidence)):
    if not presenting_now:
        for run in runs:
            st.markdown(f"**{stats.accuracy_sentence(run, confidence)}**")
    presenting.chart(charts.error_spread(runs, confidence=confidence,
                                         x_title=f"Error: noisy − true ({unit})",
                                         title=f"Error of the noisy {what} over {trials:,} "
                                               "releases"),
                     key="stats_errors")
    st.caption(stats.error_chart_note(runs, confidence))

if kind.per_cell:
    if presenting.chart(charts.category_errors(runs, x_title=column,
                                               title=f"Typical error per category of {column}"),
                        key="stats_categories", extra=True) is not None:
        st.caption(stats.CATEGORY_ERRORS_NOTE)

if not presenting_now:
    st.markdown("**Metrics side by side**")
    st.dataframe(stats.metrics_table(runs, confidence))
    st.caption(stats.metrics_note(runs))

if not presenting_now:   # for a projector: the results only, none of the technical panels
    plan_panel.add_to_plan(data_key, lambda: plan_entries.statistics_query(
        loaded, person.current_unit(data_key), query=query, column=column, lower=lower, upper=upper,
        categories=categories if categories is not None else runs[0].labels, choice=choice,
        sum_share=sum_share, answer_range=answer_range), key="stats")

    bounds_panel.bounds_section(loaded, data_key, spec, choice, answer_range=answer_range,
                                seed=state.seed(), prefix="stats")
    audit_panel.statistics_audit(frame, data_key, spec, choice, answer_range=answer_range,
                                 sum_share=sum_share, seed=state.seed())
